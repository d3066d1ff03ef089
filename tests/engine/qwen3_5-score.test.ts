// Qwen3.5 (hybrid Gated DeltaNet + gated attention) scoring against transformers itself: the tiny
// checkpoint transformers' save_pretrained wrote (tests/fixtures/transformers-qwen3_5-f32, made by
// its make.py), with transformers' float64 per-token log-probs and entropies.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { maxAbsDiff, onAdapter } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const DIR = new URL('../fixtures/transformers-qwen3_5-f32/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as {
  ids: number[]; score_from: number; temperature: number; logprobs: number[]; entropies: number[];
};

describe(onAdapter('Qwen3.5 scoring vs transformers'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  it('per-token log-probs and entropies within 1e-4 of transformers (f32 weights; both layer types, GQA in attention and DeltaNet)', async () => {
    const ckpt = await openCheckpoint(DIR);
    expect(ckpt.config.layerTypes).toEqual(['linear_attention', 'full_attention', 'linear_attention']);
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32' });
    const seq = { ids: expected.ids, scoreFrom: expected.score_from };
    // Packed with a second, shorter sequence in front: no state may leak across the boundary.
    const other = { ids: expected.ids.slice(5, 22).reverse(), scoreFrom: 1 };
    const out = await engine.score({ sequences: [other, seq], temperature: expected.temperature });
    const err = maxAbsDiff(out.logprobs[1]!, expected.logprobs);
    expect(err).toBeLessThan(1e-4);
    expect(maxAbsDiff(out.entropy[1]!, expected.entropies)).toBeLessThan(1e-4);
    // The same sequence alone scores the same (the pack is only a layout).
    const alone = await engine.score({ sequences: [seq], temperature: expected.temperature });
    expect(maxAbsDiff(alone.logprobs[0]!, expected.logprobs)).toBeLessThan(1e-4);
    console.log(`qwen3_5 score: max |Δ logprob| vs transformers float64 = ${err.toExponential(2)}`);
    // Training is refused with a clear error (its backward is not wired into the train side yet).
    expect(() => engine.setTrainable({ kind: 'full' })).toThrow(/training a Qwen3.5 model is not supported yet/);
    engine.destroy();
  });
});
