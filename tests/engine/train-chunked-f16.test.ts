// The training side on the storage layouts of real models: matrices split into several row-chunk
// buffers (as Qwen3-0.6B's embedding is on adapters with a 128 MiB binding limit), and frozen f16
// base weights under a LoRA adapter (the default on adapters with shader-f16).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { randomRefLora, randomRefWeights, type RefWeights } from '../../src/engine/reference/weights.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { createTrainState } from '../../src/engine/train/index.ts';
import { floatToHalf, halfToFloat } from '../../src/model/safetensors.ts';
import type { LoraTarget } from '../../src/engine/types.ts';
import { memoryCheckpoint, someIds, tinyConfig, onAdapter } from './helpers.ts';
import { loraStateTensors, refBatchGrads, relNormError, someGrads } from './train-helpers.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const ALL_TARGETS: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
/** 4 KiB per buffer: the 96×32 f32 embedding becomes 3 chunks, gate/up/down 2 each. */
const SMALL_BINDING = 4096;

/** The weights as the engine holds them in f16: matrices rounded to halves, norm weights kept. */
function halfRounded(w: RefWeights): RefWeights {
  return new Map([...w].map(([name, data]) => [
    name,
    name.endsWith('norm.weight') ? data : data.map((x) => halfToFloat(floatToHalf(Math.fround(x)))),
  ]));
}

describe(onAdapter('training on chunked and f16 weights'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  const cfg = tinyConfig();
  const sequences = [
    { ids: someIds(10, cfg.vocabSize, 7), scoreFrom: 3 },
    { ids: someIds(7, cfg.vocabSize, 8), scoreFrom: 1 },
  ];
  const dLdLogp = someGrads(sequences, 4);

  it('full fine-tuning with every large matrix split into row chunks', async () => {
    const weights = randomRefWeights(cfg, 31);
    const engine = await loadEngine(memoryCheckpoint(cfg, weights), { gpu, weightDtype: 'f32', maxBindingBytes: SMALL_BINDING });
    expect(engine.internals.params.get('model.embed_tokens.weight')!.chunks.length).toBe(3);
    expect(engine.internals.params.get('model.layers.0.mlp.down_proj.weight')!.chunks.length).toBe(2);
    engine.setTrainable({ kind: 'full' });
    await engine.backward({ sequences, temperature: 0.9, dLdLogp });
    const ref = refBatchGrads(cfg, weights, sequences, 0.9, dLdLogp);
    const got = await engine.readGrads();
    expect(got.length).toBe(ref.size);
    for (const t of got) expect(relNormError(t.data, ref.get(t.name)!), t.name).toBeLessThan(1e-3);
    // The optimizer walks every chunk: one step moves every element of the split embedding.
    const before = (await engine.saveState()).tensors.find((t) => t.name === 'model.embed_tokens.weight')!.data.slice();
    await engine.backward({ sequences, temperature: 0.9, dLdLogp });
    await engine.step({ learningRate: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 0 });
    const after = (await engine.saveState()).tensors.find((t) => t.name === 'model.embed_tokens.weight')!.data;
    expect(after.every((x, i) => x !== before[i])).toBe(true);
    engine.destroy();
  });

  for (const gemm of ['blocked', 'tiled'] as const) {
    it(`LoRA gradients over frozen f16 base weights, split into row chunks (${gemm} GEMM)`, async () => {
      const weights = randomRefWeights(cfg, 32);
      const engine = await loadEngine(memoryCheckpoint(cfg, weights), { gpu, weightDtype: 'f16', maxBindingBytes: SMALL_BINDING / 2 });
      expect(engine.weightDtype).toBe('f16');
      expect(engine.internals.params.get('model.embed_tokens.weight')!.chunks.length).toBe(3);
      const train = createTrainState(engine.internals, { gemm });
      const lora = randomRefLora(cfg, { r: 3, alpha: 5, targets: ALL_TARGETS, seed: 6 });
      train.setTrainable({ kind: 'lora', lora: { r: 3, alpha: 5, targetModules: ALL_TARGETS, seed: 2 } });
      await train.loadState({ tensors: loraStateTensors(lora), step: 0 });
      await train.backward({ sequences, temperature: 1.3, dLdLogp });
      const ref = refBatchGrads(cfg, halfRounded(weights), sequences, 1.3, dLdLogp, lora);
      const got = await train.readGrads();
      expect(got.length).toBe(ref.size);
      for (const t of got) expect(relNormError(t.data, ref.get(t.name)!), t.name).toBeLessThan(1e-3);
      train.destroy();
      engine.destroy();
    });
  }

  // The app's worker loads f16 weights wherever the adapter has shader-f16 (lavapipe, most GPUs);
  // full fine-tuning must then train f32 master weights, not refuse.
  it('full fine-tuning over f16-stored weights trains f32 master weights, re-split to the binding limit', async () => {
    // Weights that are exact halves, so f16 storage loses nothing and the f32 reference applies as is.
    const weights: RefWeights = new Map([...randomRefWeights(cfg, 33)].map(([n, d]) => [n, d.map((x) => halfToFloat(floatToHalf(Math.fround(x))))]));
    const ckpt = memoryCheckpoint(cfg, weights, 'F16');
    const engine = await loadEngine(ckpt, { gpu, weightDtype: gpu.f16 ? 'auto' : 'f16', maxBindingBytes: SMALL_BINDING / 2 });
    expect(engine.weightDtype).toBe('f16');
    expect(engine.internals.params.get('model.embed_tokens.weight')!.chunks.length).toBe(3); // 96 rows × 64 B in 2 KiB
    engine.setTrainable({ kind: 'full' });
    expect(engine.weightDtype).toBe('f32');
    expect(engine.internals.params.get('model.embed_tokens.weight')!.chunks.length).toBe(6); // 96 rows × 128 B in 2 KiB
    await engine.backward({ sequences, temperature: 0.9, dLdLogp });
    const ref = refBatchGrads(cfg, weights, sequences, 0.9, dLdLogp);
    const got = await engine.readGrads();
    expect(got.length).toBe(ref.size);
    for (const t of got) expect(relNormError(t.data, ref.get(t.name)!), t.name).toBeLessThan(1e-3);
    // The master weights are the checkpoint's values in f32, and a step moves them by less than a half's ulp.
    const before = (await engine.saveState()).tensors.find((t) => t.name === 'model.layers.0.mlp.down_proj.weight')!.data.slice();
    expect(relNormError(before, weights.get('model.layers.0.mlp.down_proj.weight')!)).toBe(0);
    await engine.step({ learningRate: 1e-5, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 0 });
    const after = (await engine.saveState()).tensors.find((t) => t.name === 'model.layers.0.mlp.down_proj.weight')!.data;
    const moved = after.filter((x, i) => x !== before[i] && Math.abs(x - before[i]!) < 2e-5).length;
    expect(moved).toBe(after.length);
    engine.destroy();
  });
});
