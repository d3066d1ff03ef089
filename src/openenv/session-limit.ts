// Waiting for a session of a server that serves few at once. OpenEnv's create_app serves one session
// unless the env declares SUPPORTS_CONCURRENT_SESSIONS (grid_world does not; maze caps at 1): eight
// rollouts opening eight sockets got seven CAPACITY_REACHED refusals, and jittered retries gave up while
// the one open episode played on. The refusal names the server's limit (max_sessions), so from then on
// opens of that URL queue for a free session instead of failing.

import { OpenEnvError } from './errors.ts';

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

/** Opens sessions per base URL, queued under the session limit each server reported. */
export class SessionLimiter {
  private readonly gates = new Map<string, Gate>();

  /**
   * Runs `open` once a session of `baseUrl` is free; returns what it opened and the release to call
   * (once; later calls do nothing) when that session is closed. A refusal that names the server's
   * limit makes later opens of the URL queue; one that comes although this open queued (another client
   * holds sessions too) is thrown, as is every other error.
   */
  async open<T>(baseUrl: string, open: () => Promise<T>): Promise<{ value: T; release: () => void }> {
    let gate = this.gates.get(baseUrl);
    if (!gate) this.gates.set(baseUrl, (gate = { limit: null, active: 0, waiters: [] }));
    for (;;) {
      while (gate.limit !== null && gate.active >= gate.limit) await new Promise<void>((resolve) => gate!.waiters.push(resolve));
      gate.active++;
      const queued = gate.limit !== null;
      let value: T;
      try {
        value = await open();
      } catch (err) {
        const limit = refusedLimit(err);
        release(gate);
        if (limit === null || queued) throw err;
        gate.limit = Math.min(limit, gate.limit ?? limit);
        continue;
      }
      let released = false;
      const g = gate;
      return {
        value,
        release: () => {
          if (released) return;
          released = true;
          release(g);
        },
      };
    }
  }
}

function release(gate: Gate): void {
  gate.active--;
  gate.waiters.shift()?.();
}
