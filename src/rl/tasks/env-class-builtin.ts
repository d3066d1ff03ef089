// The built-in tasks that are example classes: `--env echo` trains examples/echo.mjs through the same
// environment-class path as `--env-class examples/echo.mjs` (one path, not two). Node reads the example
// file; a browser build has no file to read yet (the app's module loading comes with its editor), so
// there the task table's own task stays (null here).

import type { ChatTemplateTask } from './task.ts';
import { envClassTask } from './env-class.ts';

/** Built-in task name → its example class file under examples/. */
const CLASS_TASKS: Readonly<Record<string, string>> = { echo: 'echo.mjs' };

const isNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';

/** The example class task for a built-in task name, or null (no class for it, or no file system). */
export async function builtinClassTask(name: string): Promise<ChatTemplateTask | null> {
  const file = CLASS_TASKS[name];
  if (!file || !isNode) return null;
  // Computed specifiers keep the Node-only loader (node:fs) out of browser bundles.
  const loader = new URL('./env-class-file.ts', import.meta.url).href;
  const { loadEnvClassFile } = (await import(/* @vite-ignore */ loader)) as typeof import('./env-class-file.ts');
  const { fileURLToPath } = (await import(/* @vite-ignore */ 'node:url')) as typeof import('node:url');
  const mod = await loadEnvClassFile(fileURLToPath(new URL(`../../../examples/${file}`, import.meta.url)));
  return { ...envClassTask(mod), name: name as ChatTemplateTask['name'] };
}
