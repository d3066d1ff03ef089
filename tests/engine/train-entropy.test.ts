// The entropy term of the backward pass (BackwardRequest.dLdEntropy, TRL's entropy bonus) against
// the float64 reference: L = Σ dLdLogp·logp + Σ dLdEntropy·entropy, within 1e-3 relative
// norm-wise, in full fine-tuning (with the LM head split into vocabulary chunks, so the running
// Σp·z is merged across chunks) and under LoRA.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { randomRefLora, randomRefWeights } from '../../src/engine/reference/weights.ts';
import { createTrainState } from '../../src/engine/train/index.ts';
import type { LoraTarget } from '../../src/engine/types.ts';
import { memoryCheckpoint, someIds, tinyConfig, tinyEngine, onAdapter } from './helpers.ts';
import { loraStateTensors, refBatchGrads, relNormError, someGrads } from './train-helpers.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const ALL_TARGETS: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

describe(onAdapter('training gradients with an entropy term vs the float64 reference'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  const cfg = tinyConfig();
  const sequences = [
    { ids: someIds(9, cfg.vocabSize, 2), scoreFrom: 2 },
    { ids: someIds(6, cfg.vocabSize, 3), scoreFrom: 1 },
  ];
  const dLdLogp = someGrads(sequences, 5);
  // Larger than dLdLogp so that the entropy share dominates some gradients.
  const dLdEntropy = someGrads(sequences, 6).map((g) => g.map((x) => 3 * x));

  it('full fine-tuning, LM head split into 3 vocabulary chunks, temperature 0.8', async () => {
    const weights = randomRefWeights(cfg, 61);
    // 4 KiB per buffer: the embedding (tied head) becomes 3 row chunks.
    const engine = await loadEngine(memoryCheckpoint(cfg, weights), { gpu, weightDtype: 'f32', maxBindingBytes: 4096 });
    expect(engine.internals.params.get('model.embed_tokens.weight')!.chunks.length).toBe(3);
    engine.setTrainable({ kind: 'full' });
    await engine.backward({ sequences, temperature: 0.8, dLdLogp, dLdEntropy });
    const got = await engine.readGrads();
    const ref = refBatchGrads(cfg, weights, sequences, 0.8, dLdLogp, undefined, dLdEntropy);
    const plain = refBatchGrads(cfg, weights, sequences, 0.8, dLdLogp);
    expect(got.length).toBe(ref.size);
    for (const t of got) expect(relNormError(t.data, ref.get(t.name)!), t.name).toBeLessThan(1e-3);
    // The entropy share is far above the tolerance: a kernel ignoring it would fail above.
    expect(relNormError(plain.get('model.embed_tokens.weight')!, ref.get('model.embed_tokens.weight')!)).toBeGreaterThan(0.05);
    engine.destroy();
  });

  it('LoRA on all 7 targets, untied head, temperature 1.2', async () => {
    const ucfg = tinyConfig({ tieWordEmbeddings: false });
    const { engine, weights } = await tinyEngine(gpu, ucfg, 7);
    const train = createTrainState(engine.internals, { gemm: 'blocked' });
    const lora = randomRefLora(ucfg, { r: 2, alpha: 4, targets: ALL_TARGETS, seed: 8 });
    train.setTrainable({ kind: 'lora', lora: { r: 2, alpha: 4, targetModules: ALL_TARGETS, seed: 1 } });
    await train.loadState({ tensors: loraStateTensors(lora), step: 0 });
    const useqs = sequences.map((s, i) => ({ ids: someIds(s.ids.length, ucfg.vocabSize, i + 11), scoreFrom: s.scoreFrom }));
    await train.backward({ sequences: useqs, temperature: 1.2, dLdLogp, dLdEntropy });
    const got = await train.readGrads();
    const ref = refBatchGrads(ucfg, weights, useqs, 1.2, dLdLogp, lora, dLdEntropy);
    expect(got.length).toBe(ref.size);
    for (const t of got) expect(relNormError(t.data, ref.get(t.name)!), t.name).toBeLessThan(1e-3);
    train.destroy();
    engine.destroy();
  });

  it('rejects a dLdEntropy of the wrong shape or with a non-finite value', async () => {
    const { engine } = await tinyEngine(gpu, cfg, 9);
    engine.setTrainable({ kind: 'full' });
    await expect(engine.backward({ sequences, temperature: 1, dLdLogp, dLdEntropy: dLdEntropy.slice(0, 1) }))
      .rejects.toThrow(/dLdEntropy has 1 arrays for 2 sequences/);
    await expect(engine.backward({ sequences, temperature: 1, dLdLogp, dLdEntropy: [dLdEntropy[0]!, new Float32Array(2)] }))
      .rejects.toThrow(/dLdEntropy\[1\] has 2 values, expected 5/);
    await expect(engine.backward({ sequences, temperature: 1, dLdLogp, dLdEntropy: [dLdEntropy[0]!, new Float32Array(5).fill(NaN)] }))
      .rejects.toThrow(/dLdEntropy\[1\]\[0\] is not finite/);
    engine.destroy();
  });
});
