// Which trainer task (TRL example: tools, prompts, rewards) an OpenEnv server serves, told by the
// environment class its GET /metadata names — so a remote server (a Hugging Face Space, a proxied
// upstream under any name) trains with the right tool wrappers.

import { connectionRefusedMessage, isConnectionRefused } from '../../openenv/errors.ts';

export type EnvTaskName = 'echo' | 'catch' | 'wordle' | 'browsergym';

export const TASK_BY_METADATA: Readonly<Record<string, EnvTaskName>> = {
  EchoEnvironment: 'echo',
  OpenSpielEnvironment: 'catch',
  TextArenaEnvironment: 'wordle',
  BrowserGymEnvironment: 'browsergym',
};

/** The task of the env at `baseUrl` (http(s)), from its /metadata; a clear error for unknown classes. */
export async function taskFromMetadata(baseUrl: string, fetchImpl: typeof fetch = fetch): Promise<EnvTaskName> {
  const url = `${baseUrl.replace(/\/+$/, '')}/metadata`;
  let meta: { name?: unknown };
  try {
    const res = await fetchImpl(url);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    meta = (await res.json()) as { name?: unknown };
  } catch (err) {
    if (isConnectionRefused(err)) throw new Error(connectionRefusedMessage(baseUrl));
    throw new Error(`Cannot read ${url} to tell which environment this is: ${(err as Error).message}`);
  }
  const task = TASK_BY_METADATA[String(meta.name)];
  if (!task) {
    throw new Error(`${baseUrl} reports ${String(meta.name)}; the trainer has tool wrappers for ${Object.keys(TASK_BY_METADATA).join(', ')} only`);
  }
  return task;
}
