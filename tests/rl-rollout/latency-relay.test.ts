// The benchmark's latency relay (bench/rollouts/latency-relay.ts) in front of the real env-server: every
// reply arrives no earlier than its seeded delay, in order; the delays are the profile's pure function
// of (seed, session's first message, reply number); plain HTTP passes through.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { replyDelayMs, startLatencyRelay, type LatencyProfile, type LatencyRelay } from '../../bench/rollouts/latency-relay.ts';
import { connect } from '../../src/openenv/index.ts';

const PROFILE: LatencyProfile = { minMs: 40, maxMs: 80, slowEvery: 3, slowMs: 200, seed: 5 };
let server: EnvServer;
let relay: LatencyRelay;

beforeAll(async () => {
  server = await createEnvServer({ port: 0 });
  relay = await startLatencyRelay(`${server.url}/envs/catch`, PROFILE);
});
afterAll(async () => {
  await relay?.close();
  await server?.close();
});

describe('latency relay', () => {
  it('delay profile: within [min, max] or exactly slowMs, about 1 in slowEvery slow, deterministic', () => {
    const d = Array.from({ length: 3000 }, (_, k) => replyDelayMs(PROFILE, 12345, k));
    for (const x of d) expect(x === 200 || (x >= 40 && x <= 80)).toBe(true);
    const slow = d.filter((x) => x === 200).length / d.length;
    expect(slow).toBeGreaterThan(0.28);
    expect(slow).toBeLessThan(0.39);
    expect(Array.from({ length: 3000 }, (_, k) => replyDelayMs(PROFILE, 12345, k))).toEqual(d);
    expect(Array.from({ length: 50 }, (_, k) => replyDelayMs(PROFILE, 999, k))).not.toEqual(d.slice(0, 50));
  });

  it('holds every catch reply back by its delay, in order, and forwards plain HTTP', async () => {
    const health = await fetch(`${relay.url}/health`);
    expect(health.status).toBe(200);
    const session = await connect(relay.url);
    const before = relay.delays.length;
    const times: number[] = [];
    let t = performance.now();
    const first = await session.reset({ seed: 7 });
    times.push(performance.now() - t);
    expect(first.done).toBe(false);
    for (let k = 0; k < 4; k++) {
      t = performance.now();
      await session.step({ action_id: 1 });
      times.push(performance.now() - t);
    }
    await session.close();
    const delays = relay.delays.slice(before, before + times.length);
    expect(delays).toHaveLength(5);
    // Each reply waited at least its own delay (timers may fire a millisecond early).
    times.forEach((ms, k) => expect(ms).toBeGreaterThanOrEqual(delays[k]! - 2));
    for (const x of delays) expect(x === 200 || (x >= 40 && x <= 80)).toBe(true);
  });
});
