// f16 weights read natively: where the adapter has shader-f16 (lavapipe, most GPUs) the kernels bind
// f16 matrices as `array<f16>` / `vec4<f16>` and accumulate in f32; elsewhere (SwiftShader) they
// unpack the same bytes from u32 words. Both must agree with a float64 result.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { packHalf } from '../../src/engine/params.ts';
import { refScore } from '../../src/engine/reference/qwen3.ts';
import { refWeightsFromTensors } from '../../src/engine/reference/weights.ts';
import { openCheckpoint, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { floatToHalf, halfToFloat } from '../../src/model/safetensors.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { run as runScore } from '../../src/cli/score.ts';
import type { HalfLoads, Qwen3Forward } from '../../src/engine/forward.ts';
import { captureCliJson } from '../cli-capture.ts';
import { ADAPTER, maxAbsDiff, memoryCheckpoint, onAdapter, someIds, tinyConfig } from './helpers.ts';
import { randomRefWeights } from '../../src/engine/reference/weights.ts';

const half = (x: number) => halfToFloat(floatToHalf(Math.fround(x)));

async function readBack(fwd: Qwen3Forward, buf: GPUBuffer, n: number): Promise<Float32Array> {
  const rec = fwd.recorder('read');
  const i = rec.read(buf, 0, n * 4);
  return new Float32Array((await rec.submit())[i]!);
}

describe(onAdapter('f16 weights'), () => {
  let gpu: Gpu;
  let dir: string;
  beforeAll(async () => {
    gpu = await getGpu();
    dir = mkdtempSync(join(tmpdir(), 'webgrpo-f16-'));
    const model = await makeTinyModel({ seed: 5, hidden: 32, layers: 2, heads: 4, kvHeads: 2, headDim: 8, intermediate: 64, dtype: 'bf16' });
    for (const [name, bytes] of model.files) writeFileSync(join(dir, name), bytes);
  });
  afterAll(() => {
    gpu?.device.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the adapter\'s f16 path: native and u32 loads agree where shader-f16 exists; native refused clearly where not', async () => {
    if (ADAPTER === 'lavapipe') expect(gpu.f16).toBe(true);
    if (ADAPTER === 'swiftshader') expect(gpu.f16).toBe(false);
    const cfg = tinyConfig();
    // An f16 checkpoint: `auto` keeps its precision, in f16 where the adapter has shader-f16.
    const ckpt = memoryCheckpoint(cfg, randomRefWeights(cfg, 3), 'F16');
    if (gpu.f16) {
      const auto = await loadEngine(ckpt, { gpu });
      expect(auto.weightDtype).toBe('f16');
      // The faster path measured per adapter: u32 unpacking on software adapters, native on GPUs.
      expect(auto.internals.kernelVariants.halfLoads).toBe(gpu.software ? 'u32' : 'native');
      // Both paths score the same model the same way, to float rounding.
      const native = await loadEngine(ckpt, { gpu, halfLoads: 'native' });
      const u32 = await loadEngine(ckpt, { gpu, weightDtype: 'f16', halfLoads: 'u32' });
      const sequences = [{ ids: someIds(11, cfg.vocabSize, 2), scoreFrom: 1 }];
      const a = await native.score({ sequences, temperature: 1 });
      const b = await u32.score({ sequences, temperature: 1 });
      expect(native.internals.kernelVariants.halfLoads).toBe('native');
      expect(maxAbsDiff(a.logprobs[0]!, b.logprobs[0]!)).toBeLessThan(1e-5);
      for (const e of [auto, native, u32]) e.destroy();
    } else {
      await expect(loadEngine(ckpt, { gpu, weightDtype: 'f16', halfLoads: 'native' })).rejects.toThrow(/shader-f16/);
    }
  });

  // Every weight-reading kernel (4-wide, scalar, workgroup-tiled matmul; the embedding gather) in
  // every load mode the adapter has, on real halves, against float64.
  it('matmul (vec4, scalar, tiled) on f16 weights matches float64, in each load mode (the embedding: scored both ways above)', async () => {
    const cfg = tinyConfig();
    const engine = await loadEngine(memoryCheckpoint(cfg, randomRefWeights(cfg, 4)), { gpu, weightDtype: 'f16' });
    const fwd = engine.internals;
    const modes: HalfLoads[] = gpu.f16 ? ['native', 'u32'] : ['u32'];
    for (const [M, N, K] of [[5, 37, 64], [3, 9, 6]] as const) {
      const x = Float32Array.from({ length: M * K }, (_, i) => Math.sin(i * 0.7));
      const w = Float32Array.from({ length: N * K }, (_, i) => half(Math.cos(i * 0.3) * 0.5));
      const xb = fwd.createBuffer('x', x.byteLength);
      const wb = fwd.createBuffer('w', N * K * 2);
      const yb = fwd.createBuffer('y', M * N * 4);
      fwd.device.queue.writeBuffer(xb, 0, x);
      fwd.device.queue.writeBuffer(wb, 0, packHalf(w) as Uint32Array<ArrayBuffer>);
      const want = new Float64Array(M * N);
      for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) for (let k = 0; k < K; k++) want[m * N + n]! += x[m * K + k]! * w[n * K + k]!;
      for (const halfLoads of modes) {
        for (const variant of ['blocked', 'tiled'] as const) {
          const rec = fwd.recorder('matmul');
          fwd.encodeMatmul(rec, { x: xb, w: wb, wDtype: 'f16', y: yb, M, N, K, variant, halfLoads });
          await rec.submit();
          const got = await readBack(fwd, yb, M * N);
          expect(maxAbsDiff(got, want), `${halfLoads} ${variant} M=${M} N=${N} K=${K}`).toBeLessThan(1e-5);
        }
      }
      for (const b of [xb, wb, yb]) b.destroy();
    }
    engine.destroy();
  });

  // The acceptance check: a bf16 checkpoint scored with weights stored in f16 stays within
  // 1e-4 of the float64 reference, and score's JSON says which adapter and weight dtype it used.
  it('`webgrpo score` of a bf16 checkpoint with f16 weights: within 1e-4 of float64, JSON names adapter and weight_dtype', async () => {
    const ckpt = await openCheckpoint(dir);
    const tensors = await Promise.all([...ckpt.tensors.keys()].map(async (name) => ({ name, data: await readTensorFloat32(ckpt, name) })));
    const w = refWeightsFromTensors(ckpt.config, tensors);
    const ids = someIds(12, ckpt.config.vocabSize, 9);
    const { code, json } = await captureCliJson(() => runScore(['--model', dir, '--ids', ids.join(','), '--weights', gpu.f16 ? 'auto' : 'f16']));
    expect(code).toBe(0);
    expect(json.weight_dtype).toBe('f16');
    expect(json.adapter).toMatch(ADAPTER === 'lavapipe' ? /llvmpipe/ : ADAPTER === 'swiftshader' ? /SwiftShader/i : /./);
    expect(json.memory_plan.total_bytes).toBeGreaterThan(0);
    const ref = refScore(ckpt.config, w, { ids, scoreFrom: 1 }, 1);
    expect(maxAbsDiff(json.logprobs, ref.logprobs)).toBeLessThan(1e-4);
    expect(maxAbsDiff(json.entropies, ref.entropy)).toBeLessThan(1e-4);
  });
});
