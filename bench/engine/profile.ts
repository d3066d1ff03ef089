// Kernel-family profile (`webgrpo bench kernels`): where the GPU time of a LoRA train step
// (forward + backward + AdamW) and of one decode step (B = 1 and B = 8) goes, per kernel family,
// and how close each family runs to this adapter's peak.
//
// Timing: with `timestamp-query` (Dawn offers it on SwiftShader and lavapipe without toggles) every
// dispatch gets its own compute pass with timestampWrites, still in one submit; without it, every
// op is submitted alone and awaited (queue.onSubmittedWorkDone) and timed on the CPU. The output
// names the method. Profiling is off unless a benchmark sets KernelCache.profiler (recorder.ts).
//
// Per family: dispatches, GPU ms and share of the run's GPU time, FLOPs and bytes from each
// dispatch's own shape params (kernel-costs.ts), achieved GFLOP/s and GB/s, and share of peak on a
// roofline: a GEMM-like family (matmul, attention) is compute-bound when its FLOPs/byte × the
// bandwidth peak exceeds the compute peak, and is then compared with the matmul peak (f16 or f32 as its weights: the engine's own
// matmul kernels at peakSize, outputs checked, timed by the same profiler), else with the
// bandwidth of buffer-to-buffer copies (CPU-timed: copies are outside compute passes); streaming
// families are always compared with the bandwidth. The matmul peak is one shape's: a family can
// exceed it at other shapes (the LM head's wide N).
// Times per family are the fastest of `reps` profiled repeats, dispatch by dispatch; gpuMs is their
// sum, spanMs the GPU time from the first dispatch's start to the last one's end (gaps included).
//
// Options (strings, from `webgrpo bench kernels --KEY VALUE`):
//   model, hidden, layers, heads, kvHeads, headDim, intermediate, vocab   as in the other engine benches
//   weights        auto|f16|f32 (default auto)
//   shape, arch    a named real shape (qwen3-0.6b, qwen3.5-0.8b, qwen3.5-2b) or the generated model's architecture
//   r              LoRA rank on every linear of the model (default 16; alpha = 2r)
//   batch, seqLen  the train step's sequences and tokens each (default 4 × 64, second half scored)
//   prompt         decode context (default 64): the profiled decode steps feed positions prompt, prompt + 1, …
//   decodeBatches  default 1,8
//   method         auto|timestamp|serial (default auto: timestamp when the adapter has it)
//   peakSize       M,N,K of the matmul peak probe (default: the train step's T × intermediate × hidden)
//   copyMiB        bandwidth probe buffer (default 64; 8 copies per timed submit)
//   reps           profiled repeats of each run (default 3): per dispatch the fastest is kept
//   train          off: profile the decode steps only (a model the engine cannot train yet)

import { getGpu } from '../../src/engine/gpu.ts';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import type { DispatchTiming, Profiler } from '../../src/engine/recorder.ts';
import { modelLinears } from '../../src/model/qwen3-tensors.ts';
import { benchCheckpoint, benchTrainBatch, matmulPeak, median, now, num } from './common.ts';
import { dispatchCost, type CostContext } from './kernel-costs.ts';

/** Collects every profiled submit's dispatches while it is KernelCache.profiler. */
export class DispatchCollector implements Profiler {
  readonly dispatches: DispatchTiming[] = [];
  spanMs = 0;
  constructor(readonly method: 'timestamp' | 'serial') {}
  record(dispatches: DispatchTiming[], spanMs: number): void {
    this.dispatches.push(...dispatches);
    this.spanMs += spanMs;
  }
}

type Profiled = { run: DispatchCollector; ctx: CostContext; wallMs: number };

/** Runs `work` with per-dispatch profiling on the engine's kernels. */
export async function profileRun(engine: WebGpuEngine, method: 'timestamp' | 'serial', work: () => Promise<unknown>): Promise<DispatchCollector> {
  const kernels = engine.internals.kernels;
  const collector = new DispatchCollector(method);
  kernels.profiler = collector;
  try {
    await work();
  } finally {
    kernels.profiler = null;
  }
  return collector;
}

