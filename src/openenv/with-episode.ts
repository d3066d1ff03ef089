// The one-connection-per-episode pattern (specs/openenv-protocol.md §7): connect, reset, play, close.
// A CAPACITY_REACHED refusal can only come before the episode starts, so it is safe to retry. Every
// episode opens through the process's session limiter (session-limit.ts): once a server named its
// session limit, episodes of its URL wait for a free session instead of being refused.

import { connect, type OpenEnvSession } from './client.ts';
import { OpenEnvError } from './errors.ts';
import { refusedLimit, sessionLimiter, type SessionWait } from './session-limit.ts';
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
  /** Hears of this episode's wait for a session (a rollout's reset: session-limit.ts). */
  sessionWait?: SessionWait | null;
}

/**
 * Runs `play(session, first)` on a fresh connection whose env was just reset, then closes it. The first
 * refusal that names the server's session limit queues this and later episodes of the URL under it; other
 * refusals (no limit named, or another client holds sessions) are retried with a "full jitter" delay:
 * uniform in [0, min(max, base·2^k)). Any other failure (including a close mid-episode) is thrown: the
 * episode is lost, never resumed.
 */
export async function withEpisode<T, O = Record<string, unknown>>(
  baseUrl: string,
  play: (session: OpenEnvSession<O>, first: StepResult<O>) => Promise<T>,
  options: EpisodeOptions = {},
): Promise<T> {
  const retries = options.retries ?? 5;
  if (!(Number.isInteger(retries) && retries >= 0)) throw new Error(`withEpisode: retries must be an integer ≥ 0, got ${retries}`);
  const { value, release } = await sessionLimiter.open(baseUrl, (limitKnown) => openReset<O>(baseUrl, options, retries, limitKnown), options.sessionWait ?? null);
  try {
    return await play(value.session, value.first);
  } finally {
    try {
      await value.session.close();
    } finally {
      release();
    }
  }
}

/** A connection whose env was just reset, refusals retried (a first one naming the limit goes to the limiter). */
async function openReset<O>(baseUrl: string, options: EpisodeOptions, retries: number, limitKnown: boolean): Promise<{ session: OpenEnvSession<O>; first: StepResult<O> }> {
  const backoffMs = options.backoffMs ?? 200;
  const maxBackoffMs = options.maxBackoffMs ?? 5000;
  const random = options.random ?? Math.random;
  for (let attempt = 0; ; attempt++) {
    const session = await connect<O>(baseUrl, { timeoutMs: options.timeoutMs });
    try {
      return { session, first: await session.reset(options.reset ?? {}) };
    } catch (err) {
      await session.close();
      const capacity = err instanceof OpenEnvError && err.code === 'CAPACITY_REACHED';
      if (capacity && attempt < retries && (limitKnown || refusedLimit(err) === null)) {
        const ceiling = Math.min(maxBackoffMs, backoffMs * 2 ** attempt);
        await new Promise((resolve) => setTimeout(resolve, random() * ceiling));
        continue;
      }
      throw err;
    }
  }
}
