// Kernel-family profiling (bench/engine/profile.ts) against what the engine runs: a profiled decode
// step's families and dispatch counts are the 16-per-layer + 5 breakdown of BENCHMARKS.md, the
// per-family times add up to the profiled total and fit inside the GPU span, and the FLOPs the
// profile attributes to the GEMM families of a LoRA train step equal trainStepFlops. Each timing
// method the adapter has runs (timestamp-query, serial submits).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { familyTable, profileRun, type Peaks } from '../../bench/engine/profile.ts';
import type { CostContext } from '../../bench/engine/kernel-costs.ts';
import { trainStepFlops } from '../../bench/engine/train-step.ts';
import type { LoraTarget } from '../../src/engine/types.ts';
import { onAdapter, someIds, tinyConfig, tinyEngine } from './helpers.ts';

const ALL: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
const PEAKS: Peaks = { f32Gflops: 1, f16Gflops: null, gbps: 1 };

describe(onAdapter('kernel-family profile'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu({ timestampQuery: true }); });
  afterAll(() => gpu?.device.destroy());

  it('the adapter offers timestamp-query (both CPU adapters do through Dawn)', () => {
    expect(gpu.timestampQuery).toBe(true);
  });

  for (const method of ['timestamp', 'serial'] as const) {
    it(`${method}: a decode step's families are 16 per layer + 5, and their times sum to the total`, async () => {
      const L = 2;
      const cfg = tinyConfig({ numLayers: L });
      const { engine } = await tinyEngine(gpu, cfg, 3, { weightDtype: 'f32' });
      try {
        const seqs = [engine.newSequence(), engine.newSequence()];
        const sampling = { temperature: 1, topP: 1, topK: 0, seed: 1 };
        await engine.generate({ items: seqs.map((seq, i) => ({ seq, append: someIds(5, cfg.vocabSize, i), maxNewTokens: 1 })), sampling, stopIds: [] });
        const run = await profileRun(engine, method, () => engine.generate({ items: seqs.map((seq) => ({ seq, append: [], maxNewTokens: 1 })), sampling, stopIds: [] }));
        expect(run.dispatches.length).toBe(engine.stats.dispatchesPerDecodeStep);
        expect(run.dispatches.length).toBe(16 * L + 5);
        const ctx: CostContext = { attention: { attendedKeys: 2 * 6, kvRows: 2 * 6 }, vocab: cfg.vocabSize };
        const { gpuMs, families } = familyTable(run.dispatches.map((d) => ({ d, ctx })), PEAKS);
        const counts = Object.fromEntries(families.map((f) => [f.family, f.dispatches]));
        // Per layer: 4 norms (input, q, k, post), 7 linears, 2 RoPE, KV write, attention, SwiGLU; per step:
        // embedding, last-row gather, final norm, LM head, sampling.
        expect(counts).toEqual({
          rmsnorm: 4 * L + 1, 'matmul f32 W': 7 * L + 1, rope: 2 * L, kv_write: L, attention: L, swiglu: L,
          embedding: 1, gather_rows: 1, sample: 1,
        });
        const sum = families.reduce((a, f) => a + f.ms, 0);
        expect(sum).toBeCloseTo(gpuMs, 9);
        expect(gpuMs).toBeCloseTo(run.dispatches.reduce((a, d) => a + d.ms, 0), 9);
        expect(run.dispatches.every((d) => d.ms >= 0)).toBe(true);
        expect(gpuMs).toBeGreaterThan(0);
        expect(gpuMs).toBeLessThanOrEqual(run.spanMs * (1 + 1e-9));
        expect(families.reduce((a, f) => a + f.shareOfTime, 0)).toBeCloseTo(1, 9);
        seqs.forEach((s) => engine.releaseSequence(s));
      } finally {
        engine.destroy();
      }
    });
  }

  it('a profiled LoRA train step: the GEMM families carry exactly trainStepFlops, every dispatch has a cost', async () => {
    const cfg = tinyConfig();
    const { engine } = await tinyEngine(gpu, cfg, 2, { weightDtype: 'f32' });
    try {
      const r = 4;
      engine.setTrainable({ kind: 'lora', lora: { r, alpha: 8, targetModules: ALL, seed: 1 } });
      const [B, seqLen, scoreFrom] = [3, 10, 5];
      const sequences = Array.from({ length: B }, (_, i) => ({ ids: someIds(seqLen, cfg.vocabSize, i), scoreFrom }));
      const run = await profileRun(engine, 'timestamp', async () => {
        await engine.backward({ sequences, temperature: 1, dLdLogp: sequences.map(() => new Float32Array(seqLen - scoreFrom).fill(0.1)) });
        await engine.step({ learningRate: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 });
      });
      const ctx: CostContext = { attention: { attendedKeys: (B * seqLen * (seqLen + 1)) / 2, kvRows: B * seqLen }, vocab: cfg.vocabSize };
      const { families } = familyTable(run.dispatches.map((d) => ({ d, ctx })), PEAKS);
      const gemm = families.filter((f) => f.family.startsWith('matmul')).reduce((a, f) => a + f.gflop * 1e9, 0);
      expect(gemm).toBeCloseTo(trainStepFlops(cfg, B * seqLen, B * (seqLen - scoreFrom), 'lora', r).matmulFlops, 3);
      const names = new Set(families.map((f) => f.family));
      for (const f of ['attention', 'attention_backward', 'rmsnorm_backward', 'rope_backward', 'swiglu_backward', 'log_softmax_backward', 'adamw', 'grad_norm']) {
        expect(names.has(f), f).toBe(true);
      }
    } finally {
      engine.destroy();
    }
  });
});
