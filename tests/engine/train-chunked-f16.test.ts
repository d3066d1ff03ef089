// The training side on the storage layouts of real models: matrices split into several row-chunk
// buffers (as Qwen3-0.6B's embedding is on adapters with a 128 MiB binding limit), and frozen f16
// base weights under a LoRA adapter (the default on adapters with shader-f16). f16 weights are read
// each way the adapter can (halfLoads: native `array<f16>` with shader-f16, u32 unpacking on all),
// and the WGSL compiled for the backward is checked to be the requested one.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import type { HalfLoads } from '../../src/engine/weight-loads.ts';
import type { EngineInternals } from '../../src/engine/internals.ts';
import { KERNEL_SOURCES } from '../../src/engine/kernels/index.ts';
import { fillTemplate } from '../../src/engine/recorder.ts';
import { randomRefLora, randomRefWeights, type RefWeights } from '../../src/engine/reference/weights.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { createTrainState } from '../../src/engine/train/index.ts';
import { floatToHalf, halfToFloat } from '../../src/model/safetensors.ts';
import type { LoraTarget } from '../../src/engine/types.ts';
import { ADAPTER, memoryCheckpoint, someIds, tinyConfig, onAdapter } from './helpers.ts';
import { loraStateTensors, refBatchGrads, relNormError, someGrads } from './train-helpers.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const ALL_TARGETS: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
/** 4 KiB per buffer: the 96×32 f32 embedding becomes 3 chunks, gate/up/down 2 each. */
const SMALL_BINDING = 4096;

/**
 * Records the WGSL of every pipeline `internals` asks for (the template filled exactly as the kernel
 * cache fills it), by kernel file, while `body` runs.
 */
async function compiledWgsl(internals: EngineInternals, body: () => Promise<void>): Promise<Map<string, string[]>> {
  const seen = new Map<string, string[]>();
  const original = internals.getPipeline.bind(internals);
  const spy = vi.spyOn(internals, 'getPipeline').mockImplementation((file, constants = {}) => {
    seen.set(file, [...(seen.get(file) ?? []), fillTemplate(file, KERNEL_SOURCES[file]!, constants)]);
    return original(file, constants);
  });
  try {
    await body();
  } finally {
    spy.mockRestore();
  }
  return seen;
}

