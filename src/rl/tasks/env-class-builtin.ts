// The built-in tasks that are example classes: `--env catch` (or the app's catch choice) trains
// examples/catch.mjs through the same environment-class path as `--env-class examples/catch.mjs` (one
// path, not two). The module text is read from examples/ in Node (the CLI runs from the source tree) and
// comes with the build in the browser (Vite's import.meta.glob, `?raw`: each example its own small chunk,
// fetched when a run picks it); either way it is imported as text (env-class-module.ts), so
// `webgrpo/openenv` binds to this trainer's client in both.

import type { ChatTemplateTask } from './task.ts';
import { envClassTask, loadEnvClassModule } from './env-class.ts';

/** Built-in task name → its example class file under examples/. */
export const CLASS_TASKS: Readonly<Record<string, string>> = { echo: 'echo.mjs', catch: 'catch.mjs', wordle: 'wordle.mjs', multi: 'multi_env.mjs', sudoku: 'sudoku.mjs', browsergym: 'browsergym_llm.mjs', 'browsergym-vlm': 'browsergym.mjs' };

/**
 * What a built-in task adds to its class: browsergym-vlm's tool results are screenshots, for vision
 * models only; multi's dataset size counts each game's rows (TRL's multi_env.py --dataset-size).
 */
const TASK_EXTRAS: Readonly<Record<string, (task: ChatTemplateTask) => Partial<ChatTemplateTask>>> = {
  'browsergym-vlm': () => ({ needsVision: true }),
  multi: (task) => {
    const rows = task.dataset();
    const game = (env: string) => rows.find((r) => r.env === env)!;
    return { dataset: (size = 500) => ['wordle', 'catch'].flatMap((env) => Array.from({ length: size }, () => structuredClone(game(env)))) };
  },
};

const isNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';

/** Where the examples' relative imports resolve (a name, not a place: exampleText reads by file name). */
const EXAMPLES_URL = 'file:///webgrpo/examples/';

/** The examples folder beside src/, as a path relative to this module (kept out of Vite's asset scan). */
const EXAMPLES_DIR = '../../../examples/';

/** The text of examples/`file`. */
async function exampleText(file: string): Promise<string> {
  if (isNode) {
    // Computed specifiers keep node:fs out of browser bundles.
    const { readFile } = (await import(/* @vite-ignore */ 'node:fs/promises')) as typeof import('node:fs/promises');
    return readFile(new URL(EXAMPLES_DIR + file, import.meta.url), 'utf8');
  }
  const texts = import.meta.glob<string>('../../../examples/*.mjs', { query: '?raw', import: 'default' });
  const load = texts[EXAMPLES_DIR + file];
  if (!load) throw new Error(`examples/${file} is not in this build`);
  return load();
}

/** The example class task for a built-in task name, or null (no class for it). */
export async function builtinClassTask(name: string): Promise<ChatTemplateTask | null> {
  const file = CLASS_TASKS[name];
  if (!file) return null;
  const mod = await loadEnvClassModule(await exampleText(file), {
    source: `examples/${file}`,
    url: EXAMPLES_URL + file,
    readText: (url) => (url.startsWith(EXAMPLES_URL) ? exampleText(url.slice(EXAMPLES_URL.length)) : Promise.reject(new Error(`examples/${file} imports ${url}: an example imports only other examples`))),
  });
  const task = envClassTask(mod);
  return { ...task, ...TASK_EXTRAS[name]?.(task), name: name as ChatTemplateTask['name'] };
}
