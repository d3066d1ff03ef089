// Native f16 loads (`array<f16>`, shader-f16) against unpacking halves from u32 words, on every
// kernel that reads stored f16 weights:
//   forward    the engine's forward matmul at Qwen3-0.6B's MLP shape (K = 1024 → N = 3072) for
//              decode-like (M = 1, 8) and prefill-like (M = 128) rows (matmulPeak, GFLOP/s);
//   backward   the train side's GEMM with B = a stored f16 weight, in its two roles: linear
//              dX = dY·W (M × 1024 from K = 3072, W read as stored) and LM-head logits = h·Eᵀ
//              (M × 3072 from K = 1024, W read transposed), in the adapter's default GEMM variant;
//   train step one LoRA step (backward + AdamW) of the generated bench model with f16 weights, the
//              forward and backward both reading halves the mode's way.
// Rounds alternate the two modes so both see the same background load; each reports the median of
// its rounds and the spread (min–max). Every timed output is checked against float64 (GEMMs on
// sampled entries), and the two train-step engines must produce the same LoRA gradients.
//
// Options: rounds (default 5), N, K (default 3072, 1024), rows (forward, default 1,8,128),
// bwdRows (backward GEMM rows, default 128), trainStep (off to skip it), and the train model's shape
// (hidden, layers, … as in `bench train`; default hidden 256, 4 layers), batch, seqLen, r.
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import type { HalfLoads, Qwen3Forward } from '../../src/engine/forward.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import { packHalf } from '../../src/engine/params.ts';
import { halfToFloat } from '../../src/model/safetensors.ts';
import { TrainOps } from '../../src/engine/train/ops.ts';
import type { LoraTarget } from '../../src/engine/types.ts';
import { benchCheckpoint, benchTrainBatch, matmulPeak, median, now, num } from './common.ts';

const MODES: HalfLoads[] = ['native', 'u32'];
const ALL_TARGETS: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

/** Median and spread of one mode's rounds. */
function summary(xs: number[]) {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), rounds: xs };
}

/** native / u32 of a "higher is better" measure (GFLOP/s): > 1 means native is faster. */
function compare(byMode: Record<HalfLoads, number[]>) {
  const native = summary(byMode.native);
  const u32 = summary(byMode.u32);
  return { native, u32, nativeOverU32: native.median / u32.median };
}

export async function benchHalfLoads(opts: Record<string, string> = {}) {
  const gpu = await getGpu();
  if (!gpu.f16) {
    gpu.device.destroy();
    return { adapter: gpu.adapterInfo, rounds: 0, results: [], note: 'no shader-f16 on this adapter: the u32 path is the only one' };
  }
  const rounds = num(opts, 'rounds', 5);
  try {
    const forward = await benchForward(gpu, opts, rounds);
    const backward = await benchBackwardGemm(gpu, opts, rounds);
    const trainStep = opts.trainStep === 'off' ? null : await benchTrainStep(gpu, opts, rounds);
    return { adapter: gpu.adapterInfo, software: gpu.software, rounds, forward, backward, trainStep };
  } finally {
    gpu.device.destroy();
  }
}

/** A tiny engine per mode: the GEMM benches bring their own buffers; the engine supplies kernels and the switch. */
async function tinyEngines(gpu: Gpu): Promise<Record<HalfLoads, WebGpuEngine>> {
  const model = await makeTinyModel({ seed: 1, dtype: 'bf16', hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64, vocab: 512 });
  const ckpt = await openCheckpoint(model.files);
  return {
    native: await loadEngine(ckpt, { gpu, halfLoads: 'native' }),
    u32: await loadEngine(ckpt, { gpu, weightDtype: 'f16', halfLoads: 'u32' }),
  };
}

