// The f16 KV cache (kv-cache.ts, kv_write/attention with KV_ELEM = f16, f32 accumulation): generation's
// log-probs against a full re-score of the same tokens (which attends over the packed f32 k/v, i.e. the
// exact forward), with the f32 cache as the control. Measured on a tiny Qwen3 (every layer attends) and on
// transformers' Qwen3.5 checkpoint (gated attention), f32 weights so the cache is the only rounding.
// Without shader-f16 (SwiftShader) an f16 cache is a clear error and 'auto' keeps f32.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { randomRefWeights } from '../../src/engine/reference/weights.ts';
import { KV_F16_LOGPROB_ERROR } from '../../src/engine/memory-plan.ts';
import type { Checkpoint } from '../../src/model/types.ts';
import { maxAbsDiff, memoryCheckpoint, onAdapter, someIds, tinyConfig } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const QWEN3_5 = new URL('../fixtures/transformers-qwen3_5-f32/', import.meta.url).pathname;
const greedy = { temperature: 0, topP: 1, topK: 0, seed: 0 };

describe(onAdapter('f16 KV cache: generation log-probs against the exact re-score'), () => {
  let gpu: Gpu;
  beforeAll(async () => {
    gpu = await getGpu();
  });
  afterAll(() => gpu?.device.destroy());

  /** Largest |generated − re-scored| log-prob over G = 2 sequences of `prompt` + `newTokens`. */
  async function error(ckpt: Checkpoint, kvCache: 'f16' | 'f32', prompt: number, newTokens: number): Promise<number> {
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32', kvCache });
    try {
      expect(engine.memoryPlan.kvDtype).toBe(kvCache);
      const prompts = [someIds(prompt, ckpt.config.vocabSize, 1), someIds(prompt - 5, ckpt.config.vocabSize, 2)];
      const seqs = prompts.map(() => engine.newSequence());
      const out = await engine.generate({ items: prompts.map((p, i) => ({ seq: seqs[i]!, append: p, maxNewTokens: newTokens })), sampling: greedy, stopIds: [] });
      let worst = 0;
      for (let i = 0; i < prompts.length; i++) {
        const ids = [...prompts[i]!, ...out[i]!.tokens];
        const exact = (await engine.score({ sequences: [{ ids, scoreFrom: prompts[i]!.length }], temperature: 1 })).logprobs[0]!;
        worst = Math.max(worst, maxAbsDiff(out[i]!.logprobs, exact));
      }
      return worst;
    } finally {
      engine.destroy();
    }
  }

  const models: [string, () => Promise<Checkpoint>][] = [
    ['tiny Qwen3', async () => memoryCheckpoint(tinyConfig(), randomRefWeights(tinyConfig(), 11))],
    ['Qwen3.5 (transformers)', () => openCheckpoint(QWEN3_5)],
  ];
  for (const [name, open] of models) {
    it(`${name}: the f16 cache moves log-probs by more than rounding noise and less than KV_F16_LOGPROB_ERROR; the f32 cache stays within 1e-4`, async (ctx) => {
      const ckpt = await open();
      if (!gpu.f16) {
        await expect(loadEngine(ckpt, { gpu, weightDtype: 'f32', kvCache: 'f16' })).rejects.toThrow(/kvCache: 'f16' needs an adapter with shader-f16/);
        const auto = await loadEngine(ckpt, { gpu, weightDtype: 'f32' });
        expect(auto.memoryPlan.kvDtype).toBe('f32');
        auto.destroy();
        ctx.skip();
      }
      const f32 = await error(ckpt, 'f32', 24, 40);
      const f16 = await error(ckpt, 'f16', 24, 40);
      console.log(`${name} KV cache: max |Δ logprob| vs exact re-score: f32 ${f32.toExponential(2)}, f16 ${f16.toExponential(2)}`);
      expect(f32).toBeLessThan(1e-4);
      expect(f16).toBeGreaterThan(f32);
      expect(f16).toBeLessThan(KV_F16_LOGPROB_ERROR);
    });
  }
});
