// `train`/`render --env-class FILE` as the resolved task the launcher binds (resolve-task.ts's shape):
// the module file, its rows (--dataset JSONL, else its own `dataset`, else none: the environment owns
// the data), and the env URL its envUrl() returns (--env-url, else the in-process env-server's).

import { readFile } from 'node:fs/promises';
import { parseEnvClassDataset } from './env-class.ts';
import { envClassResolved } from './env-class-resolved.ts';
import { loadEnvClassFile } from './env-class-file.ts';
import type { ResolvedTask } from './resolve-task.ts';

/** What `train`/`render --env-class FILE [--dataset rows.jsonl] [--env-url URL]` train on: a resolved task. */
export async function envClassFromCli(o: { file: string; dataset?: string | null; envUrl?: string | null }): Promise<ResolvedTask> {
  const mod = await loadEnvClassFile(o.file);
  const rows = o.dataset ? parseEnvClassDataset(await readFile(o.dataset, 'utf8').catch(() => Promise.reject(new Error(`--dataset ${o.dataset}: cannot read it`))), o.dataset) : null;
  return envClassResolved(mod, { rows, envUrl: o.envUrl ?? null });
}
