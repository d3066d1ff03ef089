// Episodes that wait for a session of a server that serves few at once. OpenEnv's create_app serves
// one session unless the env declares SUPPORTS_CONCURRENT_SESSIONS (grid_world does not; maze caps at
// 1): eight rollouts opening eight sockets got seven CAPACITY_REACHED refusals, and jittered retries
// gave up while the one open episode played on. The refusal names the server's limit (max_sessions),
// so from then on episodes of that URL queue for a free session instead of failing.

import { OpenEnvError } from '../../openenv/index.ts';
import type { EpisodeSession, OpenEpisode } from './envs/episode-session.ts';

interface Gate {
  /** The server's session limit once a refusal named it; null: not known (open freely). */
  limit: number | null;
  active: number;
  waiters: Array<() => void>;
}

/** The max_sessions a CAPACITY_REACHED refusal names (its data, else its message `1/1 sessions`). */
export function refusedLimit(err: unknown): number | null {
  if (!(err instanceof OpenEnvError) || err.code !== 'CAPACITY_REACHED') return null;
  const max = err.data?.max_sessions;
  if (typeof max === 'number' && Number.isInteger(max) && max > 0) return max;
  const m = /(\d+)\s*\/\s*(\d+)\s+sessions/.exec(err.message);
  return m && Number(m[2]) > 0 ? Number(m[2]) : null;
}

/** `open`, queued per base URL under the session limit its server reported. */
export function sessionLimitedEpisodes(open: OpenEpisode): OpenEpisode {
  const gates = new Map<string, Gate>();
  const release = (gate: Gate) => {
    gate.active--;
    gate.waiters.shift()?.();
  };
  const acquire = async (gate: Gate) => {
    while (gate.limit !== null && gate.active >= gate.limit) await new Promise<void>((resolve) => gate.waiters.push(resolve));
    gate.active++;
  };
  return async (baseUrl, reset) => {
    let gate = gates.get(baseUrl);
    if (!gate) gates.set(baseUrl, (gate = { limit: null, active: 0, waiters: [] }));
    for (;;) {
      await acquire(gate);
      const queued = gate.limit !== null;
      let session: EpisodeSession;
      try {
        session = await open(baseUrl, reset);
      } catch (err) {
        const limit = refusedLimit(err);
        release(gate);
        // Refused although it queued under the known limit: another client holds sessions too; give up as before.
        if (limit === null || queued) throw err;
        gate.limit = Math.min(limit, gate.limit ?? limit);
        continue;
      }
      let closed = false;
      return {
        ...session,
        close: async () => {
          if (closed) return;
          closed = true;
          try {
            await session.close();
          } finally {
            release(gate);
          }
        },
      };
    }
  };
}