async function benchForward(gpu: Gpu, opts: Record<string, string>, rounds: number) {
  const engines = await tinyEngines(gpu);
  const fwd: Qwen3Forward = engines.native.internals;
  const N = num(opts, 'N', 3072);
  const K = num(opts, 'K', 1024);
  const rows = (opts.rows ?? '1,8,128').split(',').map(Number);
  try {
    const out = [];
    for (const M of rows) {
      const gflops: Record<HalfLoads, number[]> = { native: [], u32: [] };
      // matmulPeak runs u32 then native in each call (each the median of 5 submits): one call per round.
      for (let r = 0; r < rounds; r++) {
        for (const res of await matmulPeak(fwd, M, N, K, ['blocked'])) if (res.halfLoads) gflops[res.halfLoads].push(res.gflops);
      }
      out.push({ kernel: 'matmul_vec4 (y = x·Wᵀ)', M, N, K, gflops: compare(gflops) });
    }
    return out;
  } finally {
    for (const e of Object.values(engines)) e.destroy();
  }
}

async function benchBackwardGemm(gpu: Gpu, opts: Record<string, string>, rounds: number) {
  const engines = await tinyEngines(gpu);
  const dev = gpu.device;
  const wide = num(opts, 'N', 3072); // the weight's long side (out of up_proj; vocabulary rows of a head chunk)
  const narrow = num(opts, 'K', 1024); // its short side (hidden)
  const rows = (opts.bwdRows ?? '128').split(',').map(Number);
  // W (wide, narrow) in f16, as a model stores it; the f32 values of those halves for the reference.
  const ws = Float32Array.from({ length: wide * narrow }, (_, i) => Math.cos(i) * 0.5);
  const halves = packHalf(ws);
  const h16 = new Uint16Array(halves.buffer, halves.byteOffset, wide * narrow);
  const wv = Float32Array.from(h16, (h) => halfToFloat(h));
  const fwd = engines.native.internals;
  const w = fwd.createBuffer('bench W f16', wide * narrow * 2);
  dev.queue.writeBuffer(w, 0, halves as Uint32Array<ArrayBuffer>);
  const ops = { native: new TrainOps(engines.native.internals), u32: new TrainOps(engines.u32.internals) };
  const roles = [
    // dX (M, narrow) = dY (M, wide) · W (wide, narrow): B as stored.
    { role: 'linear dX = dY·W', N: narrow, K: wide, bTransposed: false, ldb: narrow, ref: (k: number, n: number) => wv[k * narrow + n]! },
    // logits (M, wide) = h (M, narrow) · Wᵀ: B transposed (the LM head over a vocabulary chunk).
    { role: 'LM head logits = h·Eᵀ', N: wide, K: narrow, bTransposed: true, ldb: narrow, ref: (k: number, n: number) => wv[n * narrow + k]! },
  ];
  const out = [];
  try {
    for (const M of rows) {
      for (const g of roles) {
        const as = Float32Array.from({ length: M * g.K }, (_, i) => Math.sin(i) * 0.5);
        const a = fwd.createBuffer('bench A', as.byteLength);
        const c = fwd.createBuffer('bench C', M * g.N * 4);
        dev.queue.writeBuffer(a, 0, as);
        const run = async (mode: HalfLoads): Promise<number> => {
          const rec = engines[mode].internals.recorder('bench backward gemm');
          ops[mode].gemm(rec, { M, N: g.N, K: g.K, a, lda: g.K, b: w, ldb: g.ldb, bTransposed: g.bTransposed, bHalf: true, c, ldc: g.N, accumulate: false });
          const t0 = now();
          await rec.submit();
          await dev.queue.onSubmittedWorkDone();
          return now() - t0;
        };
        const check = async (mode: HalfLoads): Promise<number> => {
          const rec = fwd.recorder('bench backward check');
          const i = rec.read(c, 0, M * g.N * 4);
          const got = new Float32Array((await rec.submit())[i]!);
          let maxAbsErr = 0;
          for (let s = 0; s < 64; s++) {
            const [m, n] = [(s * 7919) % M, (s * 104729) % g.N];
            let want = 0;
            for (let k = 0; k < g.K; k++) want += as[m * g.K + k]! * g.ref(k, n);
            maxAbsErr = Math.max(maxAbsErr, Math.abs(got[m * g.N + n]! - want));
          }
          if (!(maxAbsErr <= 1e-5 * g.K)) throw new Error(`bench half-loads backward ${g.role} ${mode}: output differs from float64 by ${maxAbsErr}`);
          return maxAbsErr;
        };
        const maxAbsErr: Record<string, number> = {};
        for (const mode of MODES) {
          await run(mode); // compiles the pipeline
          await run(mode);
          maxAbsErr[mode] = await check(mode);
        }
        const gflops: Record<HalfLoads, number[]> = { native: [], u32: [] };
        for (let r = 0; r < rounds; r++) {
          for (const mode of MODES) gflops[mode].push((2 * M * g.N * g.K) / (await run(mode) / 1000) / 1e9);
        }
        out.push({ kernel: ops.native.gemmVariant === 'tiled' ? 'matmul_backward_tiled' : 'matmul_backward', role: g.role, M, N: g.N, K: g.K, maxAbsErr, gflops: compare(gflops) });
        a.destroy();
        c.destroy();
      }
    }
    return out;
  } finally {
    w.destroy();
    for (const e of Object.values(engines)) e.destroy();
  }
}

