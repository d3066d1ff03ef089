// Waiting for a session of a server that serves few at once. OpenEnv's create_app serves one session
// unless the env declares SUPPORTS_CONCURRENT_SESSIONS (grid_world does not; maze caps at 1): eight
// rollouts opening eight sockets got seven CAPACITY_REACHED refusals, and jittered retries gave up while
// the one open episode played on. The refusal names the server's limit (max_sessions), so from then on
// opens of that URL queue for a free session instead of failing. One limiter serves the whole process
// (withEpisode opens every /ws episode through it), so every client of a URL shares its one queue.
//
// A rollout must not count a reset's time in that queue against its timeouts (the server is not slow;
// another episode holds its session) and must learn the limit to admit no more episodes than it serves.
// It hands each reset a SessionWait (withSessionWait): the client that opens the session takes it along
// (currentSessionWait, read when its reset starts), and the limiter reports on it.

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
  // OpenEnv's is short ("Server at capacity: 1/1 sessions active"); a server's message is read only so far,
  // since this pattern backtracks quadratically over a long run of digits (1 MB of them stalled the loop).
  const m = /(\d+)\s*\/\s*(\d+)\s+sessions/.exec(err.message.slice(0, 256));
  return m && Number(m[2]) > 0 ? Number(m[2]) : null;
}

/** What became of one reset's sessions: whether it waits in a queue now, how many it holds, the server's limit. */
export class SessionWait {
  /** Waiting for a free session of a server whose sessions are all held by this process. */
  queued = false;
  /** Sessions opened under this wait and not yet closed. */
  holding = 0;
  /** The session limit of the server it opened (or waits for), once known. */
  limit: number | null = null;
  private readonly listeners = new Set<() => void>();

  /** Calls `listener` at every change; returns its removal. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The limiter's report. */
  update(change: Partial<Pick<SessionWait, 'queued' | 'holding' | 'limit'>>): void {
    Object.assign(this, change);
    for (const listener of [...this.listeners]) listener();
  }
}

let current: SessionWait | null = null;

/**
 * Runs `fn` (an env's reset) with `wait` as the SessionWait of every session open it starts
 * synchronously — as withResetDefaults hands a reset its seed: a client reads it when its reset starts.
 */
export function withSessionWait<T>(wait: SessionWait | null, fn: () => T): T {
  const previous = current;
  current = wait;
  try {
    return fn();
  } finally {
    current = previous;
  }
}

/** The SessionWait of the reset running now (withSessionWait), if any. */
export function currentSessionWait(): SessionWait | null {
  return current;
}

/** Opens sessions per base URL, queued under the session limit each server reported. */
export class SessionLimiter {
  private readonly gates = new Map<string, Gate>();

  /**
   * Runs `open` once a session of `baseUrl` is free; returns what it opened and the release to call
   * (once; later calls do nothing) when that session is closed. `open` is told whether the limit was
   * known when it was called: a refusal that names the server's limit when it was not makes this and
   * later opens of the URL queue; one that comes although it was (another client holds sessions too)
   * is for `open` to retry or throw, as is every other error. `wait` hears of the queue and the limit.
   */
  async open<T>(baseUrl: string, open: (limitKnown: boolean) => Promise<T>, wait: SessionWait | null = null): Promise<{ value: T; release: () => void }> {
    let gate = this.gates.get(baseUrl);
    if (!gate) this.gates.set(baseUrl, (gate = { limit: null, active: 0, waiters: [] }));
    for (;;) {
      if (gate.limit !== null && gate.active >= gate.limit) {
        wait?.update({ queued: true, limit: gate.limit });
        while (gate.limit !== null && gate.active >= gate.limit) await new Promise<void>((resolve) => gate!.waiters.push(resolve));
        wait?.update({ queued: false });
      } else if (gate.limit !== null && wait && wait.limit !== gate.limit) wait.update({ limit: gate.limit });
      gate.active++;
      const known = gate.limit !== null;
      let value: T;
      try {
        value = await open(known);
      } catch (err) {
        const limit = refusedLimit(err);
        release(gate);
        if (limit === null || known) throw err;
        gate.limit = Math.min(limit, gate.limit ?? limit);
        continue;
      }
      let released = false;
      const g = gate;
      wait?.update({ holding: wait.holding + 1 });
      return {
        value,
        release: () => {
          if (released) return;
          released = true;
          release(g);
          wait?.update({ holding: wait.holding - 1 });
        },
      };
    }
  }
}

function release(gate: Gate): void {
  gate.active--;
  gate.waiters.shift()?.();
}

/** The process's one limiter: every /ws episode opens through it (withEpisode). */
export const sessionLimiter = new SessionLimiter();
