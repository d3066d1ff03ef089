import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { refScore } from '../../src/engine/reference/qwen3.ts';
import { maxAbsDiff, someIds, tinyConfig, tinyEngine, onAdapter } from './helpers.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

describe(onAdapter('engine scoring vs the float64 reference'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  it('matches logprobs and entropy on a GQA model, B=3 sequences of odd, different lengths', async () => {
    const cfg = tinyConfig();
    const { engine, weights } = await tinyEngine(gpu, cfg, 1);
    const seqs = [
      { ids: someIds(13, cfg.vocabSize, 1), scoreFrom: 1 },
      { ids: someIds(5, cfg.vocabSize, 2), scoreFrom: 3 },
      { ids: someIds(9, cfg.vocabSize, 3), scoreFrom: 4 },
    ];
    for (const temperature of [1, 0.7]) {
      const out = await engine.score({ sequences: seqs, temperature });
      seqs.forEach((s, i) => {
        const ref = refScore(cfg, weights, s, temperature);
        expect(out.logprobs[i]!.length).toBe(s.ids.length - s.scoreFrom);
        expect(maxAbsDiff(out.logprobs[i]!, ref.logprobs)).toBeLessThan(1e-4);
        expect(maxAbsDiff(out.entropy[i]!, ref.entropy)).toBeLessThan(1e-4);
      });
    }
    engine.destroy();
  });
});
