// What the setup page shows of the user's environment class before a run starts: the module loaded and
// checked exactly as the trainer loads it (env-class.ts), and the tools as the model will see them (the
// schemas the chat template renders, in the order it renders them), its reward sources and its data.
// Runs in its own worker (env-class-preview.worker.ts): the module is the user's code, and a module
// that never finishes loading is ended with its worker, never the page or the trainer.

import { envToolSchemas, type ToolEnv } from '../src/rl/rollout/env.ts';
import { pyJsonDumps } from '../src/rl/rollout/schema.ts';
import { classTools, loadEnvClassModule, MAX_CLASS_TEXT } from '../src/rl/tasks/env-class.ts';
import { envClassResolved } from '../src/rl/tasks/env-class-resolved.ts';
import type { EnvClassPreview, EnvClassText, PreviewEnvironment } from './api.ts';

/** Longest a module may take to load in a preview (its top-level awaits included), ms. */
export const PREVIEW_LOAD_MS = 10_000;

/** `value` as JSON data (what crosses to the page and is stored with the run), or an error naming `what`. */
function asJson<T>(value: T, what: string): T {
  try {
    return JSON.parse(JSON.stringify(value)) as T;
  } catch (err) {
    throw new Error(`${what} must be JSON data (${(err as Error).message})`);
  }
}

/** The environment class in `module` as the setup page previews it; every problem is an error naming it. */
export async function previewEnvClass(module: EnvClassText, timeoutMs = PREVIEW_LOAD_MS): Promise<EnvClassPreview> {
  try {
    if (module.text.length > MAX_CLASS_TEXT) throw new Error(`${module.source} is ${module.text.length} characters long; an environment module in the app must be at most ${MAX_CLASS_TEXT} (put the data in a dataset, or train it with the CLI's --env-class)`);
    const mod = await loadEnvClassModule(module.text, { source: module.source, timeoutMs });
    // The trainer's own checks (every tool documented, a reward source, rows for the dict form).
    const resolved = envClassResolved(mod);
    const environments = [...mod.classes].map(([name, Cls]): PreviewEnvironment => {
      const probe: ToolEnv = { reset: () => null, tools: classTools(Cls, name, mod).map((t) => ({ declaration: t.declaration, ...(t.schema ? { schema: t.schema } : {}), call: () => null })) };
      const tools = envToolSchemas(probe);
      return { name, className: Cls.name || '(anonymous)', tools, toolJson: tools.map(pyJsonDumps) };
    });
    const rows = resolved.task.dataset();
    return {
      ok: true,
      name: resolved.name,
      environments,
      rewards: resolved.task.rewardFuncs.map((f) => f.name),
      dataset: rows.length > 0 ? { rows: rows.length, firstPrompt: asJson(rows[0]!.prompt, `${module.source}: dataset[0].prompt`) } : null,
      config: asJson(mod.config, `${module.source}: 'config'`),
    };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}