/** Asserts that the f16 weights of `file`'s pipelines were read the requested way (and read at all). */
function expectHalfLoads(wgsl: Map<string, string[]>, file: string, halfLoads: HalfLoads): void {
  const sources = wgsl.get(file) ?? [];
  expect(sources.length, `${file} compiled`).toBeGreaterThan(0);
  const native = sources.filter((w) => /^enable f16;/m.test(w) && /array<f16>/.test(w));
  const unpacked = sources.filter((w) => /unpack2x16float/.test(w));
  if (halfLoads === 'native') {
    expect(native.length, `${file}: an f16 pipeline`).toBeGreaterThan(0);
    expect(unpacked.length, `${file}: no u32 unpacking`).toBe(0);
  } else {
    expect(unpacked.length, `${file}: a u32-unpacking pipeline`).toBeGreaterThan(0);
    expect(sources.some((w) => /enable f16/.test(w)), `${file}: no f16 enabled`).toBe(false);
  }
}

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

  // Every load mode the adapter has: native f16 needs shader-f16 (lavapipe), u32 unpacking runs anywhere.
  const modes = (): HalfLoads[] => (gpu.f16 ? ['native', 'u32'] : ['u32']);

  for (const gemm of ['blocked', 'tiled'] as const) {
    it(`LoRA gradients over frozen f16 base weights, split into row chunks (${gemm} GEMM), each half-load mode`, async () => {
      if (ADAPTER === 'lavapipe') expect(modes()).toContain('native');
      const weights = randomRefWeights(cfg, 32);
      const lora = randomRefLora(cfg, { r: 3, alpha: 5, targets: ALL_TARGETS, seed: 6 });
      const ref = refBatchGrads(cfg, halfRounded(weights), sequences, 1.3, dLdLogp, lora);
      const byMode = new Map<HalfLoads, Map<string, Float32Array>>();
      for (const halfLoads of modes()) {
        const engine = await loadEngine(memoryCheckpoint(cfg, weights), { gpu, weightDtype: 'f16', halfLoads, maxBindingBytes: SMALL_BINDING / 2 });
        expect(engine.weightDtype).toBe('f16');
        expect(engine.internals.params.get('model.embed_tokens.weight')!.chunks.length).toBe(3);
        const train = createTrainState(engine.internals, { gemm });
        train.setTrainable({ kind: 'lora', lora: { r: 3, alpha: 5, targetModules: ALL_TARGETS, seed: 2 } });
        await train.loadState({ tensors: loraStateTensors(lora), step: 0 });
        const wgsl = await compiledWgsl(engine.internals, () => train.backward({ sequences, temperature: 1.3, dLdLogp }));
        // dX = dY·W and the LM head read the frozen f16 weights in the backward GEMM: the requested way.
        expectHalfLoads(wgsl, gemm === 'tiled' ? 'matmul_backward_tiled.wgsl' : 'matmul_backward.wgsl', halfLoads);
        const got = await train.readGrads();
        expect(got.length).toBe(ref.size);
        for (const t of got) expect(relNormError(t.data, ref.get(t.name)!), `${halfLoads} ${t.name}`).toBeLessThan(1e-3);
        byMode.set(halfLoads, new Map(got.map((t) => [t.name, t.data])));
        train.destroy();
        engine.destroy();
      }
      // The two load modes read the same halves: their gradients agree to f32 rounding.
      if (byMode.size === 2) {
        for (const [name, g] of byMode.get('native')!) expect(relNormError(g, byMode.get('u32')!.get(name)!), name).toBeLessThan(1e-5);
      }
    });
  }

  // The app's worker loads f16 weights wherever the adapter has shader-f16 (lavapipe, most GPUs);
  // full fine-tuning must then train f32 master weights, not refuse.
  it('full fine-tuning over f16-stored weights trains f32 master weights, re-split to the binding limit, each half-load mode', async () => {
    // Weights that are exact halves, so f16 storage loses nothing and the f32 reference applies as is.
    const weights: RefWeights = new Map([...randomRefWeights(cfg, 33)].map(([n, d]) => [n, d.map((x) => halfToFloat(floatToHalf(Math.fround(x))))]));
    const ckpt = memoryCheckpoint(cfg, weights, 'F16');
    const ref = refBatchGrads(cfg, weights, sequences, 0.9, dLdLogp);
    for (const halfLoads of modes()) {
      const engine = await loadEngine(ckpt, { gpu, weightDtype: gpu.f16 ? 'auto' : 'f16', halfLoads, maxBindingBytes: SMALL_BINDING / 2 });
      expect(engine.weightDtype).toBe('f16');
      expect(engine.internals.params.get('model.embed_tokens.weight')!.chunks.length).toBe(3); // 96 rows × 64 B in 2 KiB
      // The promotion to f32 master weights reads the halves the requested way.
      const wgsl = await compiledWgsl(engine.internals, async () => {
        engine.setTrainable({ kind: 'full' });
        await engine.backward({ sequences, temperature: 0.9, dLdLogp });
      });
      expectHalfLoads(wgsl, 'half_to_float.wgsl', halfLoads);
      expect(engine.weightDtype).toBe('f32');
      expect(engine.internals.params.get('model.embed_tokens.weight')!.chunks.length).toBe(6); // 96 rows × 128 B in 2 KiB
      const got = await engine.readGrads();
      expect(got.length).toBe(ref.size);
      for (const t of got) expect(relNormError(t.data, ref.get(t.name)!), `${halfLoads} ${t.name}`).toBeLessThan(1e-3);
      // The master weights are the checkpoint's values in f32, and a step moves them by less than a half's ulp.
      const before = (await engine.saveState()).tensors.find((t) => t.name === 'model.layers.0.mlp.down_proj.weight')!.data.slice();
      expect(relNormError(before, weights.get('model.layers.0.mlp.down_proj.weight')!)).toBe(0);
      await engine.step({ learningRate: 1e-5, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 0 });
      const after = (await engine.saveState()).tensors.find((t) => t.name === 'model.layers.0.mlp.down_proj.weight')!.data;
      const moved = after.filter((x, i) => x !== before[i] && Math.abs(x - before[i]!) < 2e-5).length;
      expect(moved).toBe(after.length);
      engine.destroy();
    }
  });
});
