// The tasks `--env` names, shared by `train` and `render` so both accept the same ones: TRL's four
// examples and the browsergym web task (with its task mixes), catch with one-word observations for
// tiny models, or any OpenEnv base URL.

import { COMPACT_CATCH_TASK } from '../rl/tasks/compact-catch.ts';
import { envProtocol } from '../openenv/index.ts';
import { taskFromMetadata } from '../rl/tasks/env-task.ts';
import type { DatasetRow } from '../rl/rollout/env.ts';
import { mcpTask } from '../rl/tasks/mcp-task.ts';
import { EXAMPLES, type EnvUrlName } from '../rl/tasks/prompts.ts';
import { browsergymTask, parseBrowserGymMix } from '../rl/tasks/browsergym-task.ts';
import type { ChatTemplateTask } from '../rl/run-example.ts';
import type { MiniwobSource } from '../../env-server/envs/browsergym/miniwob-source.ts';
import type { AxtreeForm } from '../../env-server/envs/browsergym/axtree.ts';
import type { AnyEnvInstance, EnvDefinition } from '../../env-server/envs/types.ts';

const BUILTIN: Record<string, true> = { echo: true, catch: true, wordle: true, browsergym: true };

/** Tasks by `--env` name: TRL's four examples plus the compact catch variant for tiny models. */
export const TASKS: Record<string, ChatTemplateTask> = { ...EXAMPLES, 'catch-compact': COMPACT_CATCH_TASK };

/** Built-in env URLs of an in-process env-server at `base`. */
export function builtinEnvUrls(base: string): Record<EnvUrlName, string> {
  return { echo: `${base}/envs/echo`, catch: `${base}/envs/catch`, wordle: `${base}/envs/wordle`, browsergym: `${base}/envs/browsergym` };
}

/**
 * `--env`: a task name (in-process env-server) or an OpenEnv base URL; a URL whose last segment is
 * echo/catch/wordle is that task, any other (a Hugging Face Space) is told by its /metadata, and an
 * MCP env that none of the tasks knows trains with its own tools and rewards on `prompts()`.
 */
export async function resolveEnv(
  env: string,
  prompts: () => Promise<DatasetRow[]> = async () => [],
  miniwob?: MiniwobSource,
): Promise<{ name: string; task: ChatTemplateTask; url: string | null }> {
  if (/^(https?|wss?):\/\//.test(env)) {
    const url = env.replace(/\/+$/, '');
    const last = new URL(url).pathname.split('/').pop() ?? '';
    if (BUILTIN[last]) return { name: last, task: TASKS[last]!, url };
    const httpUrl = url.replace(/^ws/, 'http');
    const known = await taskFromMetadata(httpUrl).catch((err: Error) => err);
    if (typeof known === 'string') return { name: known, task: TASKS[known]!, url };
    // None of the tasks: an MCP env still trains, with its own tools and rewards.
    if ((await envProtocol(httpUrl).catch(() => 'action')) === 'action') throw known;
    return { name: 'mcp', task: await mcpTask(httpUrl, await prompts()), url };
  }
  // browsergym:TASK[,TASK…] or browsergym:mix: the web task over a chosen task mix.
  if (env.startsWith('browsergym:')) return { name: 'browsergym', task: browsergymTask(parseBrowserGymMix(env.slice('browsergym:'.length), miniwob?.names)), url: null };
  if (env === 'browsergym' && miniwob) return { name: 'browsergym', task: browsergymTask(parseBrowserGymMix('click-test', miniwob.names)), url: null };
  const task = TASKS[env];
  if (!task) throw new Error(`--env: unknown env '${env}' (choose ${Object.keys(TASKS).join(', ')}, or give a URL)`);
  return { name: env, task, url: null };
}

/**
 * The envs of the in-process env-server that `train` and `render` start. Its browsergym prints the
 * compact `classic` tree over the built-in tasks (shorter prompts for the small models trained here;
 * the demo and the scripted solver read it) and BrowserGym's own trees over a real MiniWoB++ folder,
 * so a model trained there sees what the real server will show it; `axtree` overrides either.
 */
export async function inProcessEnvs(opts: { miniwob?: MiniwobSource; axtree?: AxtreeForm } = {}): Promise<Record<string, EnvDefinition<AnyEnvInstance>>> {
  const [{ BUILTIN_ENVS }, { createBrowserGymEnv }] = await Promise.all([import('../../env-server/envs/index.ts'), import('../../env-server/envs/browsergym/index.ts')]);
  const axtree = opts.axtree ?? (opts.miniwob ? 'browsergym' : 'classic');
  return { ...BUILTIN_ENVS, browsergym: createBrowserGymEnv({ miniwob: opts.miniwob, axtree }) };
}

/** `--miniwob DIR|URL`, else $MINIWOB_URL (BrowserGym's variable), loaded; undefined when neither is set. */
export async function miniwobOption(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<MiniwobSource | undefined> {
  const spec = flag ?? (env.MINIWOB_URL || undefined);
  if (spec === undefined) return undefined;
  const { miniwobSource } = await import('../../env-server/envs/browsergym/miniwob-source.ts');
  return miniwobSource(spec);
}