export interface Peaks {
  /** Best GFLOP/s of the engine's matmul with f32 weights, and with f16 weights (null: not measured). */
  f32Gflops: number;
  f16Gflops: number | null;
  /** Bandwidth peak, GB/s. */
  gbps: number;
}

export interface FamilyRow {
  family: string;
  kernels: string[];
  dispatches: number;
  ms: number;
  shareOfTime: number;
  gflop: number;
  mbytes: number;
  gflops: number;
  gbps: number;
  bound: 'compute' | 'memory';
  /** The peak the family is compared with: `matmul f32|f16` (GFLOP/s) or `bandwidth` (GB/s). */
  peak: string;
  shareOfPeak: number;
}

/** A profiled dispatch and the context its cost is computed in. */
export interface Timed {
  d: DispatchTiming;
  ctx: CostContext;
}

/**
 * Repeats of the same recorded work (same dispatch list): per dispatch, the fastest repeat, with
 * the context of that repeat (on a shared machine the least disturbed run is the best estimate).
 */
export function fastestPerDispatch(runs: { run: DispatchCollector; ctx: CostContext }[]): Timed[] {
  const n = runs[0]!.run.dispatches.length;
  for (const r of runs) {
    if (r.run.dispatches.length !== n) throw new Error(`bench kernels: repeats recorded ${r.run.dispatches.length} and ${n} dispatches`);
  }
  return Array.from({ length: n }, (_, i) => {
    const best = runs.reduce((a, b) => (b.run.dispatches[i]!.ms < a.run.dispatches[i]!.ms ? b : a));
    return { d: best.run.dispatches[i]!, ctx: best.ctx };
  });
}

/** Per-family totals of profiled dispatches, biggest share of time first. */
export function familyTable(timed: Timed[], peaks: Peaks): { gpuMs: number; families: FamilyRow[] } {
  const acc = new Map<string, { kernels: Set<string>; dispatches: number; ms: number; flops: number; bytes: number; precision: 'f32' | 'f16' }>();
  let gpuMs = 0;
  for (const { d, ctx } of timed) {
    const c = dispatchCost(d, ctx);
    const a = acc.get(c.family) ?? { kernels: new Set<string>(), dispatches: 0, ms: 0, flops: 0, bytes: 0, precision: c.precision };
    a.kernels.add(c.kernel);
    a.dispatches++;
    a.ms += d.ms;
    a.flops += c.flops;
    a.bytes += c.bytes;
    acc.set(c.family, a);
    gpuMs += d.ms;
  }
  const families = [...acc].map(([family, a]): FamilyRow => {
    const s = a.ms / 1000;
    const gflops = s > 0 ? a.flops / s / 1e9 : 0;
    const gbps = s > 0 ? a.bytes / s / 1e9 : 0;
    const computePeak = a.precision === 'f16' && peaks.f16Gflops ? peaks.f16Gflops : peaks.f32Gflops;
    // GEMM-like families (matmuls, attention) sit on the roofline: compute-bound when FLOPs/byte ×
    // bandwidth reaches the compute peak (decode's one-row matmuls do not on a real GPU). Streaming
    // kernels (norms, elementwise, gathers, reductions, the optimizer) are memory-bound by design and
    // compared with the bandwidth: on CPU adapters, whose copies run at memcpy speed and shaders at a
    // few GFLOP/s, the roofline would call even RMSNorm compute-bound.
    const gemmLike = /^(matmul|attention)/.test(family);
    const compute = gemmLike && (a.flops / a.bytes) * peaks.gbps >= computePeak;
    return {
      family, kernels: [...a.kernels].sort(), dispatches: a.dispatches, ms: a.ms, shareOfTime: gpuMs > 0 ? a.ms / gpuMs : 0,
      gflop: a.flops / 1e9, mbytes: a.bytes / 1e6, gflops, gbps,
      bound: compute ? 'compute' : 'memory',
      peak: compute ? `matmul ${a.precision === 'f16' && peaks.f16Gflops ? 'f16' : 'f32'}` : 'bandwidth',
      shareOfPeak: compute ? gflops / computePeak : gbps / peaks.gbps,
    };
  });
  families.sort((x, y) => y.ms - x.ms);
  return { gpuMs, families };
}

