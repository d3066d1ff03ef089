// The process's session limiter (src/openenv/session-limit.ts): opens of a server that serves few
// sessions at once queue under the limit its first refusal named, and a rollout's SessionWait hears when
// its open waits, when it holds a session and what the limit is.

import { describe, expect, it } from 'vitest';
import { OpenEnvError } from '../../src/openenv/index.ts';
import { refusedLimit, SessionLimiter, SessionWait } from '../../src/openenv/session-limit.ts';

/** A server with `max` sessions: opens beyond it are refused as OpenEnv refuses them. */
function server(max: number) {
  let active = 0;
  let peak = 0;
  let refusals = 0;
  const open = async (): Promise<{ close: () => void }> => {
    await new Promise((r) => setTimeout(r, 1));
    if (active >= max) {
      refusals++;
      throw new OpenEnvError('CAPACITY_REACHED', `Server at capacity: ${active}/${max} sessions active. Cannot accept new connections.`, { message: '', code: 'CAPACITY_REACHED', active_sessions: active, max_sessions: max });
    }
    active++;
    peak = Math.max(peak, active);
    return { close: () => void active-- };
  };
  return { open, stats: () => ({ active, peak, refusals }) };
}

describe('SessionLimiter', () => {
  it('eight opens of a one-session server all play, one at a time, after one burst of refusals', async () => {
    const s = server(1);
    const limiter = new SessionLimiter();
    const waits = Array.from({ length: 8 }, () => new SessionWait());
    const seen = waits.map(() => ({ queued: false, held: false }));
    waits.forEach((w, i) => w.onChange(() => {
      seen[i]!.queued ||= w.queued;
      seen[i]!.held ||= w.holding > 0;
    }));
    await Promise.all(waits.map(async (wait) => {
      const { value, release } = await limiter.open('http://env', () => s.open(), wait);
      await new Promise((r) => setTimeout(r, 2));
      value.close();
      release();
      release(); // a second release does nothing
    }));
    expect(s.stats()).toEqual({ active: 0, peak: 1, refusals: 7 });
    expect(waits.map((w) => [w.queued, w.holding])).toEqual(Array(8).fill([false, 0]));
    // The open that got the session before any refusal never heard the limit; the seven refused did.
    expect(waits.map((w) => w.limit)).toEqual([null, 1, 1, 1, 1, 1, 1, 1]);
    expect(seen.filter((x) => x.queued)).toHaveLength(7);
    expect(seen.every((x) => x.held)).toBe(true);
  });

  it('the limit comes from the refusal (its data, else its message); other errors, and refusals once it is known, pass through', async () => {
    expect(refusedLimit(new OpenEnvError('CAPACITY_REACHED', 'Server at capacity: 2/3 sessions active.'))).toBe(3);
    expect(refusedLimit(new OpenEnvError('CONNECT_FAILED', 'refused'))).toBeNull();
    // A hostile refusal: a megabyte of digits and a slash (the pattern backtracked over it for minutes) names no limit.
    expect(refusedLimit(new OpenEnvError('CAPACITY_REACHED', `${'9'.repeat(1_000_000)} / `))).toBeNull();
    const limiter = new SessionLimiter();
    await expect(limiter.open('http://a', async () => {
      throw new Error('connection refused');
    })).rejects.toThrow('connection refused');
    // Another client holds the one session: the first refusal teaches the limit, the second (limit known) is the caller's.
    const known: boolean[] = [];
    await expect(limiter.open('http://b', async (limitKnown) => {
      known.push(limitKnown);
      throw new OpenEnvError('CAPACITY_REACHED', 'Server at capacity: 1/1 sessions active.');
    })).rejects.toMatchObject({ code: 'CAPACITY_REACHED' });
    expect(known).toEqual([false, true]);
  });
});
