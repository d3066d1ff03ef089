// Shared by the engine benchmarks: option parsing and the benchmark model (a checkpoint folder or
// a generated random Qwen3 of a given shape).
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import type { Checkpoint } from '../../src/model/types.ts';
import type { ScoreSequence } from '../../src/engine/types.ts';
import type { HalfLoads, Qwen3Forward } from '../../src/engine/forward.ts';
import { packHalf } from '../../src/engine/params.ts';
import { halfToFloat } from '../../src/model/safetensors.ts';

export const num = (opts: Record<string, string>, key: string, dflt: number): number => {
  if (opts[key] === undefined) return dflt;
  const v = Number(opts[key]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`bench: --${key} must be a positive number, got '${opts[key]}'`);
  return v;
};

export const now = () => performance.now();

const generated = new Map<string, Map<string, Uint8Array>>();

/** `--model DIR|repo`, else a generated model (hidden 256, 4 layers, vocab 2048 unless overridden). */
export async function benchCheckpoint(opts: Record<string, string>, dtype: 'bf16' | 'f32'): Promise<{ ckpt: Checkpoint; source: string }> {
  if (opts.model) return { ckpt: await openCheckpoint(opts.model), source: opts.model };
  const shape = {
    hidden: num(opts, 'hidden', 256),
    layers: num(opts, 'layers', 4),
    heads: num(opts, 'heads', 4),
    kvHeads: num(opts, 'kvHeads', 2),
    headDim: num(opts, 'headDim', 64),
    intermediate: num(opts, 'intermediate', 768),
    vocab: num(opts, 'vocab', 2048),
  };
  // Generating a 0.6B-shaped model takes minutes of single-threaded JS: one per shape and dtype per
  // process (the GPU-bench archive runs the train bench twice on the same model).
  const key = `${dtype} ${JSON.stringify(shape)}`;
  let files = generated.get(key);
  if (!files) {
    files = (await makeTinyModel({ seed: 1, dtype, ...shape })).files;
    generated.set(key, files);
  }
  return { ckpt: await openCheckpoint(files), source: `generated ${JSON.stringify(shape)}` };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export type MatmulVariant = 'blocked' | 'tiled';

export interface MatmulPeakResult {
  variant: MatmulVariant;
  weights: 'f32' | 'f16';
  /** How f16 weights were read: natively (`array<f16>`, shader-f16) or unpacked from u32 words. */
  halfLoads: HalfLoads | null;
  gflops: number;
  /** Largest |GPU − float64| over 64 sampled outputs (the run fails above 1e-5·K). */
  maxAbsErr: number;
}

/**
 * GFLOP/s of the engine's forward matmul y = x·Wᵀ at (M, N, K) for each variant × weight storage
 * (f32; f16 on real halves, read each way the adapter can): median of 5 timed submits after 2
 * warm-up runs (the first ones compile the pipeline). Every result's output is checked against
 * float64 on sampled entries, so a fast wrong kernel cannot be the peak.
 */
export async function matmulPeak(fwd: Qwen3Forward, M: number, N: number, K: number, variants: readonly MatmulVariant[]): Promise<MatmulPeakResult[]> {
  const dev = fwd.device;
  const xs = Float32Array.from({ length: M * K }, (_, i) => Math.sin(i) * 0.5);
  const ws = Float32Array.from({ length: N * K }, (_, i) => Math.cos(i) * 0.5);
  const halves = packHalf(ws);
  const wsHalf = new Float32Array(N * K);
  const h16 = new Uint16Array(halves.buffer, halves.byteOffset, N * K);
  for (let i = 0; i < N * K; i++) wsHalf[i] = halfToFloat(h16[i]!);
  const x = fwd.createBuffer('bench x', M * K * 4);
  const w32 = fwd.createBuffer('bench W f32', N * K * 4);
  const w16 = fwd.createBuffer('bench W f16', N * K * 2);
  const y = fwd.createBuffer('bench y', M * N * 4);
  dev.queue.writeBuffer(x, 0, xs);
  dev.queue.writeBuffer(w32, 0, ws);
  dev.queue.writeBuffer(w16, 0, halves as Uint32Array<ArrayBuffer>);
  const samples = Array.from({ length: 64 }, (_, i) => [(i * 7919) % M, (i * 104729) % N] as const);
  const results: MatmulPeakResult[] = [];
  const loads: (HalfLoads | null)[] = [null, 'u32', ...(fwd.gpu.f16 ? ['native' as const] : [])];
  for (const variant of variants) {
    for (const halfLoads of loads) {
      const wDtype = halfLoads ? 'f16' : 'f32';
      const times: number[] = [];
      for (let rep = 0; rep < 7; rep++) {
        const rec = fwd.recorder('bench matmul');
        fwd.encodeMatmul(rec, { x, w: halfLoads ? w16 : w32, wDtype, y, M, N, K, variant, halfLoads: halfLoads ?? undefined });
        const t0 = now();
        await rec.submit();
        await dev.queue.onSubmittedWorkDone();
        if (rep >= 2) times.push(now() - t0);
      }
      const rec = fwd.recorder('bench matmul check');
      const idx = rec.read(y, 0, M * N * 4);
      const got = new Float32Array((await rec.submit())[idx]!);
      const wv = halfLoads ? wsHalf : ws;
      let maxAbsErr = 0;
      for (const [m, n] of samples) {
        let want = 0;
        for (let k = 0; k < K; k++) want += xs[m * K + k]! * wv[n * K + k]!;
        maxAbsErr = Math.max(maxAbsErr, Math.abs(got[m * N + n]! - want));
      }
      if (!(maxAbsErr <= 1e-5 * K)) throw new Error(`bench matmul ${variant}/${wDtype}${halfLoads ? `/${halfLoads}` : ''}: output differs from float64 by ${maxAbsErr}`);
      results.push({ variant, weights: wDtype, halfLoads, gflops: (2 * M * N * K) / (median(times) / 1000) / 1e9, maxAbsErr });
    }
  }
  for (const b of [x, w32, w16, y]) b.destroy();
  return results;
}

/** `variant/weights[/halfLoads]`, the name of a peak result. */
export const peakName = (r: MatmulPeakResult): string => `${r.variant}/${r.weights}${r.halfLoads ? `/${r.halfLoads}` : ''}`;

/**
 * The train benches' batch: B fixed-id sequences of seqLen tokens, the second half scored, a mean-loss
 * gradient dL/dlogp = -1/T on every scored token, and a small AdamW step.
 */
export function benchTrainBatch(vocabSize: number, B: number, seqLen: number) {
  const scoreFrom = Math.max(1, Math.floor(seqLen / 2));
  const sequences: ScoreSequence[] = Array.from({ length: B }, (_, b) => ({
    ids: Array.from({ length: seqLen }, (_, i) => (i * 31 + b * 17 + 3) % vocabSize),
    scoreFrom,
  }));
  const Ts = B * (seqLen - scoreFrom);
  const dLdLogp = sequences.map((s) => new Float32Array(s.ids.length - s.scoreFrom).fill(-1 / Ts));
  const opt = { learningRate: 1e-5, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 };
  return { sequences, dLdLogp, opt, scoredTokens: Ts };
}
