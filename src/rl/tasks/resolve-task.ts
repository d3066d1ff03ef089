// The one task resolver: what `--env` (the CLI) or the page's env choice (the worker) names, turned
// into a task — TRL's examples, the browsergym web task over a task mix, compact catch for tiny models,
// or the generic MCP task on any MCP env — and then bound to env URLs and a tokenizer into what a run
// trains on (dataset, seeded env factory, reward sources, template, tool schemas, scripted solver).
// `train`, `render`, the worker's runs and its evaluation all resolve here.

import type { TextTokenizer } from '../../model/tokenizer.ts';
import { envProtocol } from '../../openenv/index.ts';
import type { GRPOConfig } from '../config.ts';
import { rewardSources, type RewardFunction } from '../grpo/rewards.ts';
import { tokenizeTranscript, type SftExample, type Transcript } from '../grpo/sft.ts';
import { envToolSchemas, type DatasetRow, type EnvFactory } from '../rollout/env.ts';
import type { ToolSchema } from '../rollout/schema.ts';
import { rolloutChatTemplate } from '../rollout/templates/select.ts';
import { browsergymTask, browsergymVlmTask, parseBrowserGymMix } from './browsergym-task.ts';
import { COMPACT_CATCH_TASK } from './compact-catch.ts';
import { actionSchemaTask } from './action-schema-task.ts';
import { builtinClassTask, CLASS_TASKS } from './env-class-builtin.ts';
import { taskFromMetadata, UnknownEnvClassError, UnknownGameError } from './env-task.ts';
import { mcpTask } from './mcp-task.ts';
import { isPresetEnv, type ModelTier, type PresetEnv } from './presets.ts';
import { seededEpisodes, SOLVERS, type SeededEpisodes } from './solvers.ts';
import type { ChatTemplateTask, EnvUrlName } from './task.ts';
import { seedSpace, type Split } from '../eval/seed-space.ts';

/** Tasks by name still written as tasks: the compact catch variant for tiny models. */
const TASKS: Readonly<Record<string, ChatTemplateTask>> = { 'catch-compact': COMPACT_CATCH_TASK };

/** Every built-in task name, TRL's examples first: the example classes' (env-class-builtin.ts) and the tasks'. */
export const TASK_NAMES: readonly string[] = ['echo', 'catch', 'wordle', 'multi', 'browsergym', 'browsergym-vlm', 'catch-compact', 'sudoku'].filter((n) => n in CLASS_TASKS || n in TASKS);

const BUILTIN_ENVS: readonly EnvUrlName[] = ['echo', 'catch', 'wordle', 'browsergym', 'sudoku'];

/** The built-in env each single-env task plays (multi needs several; mcp has its own URL). */
const TASK_ENV: Readonly<Record<string, EnvUrlName>> = { echo: 'echo', catch: 'catch', 'catch-compact': 'catch', wordle: 'wordle', sudoku: 'sudoku', browsergym: 'browsergym', 'browsergym-vlm': 'browsergym' };

export interface TaskChoice {
  /**
   * A task name (echo, catch, catch-compact, wordle, multi, browsergym, browsergym:TASK[,TASK…],
   * browsergym:mix, browsergym-vlm (also :TASK… and :mix), mcp) or an OpenEnv base URL (its last path segment or its /metadata tells the task).
   */
  env: string;
  /** The env's base URL when `env` is a name (the page's choice); absent: the in-process env-server serves it. */
  url?: string;
  /** The model's size: tiny models play catch as compact catch (one-word observations). */
  tier?: ModelTier;
  /** The prompts of the generic MCP task (an MCP env none of the tasks knows). */
  prompts?: () => Promise<DatasetRow[]>;
  /** Task names of a MiniWoB++ folder the in-process browsergym serves (browsergym:TASK is checked against them). */
  miniwobNames?: readonly string[];
}

export interface ResolvedTask {
  /** The task's name: one of TASK_NAMES, 'mcp' or 'action-schema'. */
  name: string;
  task: ChatTemplateTask;
  /** The env's base URL, or null when the in-process env-server's built-in env serves it. */
  url: string | null;
  /** The built-in env the task plays (null: multi, or an MCP env). */
  env: EnvUrlName | null;
  /** The task's preset in presets.ts, or null (its own example settings apply). */
  preset: PresetEnv | null;
  /** The scripted solver (solvers.ts SOLVERS) that plays the task for SFT transcripts, or null. */
  solver: string | null;
  /** One line for the user when the env took a path they may not expect (a game no task plays went generic). */
  note?: string;
}

