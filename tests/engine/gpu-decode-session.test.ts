// What a decode step costs the host, counted on a wrapped device: the continuous scheduler feeds one
// engine decode session (sequences join between steps), and after its first step no step creates a
// buffer, and each awaits at most one reply from the GPU (its read-back, shared by up to
// DECODE_CHAIN_MAX chained steps; the run's one error scope is checked when the session closes).
// Before decode sessions every token was a generate() call with a fresh read-back buffer, an awaited
// popErrorScope and an awaited map.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import type { WebGpuEngine } from '../../src/engine/engine.ts';
import { playEpisodes } from '../../bench/engine/decode-loop.ts';
import { countGpu, type GpuCounter } from '../../bench/engine/gpu-counter.ts';
import { onAdapter, someIds, tinyConfig, tinyEngine } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

describe(onAdapter('decode sessions: host cost per step'), () => {
  const cfg = tinyConfig({ numLayers: 2, vocabSize: 80 });
  let gpu: Gpu;
  let engine: WebGpuEngine;
  let counter: GpuCounter;
  beforeAll(async () => {
    gpu = await getGpu();
    counter = countGpu(gpu.device);
    ({ engine } = await tinyEngine(gpu, cfg, 5));
    // Compiles the pipelines and grows the KV cache to what the runs below need.
    await playEpisodes(engine, 'lockstep', 3, 6, 5, counter);
  });
  afterAll(() => {
    counter?.restore();
    engine?.destroy();
    gpu?.device.destroy();
  });

  it('continuous: sequences join between steps, no buffer is created after the first step, one round trip per step', async () => {
    const run = await playEpisodes(engine, 'continuous', 3, 6, 5, counter, (i) => i);
    // The batch grew as episodes joined (1 → 2 → 3 sequences) and shrank as they finished.
    expect(run.batchSizes[0]).toBe(1);
    expect(Math.max(...run.batchSizes)).toBe(3);
    expect(run.buffersCreatedPerStepAfterFirst).toBe(0);
    // At most one read-back per step, and one error scope for the run.
    expect(counter.counts.roundTrips).toBeLessThanOrEqual(run.steps + 1);
    expect(run.tokens).toBe(15);
  });

  it('steps chain on the GPU when nothing can join: 5 tokens of one sequence in 2 read-backs', async () => {
    for (const scheduler of ['continuous', 'lockstep'] as const) {
      const run = await playEpisodes(engine, scheduler, 1, 6, 5, counter);
      expect(run.steps).toBe(5);
      expect(run.buffersCreatedPerStepAfterFirst).toBe(0);
      // Chains of 4 + 1 steps, and the run's one error scope.
      expect(counter.counts.roundTrips).toBe(3);
      expect(run.roundTripsPerToken).toBeLessThanOrEqual(1);
    }
  });

  it('a step that fails ends the session: its error scope is closed, and the engine decodes on', async () => {
    const seq = engine.newSequence();
    const session = engine.openDecode({ sampling: { temperature: 1, topP: 1, topK: 0, seed: 1 }, stopIds: [], maxRows: 1 });
    await expect(session.step([{ seq, append: [cfg.vocabSize], maxNewTokens: 2, stream: 0 }])).rejects.toThrow(/outside the vocabulary/);
    await expect(session.step([{ seq, append: [1], maxNewTokens: 2, stream: 0 }])).rejects.toThrow(/after close/);
    // No scope of the session is left open: the stack is empty again.
    await expect(gpu.device.popErrorScope()).rejects.toThrow();
    const out = await engine.generate({ items: [{ seq, append: someIds(4, cfg.vocabSize, 1), maxNewTokens: 2 }], sampling: { temperature: 1, topP: 1, topK: 0, seed: 1 }, stopIds: [] });
    expect(out[0]!.tokens).toHaveLength(2);
    engine.releaseSequence(seq);
  });
});