async function benchTrainStep(gpu: Gpu, opts: Record<string, string>, rounds: number) {
  const { ckpt, source } = await benchCheckpoint(opts, 'bf16');
  const B = num(opts, 'batch', 4);
  const seqLen = num(opts, 'seqLen', 64);
  const r = num(opts, 'r', 16);
  const engines: Record<HalfLoads, WebGpuEngine> = {
    native: await loadEngine(ckpt, { gpu, weightDtype: 'f16', halfLoads: 'native' }),
    u32: await loadEngine(ckpt, { gpu, weightDtype: 'f16', halfLoads: 'u32' }),
  };
  try {
    const cfg = engines.native.config;
    const { sequences, dLdLogp, opt, scoredTokens: Ts } = benchTrainBatch(cfg.vocabSize, B, seqLen);
    for (const mode of MODES) engines[mode].setTrainable({ kind: 'lora', lora: { r, alpha: 2 * r, targetModules: ALL_TARGETS, seed: 1 } });
    // Same adapter, same batch: the two modes must compute the same gradients (before any step).
    const grads: Record<string, Map<string, Float32Array>> = {};
    for (const mode of MODES) {
      await engines[mode].backward({ sequences, temperature: 1, dLdLogp }); // also compiles every pipeline
      grads[mode] = new Map((await engines[mode].readGrads()).map((t) => [t.name, t.data]));
      engines[mode].zeroGrad();
    }
    let worst = 0;
    for (const [name, g] of grads.native!) {
      const h = grads.u32!.get(name)!;
      let d = 0;
      let n = 0;
      for (let i = 0; i < g.length; i++) { d += (g[i]! - h[i]!) ** 2; n += h[i]! ** 2; }
      worst = Math.max(worst, n > 0 ? Math.sqrt(d / n) : Math.sqrt(d));
    }
    if (!(worst < 1e-4)) throw new Error(`bench half-loads train step: native and u32 LoRA gradients differ (relative ${worst})`);
    const stepMs: Record<HalfLoads, number[]> = { native: [], u32: [] };
    const backwardMs: Record<HalfLoads, number[]> = { native: [], u32: [] };
    for (let i = 0; i < rounds; i++) {
      for (const mode of MODES) {
        const t0 = now();
        await engines[mode].backward({ sequences, temperature: 1, dLdLogp });
        const t1 = now();
        await engines[mode].step(opt);
        backwardMs[mode].push(t1 - t0);
        stepMs[mode].push(now() - t0);
      }
    }
    // Times: lower is better, so the ratio is u32 / native (> 1 means native is faster).
    const ratio = (x: Record<HalfLoads, number[]>) => ({ native: summary(x.native), u32: summary(x.u32), u32OverNative: median(x.u32) / median(x.native) });
    return {
      model: source, weightDtype: 'f16', lora: { r, targets: ALL_TARGETS }, batch: B, seqLen, tokens: B * seqLen, scoredTokens: Ts,
      gradsRelDiff: worst, stepMs: ratio(stepMs), backwardMs: ratio(backwardMs),
    };
  } finally {
    for (const e of Object.values(engines)) e.destroy();
  }
}
