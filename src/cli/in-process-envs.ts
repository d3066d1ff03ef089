// The env-server `train` and `render` start in-process for a task named without a URL: the built-in
// envs, with browsergym over the built-in pages or a real MiniWoB++ folder (--miniwob / $MINIWOB_URL).

import type { MiniwobSource } from '../../env-server/envs/browsergym/miniwob-source.ts';
import type { AxtreeForm } from '../../env-server/envs/browsergym/axtree.ts';
import type { AnyEnvInstance, EnvDefinition } from '../../env-server/envs/types.ts';

/**
 * The envs of the in-process env-server. Its browsergym prints the compact `classic` tree over the
 * built-in tasks (shorter prompts for the small models trained here; the demo and the scripted solver
 * read it) and BrowserGym's own trees over a real MiniWoB++ folder, so a model trained there sees what
 * the real server will show it; `axtree` overrides either.
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
