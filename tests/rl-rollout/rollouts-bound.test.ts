// The scheduler simulation behind `webgrpo bench rollouts-bound` (bench/rollouts/simulate.ts), checked
// against times computed by hand: equal latencies give lockstep = continuous; one episode, or one slot,
// leaves nothing to overlap; a two-episode batch whose replies cross, and resets on admission to a slot,
// are worked out step by step.

import { describe, expect, it } from 'vitest';
import { DEFAULT_LATENCY, replyDelayMs } from '../../bench/rollouts/latency-relay.ts';
import { continuousMs, lockstepMs, relayDelays, simulateBound, type BatchShape } from '../../bench/rollouts/simulate.ts';
import { hashInts } from '../../src/rl/seeds.ts';

const FREE = { fixedMs: 0, perSequenceMs: 0 };
const shape = (over: Partial<BatchShape>): BatchShape => ({ turns: [1], slots: 16, tokensPerTurn: 1, decode: FREE, delay: () => 0, resets: true, ...over });

describe('rollouts-bound simulation', () => {
  it('every reply equally late: both schedulers take the same time (ratio 1), waves included', () => {
    const flat = { ...DEFAULT_LATENCY, minMs: 250, maxMs: 250, slowEvery: 0 };
    for (const [episodes, slots] of [[16, 16], [32, 16], [5, 2]]) {
      const r = simulateBound({ episodes, slots, turns: [4], tokensPerTurn: 20, decode: { fixedMs: 3, perSequenceMs: 0.5 }, resets: true, latency: flat, runs: 5 });
      expect(r.ratio_mean).toBe(1);
      expect(r.ratio_p5).toBe(1);
    }
    // 16 episodes, 1 wave: reset 250 ms, then 4 turns of 20 steps × (3 + 0.5·16) ms and 3 replies of 250 ms.
    const b = shape({ turns: Array(16).fill(4), tokensPerTurn: 20, decode: { fixedMs: 3, perSequenceMs: 0.5 }, delay: () => 250 });
    expect(lockstepMs(b)).toBe(250 + 4 * 20 * 11 + 3 * 250);
    expect(continuousMs(b)).toBe(250 + 4 * 20 * 11 + 3 * 250);
  });

  it('one episode, or one slot: nothing to overlap, ratio 1 under the relay profile', () => {
    const one = simulateBound({ episodes: 1, slots: 16, turns: [1, 3, 10], tokensPerTurn: 24, decode: { fixedMs: 5, perSequenceMs: 1 }, resets: true, latency: DEFAULT_LATENCY, runs: 50 });
    expect([one.ratio_p5, one.ratio_p95]).toEqual([1, 1]);
    const serial = simulateBound({ episodes: 6, slots: 1, turns: [1, 3, 10], tokensPerTurn: 24, decode: { fixedMs: 5, perSequenceMs: 1 }, resets: true, latency: DEFAULT_LATENCY, runs: 50 });
    expect([serial.ratio_p5, serial.ratio_p95]).toEqual([1, 1]);
  });

  it('two episodes whose replies cross (hand numbers)', () => {
    // A: reset 100, step replies 100 then 300; B: reset 100, replies 300 then 100; 3 turns of 1 token,
    // a decode step costs 10 ms whatever its batch.
    const delays = [[100, 100, 300], [100, 300, 100]];
    const b = shape({ turns: [3, 3], decode: { fixedMs: 10, perSequenceMs: 0 }, delay: (i, k) => delays[i]![k]! });
    // Lockstep: 100 (resets) + 10 + max(100, 300) + 10 + max(300, 100) + 10.
    expect(lockstepMs(b)).toBe(730);
    // Continuous: both decode at 100 → 110; A's reply at 210, decode → 220, reply at 520; B's reply at
    // 410, decode → 420, reply at 520; both decode → 530.
    expect(continuousMs(b)).toBe(530);
    // Free decode: 100 + 300 + 300 against 100 + max(100 + 300, 300 + 100).
    expect(lockstepMs({ ...b, decode: FREE })).toBe(700);
    expect(continuousMs({ ...b, decode: FREE })).toBe(500);
    // Prefetched resets drop the 100 ms both start with; one slot plays A then B under both.
    expect(lockstepMs({ ...b, resets: false })).toBe(630);
    expect(continuousMs({ ...b, resets: false })).toBe(430);
    expect(continuousMs({ ...b, slots: 1 })).toBe(lockstepMs({ ...b, slots: 1 }));
    // One slot: B resets when A is over.
    expect(lockstepMs({ ...b, slots: 1 })).toBe(100 + (10 + 100 + 10 + 300 + 10) + 100 + (10 + 300 + 10 + 100 + 10));
  });

  it('continuous refills a freed slot at once: 3 episodes, 2 slots (hand numbers)', () => {
    // Turns 2, 1, 1; no resets; free decode; A's one reply takes 500 ms, nothing else waits.
    // Lockstep: wave {A, B} ends when A's reply is in (500), then C. Continuous: C takes B's slot at 0.
    const b = shape({ turns: [2, 1, 1], slots: 2, resets: false, delay: (i) => (i === 0 ? 500 : 0) });
    expect(lockstepMs(b)).toBe(500);
    expect(continuousMs(b)).toBe(500);
    const slow = shape({ turns: [2, 1, 2], slots: 2, resets: false, delay: (i, k) => (k === 0 ? 0 : i === 0 ? 500 : 400) });
    expect(lockstepMs(slow)).toBe(900); // wave 1: 500; wave 2: C's reply 400
    expect(continuousMs(slow)).toBe(500); // C starts at 0 in B's slot, its reply is in at 400
  });

  it('an episode resets when it is admitted to a slot: 3 one-turn episodes, 2 slots (hand numbers)', () => {
    // Resets take 100 (A), 300 (B), 50 (C); free decode.
    const b = shape({ turns: [1, 1, 1], slots: 2, delay: (i) => [100, 300, 50][i]! });
    // Lockstep: wave {A, B} waits for B's reset (300), then C's (50).
    expect(lockstepMs(b)).toBe(350);
    // Continuous: A ends at 100 and C takes its slot: reset in at 150; B ends at 300.
    expect(continuousMs(b)).toBe(300);
    // The first two resets prefetched: only C's is left, under both.
    expect(lockstepMs({ ...b, resets: false })).toBe(50);
    expect(continuousMs({ ...b, resets: false })).toBe(50);
  });

  it('uses the relay\'s own delays, and free decode never makes continuous slower', () => {
    const d = relayDelays(DEFAULT_LATENCY, 7);
    expect(d(3, 2)).toBe(replyDelayMs({ ...DEFAULT_LATENCY, seed: 7 }, hashInts(7, 0x5e55, 3), 2));
    const r = simulateBound({ episodes: 16, slots: 16, turns: [1, 2, 3, 10], tokensPerTurn: 24, decode: FREE, resets: true, latency: DEFAULT_LATENCY, runs: 200, target: 1 });
    expect(r.ratio_p5).toBeGreaterThanOrEqual(1);
    expect(r.ratio_p95).toBeGreaterThan(r.ratio_p5);
    expect(r.share_reaching_target).toBe(1);
  });
});
