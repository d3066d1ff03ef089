// Which trainer task (TRL example: tools, prompts, rewards) an OpenEnv server serves, told by the
// environment class its GET /metadata names — so a remote server (a Hugging Face Space, a proxied
// upstream under any name) trains with the right tool wrappers. OpenSpiel and TextArena servers are one
// class for many games (specs/environment-classes.md §4), so for them the game they play decides.

import { withEpisode } from '../../openenv/index.ts';

import { connectionRefusedMessage, isConnectionRefused } from '../../openenv/errors.ts';
import { replyText } from '../../openenv/http-reply.ts';

export type EnvTaskName = 'echo' | 'catch' | 'wordle' | 'browsergym' | 'sudoku';

export const TASK_BY_METADATA: Readonly<Record<string, EnvTaskName>> = {
  EchoEnvironment: 'echo',
  OpenSpielEnvironment: 'catch',
  TextArenaEnvironment: 'wordle',
  BrowserGymEnvironment: 'browsergym',
};

/**
 * The classes that serve many games: where the game is named (the env's state key, as OpenEnv's
 * `OpenSpielEnvironment` and `TextArenaEnvironment` report it) and the games a task plays.
 */
export const GAME_TASKS: Readonly<Record<string, { key: 'game_name' | 'env_id'; games: Readonly<Record<string, EnvTaskName>> }>> = {
  OpenSpielEnvironment: { key: 'game_name', games: { catch: 'catch' } },
  TextArenaEnvironment: { key: 'env_id', games: { 'Wordle-v0': 'wordle', 'Sudoku-v0': 'sudoku', 'Sudoku-v0-easy': 'sudoku', 'Sudoku-v0-medium': 'sudoku', 'Sudoku-v0-hard': 'sudoku' } },
};

/**
 * Reads the game a server plays under `key`: from /metadata when it names it, else from the state of a
 * fresh episode over /ws (a reset, then `state`; OpenEnv's HTTP /state is gone in production mode).
 */
export type ReadGame = (baseUrl: string, key: string, metadata: Record<string, unknown>) => Promise<unknown>;

export const readGame: ReadGame = async (baseUrl, key, metadata) => {
  if (typeof metadata[key] === 'string') return metadata[key];
  return withEpisode(baseUrl, async (session, first) => {
    const state = await session.state();
    const observation = first.observation as Record<string, unknown> | null;
    return state[key] ?? observation?.[key];
  }, { timeoutMs: 10_000, reset: {} });
};

/** Thrown when the server plays a game none of the tasks plays (the message names it and the known ones). */
export class UnknownGameError extends Error {
  constructor(
    readonly envClass: string,
    readonly game: string,
    message: string,
  ) {
    super(message);
    this.name = 'UnknownGameError';
  }
}

/** Thrown when the server's environment class has no task (the generic paths take it: MCP or its action schema). */
export class UnknownEnvClassError extends Error {
  constructor(readonly envClass: string, message: string) {
    super(message);
    this.name = 'UnknownEnvClassError';
  }
}

/** The task of the env at `baseUrl` (http(s)), from its /metadata (and its game); a clear error for unknown ones. */
export async function taskFromMetadata(baseUrl: string, fetchImpl: typeof fetch = fetch, game: ReadGame = readGame): Promise<EnvTaskName> {
  const base = baseUrl.replace(/\/+$/, '');
  const url = `${base}/metadata`;
  let meta: Record<string, unknown>;
  try {
    const res = await fetchImpl(url);
    if (!res.ok) throw new Error(`HTTP ${res.status}${await serverSaid(res)}`);
    meta = JSON.parse(await replyText(res, `GET ${url}`)) as Record<string, unknown>;
  } catch (err) {
    if (isConnectionRefused(err)) throw new Error(connectionRefusedMessage(baseUrl));
    throw new Error(`Cannot read ${url} to tell which environment this is: ${(err as Error).message}`);
  }
  const envClass = String(meta?.name);
  const task = TASK_BY_METADATA[envClass];
  if (!task) {
    throw new UnknownEnvClassError(envClass, `${baseUrl} reports ${envClass}; the trainer has tool wrappers for ${Object.keys(TASK_BY_METADATA).join(', ')} only`);
  }
  const many = GAME_TASKS[envClass];
  if (!many) return task;
  let played: unknown;
  try {
    played = await game(base, many.key, meta);
  } catch (err) {
    throw new Error(`${baseUrl} serves ${envClass}, which plays many games, and its state did not say which (${many.key}): ${(err as Error).message}`);
  }
  const known = Object.entries(many.games).map(([g, t]) => `'${g}' (the ${t} task)`).join(', ');
  if (typeof played !== 'string' || played === '') {
    throw new UnknownGameError(envClass, String(played), `${baseUrl} serves ${envClass}, which plays many games, but its state names none (no '${many.key}'); the trainer's ${envClass} tasks play ${known} only`);
  }
  const gameTask = many.games[played];
  if (!gameTask) {
    throw new UnknownGameError(envClass, played, `${baseUrl} serves ${envClass} playing '${played}'; the trainer's ${envClass} tasks play ${known} only — '${played}' has no task of its own`);
  }
  return gameTask;
}

/** A failed response's body, briefly (`: {"detail":"Not Found"}`), so the error quotes the server. */
async function serverSaid(res: Response): Promise<string> {
  const text = (await res.text().catch(() => '')).trim();
  return text ? `: ${text.slice(0, 200)}` : '';
}
