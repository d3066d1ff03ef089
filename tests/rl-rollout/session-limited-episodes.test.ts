// Episodes of a server that serves one session at a time (OpenEnv's default for an env that does not
// declare SUPPORTS_CONCURRENT_SESSIONS, as grid_world) queue once its refusal named the limit, instead of
// failing: today's trainer lost 5 of 8 rollouts of a grid_world step to CAPACITY_REACHED.

import { describe, expect, it } from 'vitest';
import { OpenEnvError } from '../../src/openenv/index.ts';
import type { OpenEpisode } from '../../src/rl/tasks/envs/episode-session.ts';
import { refusedLimit } from '../../src/openenv/session-limit.ts';
import { sessionLimitedEpisodes } from '../../src/rl/tasks/session-limited-episodes.ts';

/** A server with `max` sessions: opens beyond it are refused as OpenEnv refuses them. */
function server(max: number) {
  let active = 0;
  let peak = 0;
  let refusals = 0;
  const open: OpenEpisode = async () => {
    await new Promise((r) => setTimeout(r, 1));
    if (active >= max) {
      refusals++;
      throw new OpenEnvError('CAPACITY_REACHED', `Server at capacity: ${active}/${max} sessions active. Cannot accept new connections.`, { message: '', code: 'CAPACITY_REACHED', active_sessions: active, max_sessions: max });
    }
    active++;
    peak = Math.max(peak, active);
    return { first: { observation: {}, reward: 0, done: false }, step: async () => ({ observation: {}, reward: 0, done: false }), close: async () => void active-- };
  };
  return { open, stats: () => ({ active, peak, refusals }) };
}

describe('sessionLimitedEpisodes', () => {
  it('eight episodes on a one-session server all play, one at a time, after one burst of refusals', async () => {
    const s = server(1);
    const open = sessionLimitedEpisodes(s.open);
    const episodes = await Promise.all(Array.from({ length: 8 }, async () => {
      const e = await open('http://env');
      await new Promise((r) => setTimeout(r, 2));
      await e.close();
      return true;
    }));
    expect(episodes).toEqual(Array(8).fill(true));
    expect(s.stats().peak).toBe(1);
    expect(s.stats().active).toBe(0);
    expect(s.stats().refusals).toBeLessThanOrEqual(7);
  });

  it('the limit comes from the refusal (its data, else its message); other errors pass through', async () => {
    expect(refusedLimit(new OpenEnvError('CAPACITY_REACHED', 'Server at capacity: 2/3 sessions active.'))).toBe(3);
    expect(refusedLimit(new OpenEnvError('CONNECT_FAILED', 'refused'))).toBeNull();
    const open = sessionLimitedEpisodes(async () => {
      throw new Error('connection refused');
    });
    await expect(open('http://env')).rejects.toThrow('connection refused');
  });
});
