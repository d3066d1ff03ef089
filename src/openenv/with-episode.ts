// The one-connection-per-episode pattern (specs/openenv-protocol.md §7): connect, reset, play, close.
// A CAPACITY_REACHED refusal can only come before the episode starts, so it is safe to retry.

import { connect, type OpenEnvSession } from './client.ts';
import { OpenEnvError } from './errors.ts';
import type { StepResult } from './types.ts';

export interface EpisodeOptions {
  /** `data` of the reset frame (e.g. `{ seed: 7 }`). */
  reset?: Record<string, unknown>;
  /** Extra attempts after a capacity refusal (default 5). */
  retries?: number;
  /** First backoff ceiling in ms, doubled per attempt (default 200). */
  backoffMs?: number;
  /** Largest backoff ceiling in ms (default 5000). */
  maxBackoffMs?: number;
  /** Per-reply timeout, passed to connect(). */
  timeoutMs?: number;
  /** Uniform [0, 1) source for the jitter; tests pass a fixed one. */
  random?: () => number;
}

/**
 * Runs `play(session, first)` on a fresh connection whose env was just reset, then closes it.
 * Retries only CAPACITY_REACHED, sleeping a "full jitter" delay: uniform in [0, min(max, base·2^k)).
 * Any other failure (including a close mid-episode) is thrown: the episode is lost, never resumed.
 */
export async function withEpisode<T, O = Record<string, unknown>>(
  baseUrl: string,
  play: (session: OpenEnvSession<O>, first: StepResult<O>) => Promise<T>,
  options: EpisodeOptions = {},
): Promise<T> {
  const retries = options.retries ?? 5;
  const backoffMs = options.backoffMs ?? 200;
  const maxBackoffMs = options.maxBackoffMs ?? 5000;
  const random = options.random ?? Math.random;
  if (!(Number.isInteger(retries) && retries >= 0)) throw new Error(`withEpisode: retries must be an integer ≥ 0, got ${retries}`);
  for (let attempt = 0; ; attempt++) {
    const session = await connect<O>(baseUrl, { timeoutMs: options.timeoutMs });
    try {
      let first: StepResult<O>;
      try {
        first = await session.reset(options.reset ?? {});
      } catch (err) {
        if (err instanceof OpenEnvError && err.code === 'CAPACITY_REACHED' && attempt < retries) {
          const ceiling = Math.min(maxBackoffMs, backoffMs * 2 ** attempt);
          await new Promise((resolve) => setTimeout(resolve, random() * ceiling));
          continue;
        }
        throw err;
      }
      return await play(session, first);
    } finally {
      await session.close();
    }
  }
}
