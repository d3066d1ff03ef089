// `--env-class FILE.mjs` in Node: the module read from its file, its helper modules (relative imports)
// read the same way, all bound to this process's `webgrpo/openenv` (env-class-module.ts).

import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadEnvClassModule, type EnvClassModule } from './env-class.ts';

/** A module file larger than this is not an environment class someone wrote (and is not read). */
const MAX_MODULE_BYTES = 4 * 1024 * 1024;

async function readModuleFile(path: string, what: string): Promise<string> {
  const info = await stat(path).catch(() => null);
  if (!info?.isFile()) throw new Error(`${what}: no such file`);
  if (info.size > MAX_MODULE_BYTES) throw new Error(`${what}: ${info.size} bytes; an environment module must be under ${MAX_MODULE_BYTES} bytes`);
  return readFile(path, 'utf8');
}

export async function loadEnvClassFile(path: string, timeoutMs?: number): Promise<EnvClassModule> {
  if (!/\.(mjs|js)$/.test(path)) throw new Error(`--env-class ${path}: give a JavaScript module (.mjs or .js) whose default export is the environment class`);
  const file = resolve(path);
  const text = await readModuleFile(file, `--env-class ${path}`);
  return loadEnvClassModule(text, {
    source: path,
    url: pathToFileURL(file).href,
    readText: (url) => (url.startsWith('file:') ? readModuleFile(fileURLToPath(url), url) : Promise.reject(new Error(`${path} imports ${url}: only files next to it can be imported`))),
    ...(timeoutMs ? { timeoutMs } : {}),
  });
}