/** GB/s of buffer-to-buffer copies (each byte read and written): median of 5 submits of 8 copies, after 2 warm-ups. */
export async function copyBandwidth(device: GPUDevice, mib: number): Promise<{ gbps: number; bytesPerSubmit: number }> {
  const size = Math.min(mib * 2 ** 20, device.limits.maxBufferSize);
  const usage = GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const a = device.createBuffer({ label: 'bandwidth a', size, usage });
  const b = device.createBuffer({ label: 'bandwidth b', size, usage });
  const times: number[] = [];
  for (let rep = 0; rep < 7; rep++) {
    const enc = device.createCommandEncoder();
    for (let i = 0; i < 8; i++) enc.copyBufferToBuffer(i % 2 ? b : a, 0, i % 2 ? a : b, 0, size);
    const t0 = now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    if (rep >= 2) times.push(now() - t0);
  }
  a.destroy();
  b.destroy();
  return { gbps: (8 * 2 * size) / (median(times) / 1000) / 1e9, bytesPerSubmit: 8 * 2 * size };
}

export async function benchKernels(opts: Record<string, string> = {}) {
  const r = num(opts, 'r', 16);
  const B = num(opts, 'batch', 4);
  const seqLen = num(opts, 'seqLen', 64);
  const prompt = num(opts, 'prompt', 64);
  const decodeBatches = (opts.decodeBatches ?? '1,8').split(',').map(Number);
  const reps = num(opts, 'reps', 3);
  if (opts.train !== undefined && opts.train !== 'off') throw new Error(`bench kernels: --train takes only 'off' (decode steps alone), got '${opts.train}'`);
  const withTrain = opts.train !== 'off';
  const want = opts.method ?? 'auto';
  if (!['auto', 'timestamp', 'serial'].includes(want)) throw new Error(`bench kernels: --method must be auto, timestamp or serial, got '${want}'`);
  const gpu = await getGpu({ timestampQuery: want !== 'serial' });
  if (want === 'timestamp' && !gpu.timestampQuery) throw new Error('bench kernels: --method timestamp, but the adapter has no timestamp-query');
  const method = gpu.timestampQuery ? 'timestamp' : 'serial';
  const { ckpt, source } = await benchCheckpoint(opts, 'bf16');
  const engine = await loadEngine(ckpt, { gpu, weightDtype: (opts.weights ?? 'auto') as 'auto' | 'f16' | 'f32' });
  try {
    const cfg = engine.config;
    const T = B * seqLen;
    const targets = modelLinears(cfg);
    if (withTrain) engine.setTrainable({ kind: 'lora', lora: { r, alpha: 2 * r, targetModules: targets, seed: 1 } });
    const { sequences, dLdLogp, opt, scoredTokens: Ts } = benchTrainBatch(cfg.vocabSize, B, seqLen);
    const trainStep = async () => {
      await engine.backward({ sequences, temperature: 1, dLdLogp });
      await engine.step(opt);
    };
    const [M, N, K] = opts.peakSize ? (opts.peakSize.split(',').map(Number) as [number, number, number]) : [T, cfg.intermediateSize, cfg.hiddenSize];
    // The peak probe (outputs checked against float64) runs under the same profiler, so the peak and
    // the families are timed alike: per kernel variant its fastest dispatch over every probe. It runs
    // before, between and after the profiled runs, as does the bandwidth probe (the best is kept).
    let matmul: Awaited<ReturnType<typeof matmulPeak>> = [];
    const fastest = new Map<string, { weights: 'f32' | 'f16'; ms: number }>();
    let bandwidth = { gbps: 0, bytesPerSubmit: 0 };
    const probePeaks = async () => {
      const probe = await profileRun(engine, method, async () => {
        matmul = await matmulPeak(engine.internals, M, N, K, gpu.software ? ['blocked'] : ['blocked', 'tiled']);
      });
      for (const d of probe.dispatches) {
        const c = dispatchCost(d, { attention: { attendedKeys: 0, kvRows: 0 }, vocab: cfg.vocabSize });
        const prev = fastest.get(c.kernel);
        if (!prev || d.ms < prev.ms) fastest.set(c.kernel, { weights: c.precision, ms: d.ms });
      }
      const bw = await copyBandwidth(gpu.device, num(opts, 'copyMiB', 64));
      if (bw.gbps > bandwidth.gbps) bandwidth = bw;
    };
    const probeGflops = () => [...fastest].map(([kernel, f]) => ({ kernel, weights: f.weights, gflops: (2 * M * N * K) / (f.ms / 1000) / 1e9 }));
    const best = (w: 'f32' | 'f16') => Math.max(0, ...probeGflops().filter((m) => m.weights === w).map((m) => m.gflops));
    if (withTrain) await trainStep(); // compiles every pipeline
    // Packed causal sequences: token i of a sequence attends to i + 1 keys, all T rows are read.
    const trainCtx: CostContext = { attention: { attendedKeys: B * (seqLen * (seqLen + 1)) / 2, kvRows: T }, vocab: cfg.vocabSize };
    await probePeaks();
    const train: Profiled[] = [];
    for (let i = 0; i < (withTrain ? reps : 0); i++) {
      const t0 = now();
      const run = await profileRun(engine, method, trainStep);
      train.push({ run, ctx: trainCtx, wallMs: now() - t0 });
    }

    const sampling = { temperature: 1, topP: 1, topK: 0, seed: 7 };
    await probePeaks();
    const decode: { B: number; runs: Profiled[] }[] = [];
    for (const b of decodeBatches) {
      const seqs = Array.from({ length: b }, () => engine.newSequence());
      const ids = (k: number) => Array.from({ length: prompt }, (_, i) => (i * 31 + k * 17 + 3) % cfg.vocabSize);
      // Prefill + one (compiling) decode step; the profiled steps then feed the tokens at positions prompt, prompt + 1, …
      await engine.generate({ items: seqs.map((seq, k) => ({ seq, append: ids(k), maxNewTokens: 1 })), sampling, stopIds: [] });
      const runs: Profiled[] = [];
      for (let i = 0; i < reps; i++) {
        const t0 = now();
        const run = await profileRun(engine, method, () => engine.generate({ items: seqs.map((seq) => ({ seq, append: [], maxNewTokens: 1 })), sampling, stopIds: [] }));
        const keys = prompt + i + 1; // the token at position prompt + i attends to every earlier one and itself
        runs.push({ run, wallMs: now() - t0, ctx: { attention: { attendedKeys: b * keys, kvRows: b * keys }, vocab: cfg.vocabSize } });
      }
      decode.push({ B: b, runs });
      seqs.forEach((s) => engine.releaseSequence(s));
    }

    await probePeaks();
    const peaks: Peaks = { f32Gflops: best('f32'), f16Gflops: best('f16') || null, gbps: bandwidth.gbps };
    const report = (runs: Profiled[]) => {
      const t = familyTable(fastestPerDispatch(runs), peaks);
      return {
        reps, dispatches: runs[0]!.run.dispatches.length, gpuMs: t.gpuMs,
        spanMs: Math.min(...runs.map((r) => r.run.spanMs)), wallMs: Math.min(...runs.map((r) => r.wallMs)), families: t.families,
      };
    };
    return {
      adapter: { ...gpu.adapterInfo, software: gpu.software, f16: gpu.f16 },
      model: source,
      weightDtype: engine.weightDtype,
      kernels: engine.internals.kernelVariants,
      method: method === 'timestamp' ? 'timestamp-query (one compute pass per dispatch)' : 'serial submits (each dispatch awaited, CPU-timed)',
      peaks: { ...peaks, matmulShape: { M, N, K }, matmul: probeGflops(), matmulCpuTimed: matmul, probes: 3, bandwidth: { kind: 'copyBufferToBuffer, CPU-timed', ...bandwidth } },
      train: withTrain ? { lora: { r, alpha: 2 * r, targets }, batch: B, seqLen, tokens: T, scoredTokens: Ts, ...report(train) } : null,
      decode: decode.map((d) => ({ B: d.B, positions: [prompt, prompt + reps - 1], adapters: true, ...report(d.runs) })),
    };
  } finally {
    engine.destroy();
    gpu.device.destroy();
  }
}