function unknownEnv(env: string): Error {
  return new Error(`unknown env '${env}': no tool environment of that name (choose ${TASK_NAMES.join(', ')}, browsergym:TASK, mcp, or give an OpenEnv base URL)`);
}

function resolved(name: string, task: ChatTemplateTask, url: string | null): ResolvedTask {
  const env = TASK_ENV[name] ?? null;
  const preset = isPresetEnv(name) ? name : env && isPresetEnv(env) ? env : null;
  return { name, task, url, env, preset, solver: SOLVERS[name] ? name : null };
}

/** The task `choice` names (an MCP env's tool list, a URL's /metadata are read here, once). */
export async function resolveTask(choice: TaskChoice): Promise<ResolvedTask> {
  const prompts = choice.prompts ?? (async () => []);
  if (/^(https?|wss?):\/\//.test(choice.env)) {
    const url = choice.env.replace(/\/+$/, '');
    const last = new URL(url).pathname.split('/').pop() ?? '';
    const httpUrl = url.replace(/^ws/, 'http');
    let name: string | Error = (BUILTIN_ENVS as readonly string[]).includes(last) ? last : await taskFromMetadata(httpUrl).catch((err: Error) => err);
    if (name instanceof Error) {
      // None of the tasks: an MCP env still trains, with its own tools and rewards; an env of the action
      // protocol whose class (or game) no task knows, with one tool from its /schema (action-schema-task.ts).
      const generic = name instanceof UnknownEnvClassError || name instanceof UnknownGameError;
      const note = name instanceof UnknownGameError ? `${name.message}: it trains on the generic path instead (its tools from the env itself)` : undefined;
      if ((await envProtocol(httpUrl).catch(() => 'action')) === 'action') {
        if (!generic) throw name;
        return { ...resolved('action-schema', await actionSchemaTask(httpUrl, await prompts()), url), ...(note ? { note } : {}) };
      }
      return { ...resolved('mcp', await mcpTask(httpUrl, await prompts()), url), ...(note ? { note } : {}) };
    }
    if (name === 'catch' && choice.tier === 'tiny') name = 'catch-compact';
    return resolved(name, (await builtinClassTask(name)) ?? TASKS[name]!, url);
  }
  const url = choice.url ?? null;
  if (choice.env === 'mcp') {
    if (!url) throw new Error("the mcp task needs the MCP env's base URL");
    return resolved('mcp', await mcpTask(url, await prompts()), url);
  }
  // browsergym:TASK[,TASK…] or browsergym:mix: the web task over a chosen task mix.
  if (choice.env.startsWith('browsergym:')) return resolved('browsergym', await browsergymTask(parseBrowserGymMix(choice.env.slice('browsergym:'.length), choice.miniwobNames)), url);
  if (choice.env === 'browsergym') return resolved('browsergym', await browsergymTask(parseBrowserGymMix('click-test', choice.miniwobNames)), url);
  if (choice.env.startsWith('browsergym-vlm:')) return resolved('browsergym-vlm', await browsergymVlmTask(parseBrowserGymMix(choice.env.slice('browsergym-vlm:'.length), choice.miniwobNames)), url);
  if (choice.env === 'browsergym-vlm') return resolved('browsergym-vlm', await browsergymVlmTask(parseBrowserGymMix('click-test', choice.miniwobNames)), url);
  const name = choice.env === 'catch' && choice.tier === 'tiny' ? 'catch-compact' : choice.env;
  const task = (await builtinClassTask(name)) ?? TASKS[name];
  if (!task) throw unknownEnv(choice.env);
  return resolved(name, task, url);
}

/** Built-in env URLs of an env-server at `base`. */
export function builtinEnvUrls(base: string): Record<EnvUrlName, string> {
  return { echo: `${base}/envs/echo`, catch: `${base}/envs/catch`, wordle: `${base}/envs/wordle`, browsergym: `${base}/envs/browsergym`, sudoku: `${base}/envs/sudoku` };
}

/** What a run trains on: the resolved task over its env URLs, rendered with one template. */
export interface RunTask {
  name: string;
  dataset: DatasetRow[];
  /** Seeded env episodes: a run's games are a function of (seed, generation). */
  episodes: SeededEpisodes;
  envFactory: EnvFactory;
  /** Every reward source (the task's functions, plus the env's own getReward if it has one). */
  rewardFuncs: RewardFunction[];
  /** The template rollouts and SFT examples render with. */
  template: string;
  /** The env's tool schemas (SFT transcripts render with them). */
  tools: ToolSchema[];
  /** The scripted solver and the env URL it plays against, when the task has one. */
  solver: { name: string; url: string } | null;
}

export interface BindOptions {
  /** The in-process env-server's built-in env URLs, for a task whose `url` is null. */
  builtinUrls?: Partial<Record<EnvUrlName, string>>;
  tokenizer: TextTokenizer;
  /** Rows of the example dataset (default: the example's own size). */
  datasetSize?: number;
  /**
   * The model reads images: its engine embeds a vision tower's features at the image placeholders.
   * Default false — a task whose env returns screenshots (`needsVision`) is then refused.
   */
  readsImages?: boolean;
  /** Why the checkpoint's vision tower cannot be used (config.visionError), named when a vision task is refused. */
  visionError?: string;
  /** Which split's env seeds the episodes reset with (eval/seed-space.ts; default train). */
  split?: Split;
}

/** The resolved task bound to its env URL(s) and the model's tokenizer. */
export function bindTask(r: ResolvedTask, o: BindOptions): RunTask {
  if (r.task.needsVision && !o.readsImages) {
    const why = o.visionError ? `its vision tower cannot be used (${o.visionError}), so it` : 'this model';
    throw new Error(`the ${r.name} task needs a vision model: every tool result is a screenshot of the page, and ${why} reads text only (train the text-only browsergym task instead, or load a vision-language checkpoint whose vision tower webgrpo runs)`);
  }
  const urls: Partial<Record<EnvUrlName, string>> = r.url === null ? { ...o.builtinUrls } : r.env ? { [r.env]: r.url } : {};
  const episodes = seededEpisodes(0, seedSpace(r.env, o.split ?? 'train'));
  const envFactory = r.task.envFactory(urls, episodes);
  const probe = envFactory();
  const solverUrl = r.env ? urls[r.env] : undefined;
  return {
    name: r.name,
    dataset: r.task.dataset(o.datasetSize),
    episodes,
    envFactory,
    rewardFuncs: rewardSources(r.task.rewardFuncs, probe),
    template: r.task.template ?? rolloutChatTemplate(o.tokenizer, { hasTools: probe.tools.length > 0 }),
    tools: envToolSchemas(probe),
    solver: r.solver && solverUrl ? { name: r.solver, url: solverUrl } : null,
  };
}

/** Episodes the scripted solver plays for a warm-up by default: enough variety for a few batches, cheap to play. */
export function solverEpisodes(config: Pick<GRPOConfig, 'sft_batch_size'>): number {
  return Math.max(16, config.sft_batch_size * 2);
}

/** Transcripts of the task's scripted solver (the warm-up data when none are uploaded). */
export async function solverTranscripts(task: RunTask, episodes: number, seed: number): Promise<Transcript[]> {
  if (!task.solver) {
    throw new Error(`sft_steps > 0 but there is no scripted solver for the '${task.name}' task (only ${Object.keys(SOLVERS).join(', ')}): give SFT transcripts as JSONL or set sft_steps to 0`);
  }
  // The run's own rows: a solver whose tasks differ by row (browsergym's task_name) plays the run's tasks.
  return SOLVERS[task.solver.name]!({ baseUrl: task.solver.url, episodes, seed, rows: task.dataset, seedOf: seedSpace(task.solver.name, 'train') });
}

/** Tokenized SFT examples, rendered exactly as the rollouts render (so the tokens line up). */
export function sftExamples(task: RunTask, transcripts: readonly Transcript[], tokenizer: TextTokenizer, config: Pick<GRPOConfig, 'chat_template_kwargs'>): SftExample[] {
  return transcripts.map((t) => tokenizeTranscript(t, { tokenizer, template: task.template, tools: task.tools, chatTemplateKwargs: config.chat_template_kwargs }));
}
