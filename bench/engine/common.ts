// Shared by the engine benchmarks: option parsing and the benchmark model (a checkpoint folder or
// a generated random Qwen3 / Qwen3.5 of a given shape, or a named real model's shape).
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyModel, TINY_DEFAULTS } from '../../src/model/tiny-model.ts';
import type { TinyVisionShape } from '../../src/model/tiny-vision.ts';
import type { Checkpoint, LayerType } from '../../src/model/types.ts';
import type { Engine, OptimizerConfig, ScoreSequence } from '../../src/engine/types.ts';
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

/** Qwen3-0.6B's shapes (config.json of Qwen/Qwen3-0.6B), as bench options. */
export const QWEN3_0_6B = { hidden: '1024', layers: '28', heads: '16', kvHeads: '8', headDim: '128', intermediate: '3072', vocab: '151936' };

/**
 * Qwen3.5-0.8B's text model (text_config of Qwen/Qwen3.5-0.8B, tests/model/config.test.ts): 24 layers, every
 * 4th full (gated) attention with 8 / 2 heads of 256, the rest Gated DeltaNet with 16 key / 16 value heads
 * of 128, intermediate 3584, a tied 248320-row embedding.
 */
export const QWEN3_5_0_8B = {
  arch: 'qwen3_5', hidden: '1024', layers: '24', heads: '8', kvHeads: '2', headDim: '256', intermediate: '3584', vocab: '248320',
  linearKeyHeads: '16', linearValueHeads: '16', linearKeyHeadDim: '128', linearValueHeadDim: '128', fullAttentionInterval: '4',
};

/**
 * Qwen3.5-0.8B's vision tower (vision_config of Qwen/Qwen3.5-0.8B, tests/model/config.test.ts): 12 blocks of
 * width 768 (12 heads of 64), MLP 3072, a 48×48 learned position grid; patch 16, 2 frames, 2×2 merge into
 * the text model's hidden size. The default tower of `--vision on`.
 */
export const QWEN3_5_0_8B_VISION = { visionDepth: '12', visionHidden: '768', visionIntermediate: '3072', visionHeads: '12', visionPositions: '2304' };

/**
 * Qwen3.5-2B, the seeds' model (TRL's BrowserGym example), text and vision tower. Text (text_config of
 * Qwen/Qwen3.5-2B): 24 layers, every 4th gated full attention with 8 / 2 heads of 256, the rest Gated DeltaNet
 * with 16 key / 16 value heads of 128, hidden 2048, intermediate 6144, a tied 248320-row embedding. Tower
 * (vision_config): 24 blocks of width 1024 (16 heads of 64), MLP 4096, the 48×48 position grid, 2×2 merge into
 * 2048. Where these numbers came from: BENCHMARKS.md, "The seeds' run".
 */
export const QWEN3_5_2B = {
  ...QWEN3_5_0_8B, hidden: '2048', intermediate: '6144',
  visionDepth: '24', visionHidden: '1024', visionIntermediate: '4096', visionHeads: '16', visionPositions: '2304',
};

/** The named shape presets (`--shape`): options given beside a preset override its fields. */
export const SHAPES: Record<string, Record<string, string>> = { 'qwen3-0.6b': QWEN3_0_6B, 'qwen3.5-0.8b': QWEN3_5_0_8B, 'qwen3.5-2b': QWEN3_5_2B };

/** The options with `--shape NAME` expanded (explicit options win). */
export function withShape(opts: Record<string, string>): Record<string, string> {
  if (opts.shape === undefined) return opts;
  const preset = SHAPES[opts.shape];
  if (!preset) throw new Error(`bench: --shape must be one of ${Object.keys(SHAPES).join(', ')}, got '${opts.shape}'`);
  return { ...preset, ...opts };
}

/** The generated model's layer types: Qwen3.5 puts full attention on every `fullAttentionInterval`-th layer (transformers' default 4). */
function benchLayerTypes(opts: Record<string, string>, layers: number): LayerType[] {
  const every = num(opts, 'fullAttentionInterval', 4);
  return Array.from({ length: layers }, (_, i) => ((i + 1) % every === 0 ? 'full_attention' : 'linear_attention'));
}

/** `--vision on`: the generated Qwen3.5's tower shape (`--visionDepth` … `--visionPositions`, default Qwen3.5-0.8B's). */
function benchVisionShape(opts: Record<string, string>): TinyVisionShape {
  const o = { ...QWEN3_5_0_8B_VISION, ...opts };
  return {
    depth: num(o, 'visionDepth', 0), hidden_size: num(o, 'visionHidden', 0), intermediate_size: num(o, 'visionIntermediate', 0),
    num_heads: num(o, 'visionHeads', 0), num_position_embeddings: num(o, 'visionPositions', 0),
  };
}

/**
 * `--model DIR|repo`, else a generated model: Qwen3 (hidden 256, 4 layers, vocab 2048 unless overridden),
 * or with `--arch qwen3_5` a Qwen3.5 hybrid (`--linearKeyHeads` … `--fullAttentionInterval`), with
 * `--vision on` a Qwen3.5 vision-language model (its tower: benchVisionShape); `--shape` names a preset (SHAPES).
 */
export async function benchCheckpoint(options: Record<string, string>, dtype: 'bf16' | 'f32'): Promise<{ ckpt: Checkpoint; source: string }> {
  const opts = withShape(options);
  if (opts.model) return { ckpt: await openCheckpoint(opts.model), source: opts.model };
  const arch = opts.arch ?? 'qwen3';
  if (arch !== 'qwen3' && arch !== 'qwen3_5') throw new Error(`bench: --arch must be qwen3 or qwen3_5, got '${arch}'`);
  const vision = opts.vision === 'on';
  if (opts.vision !== undefined && !vision && opts.vision !== 'off') throw new Error(`bench: --vision must be on or off, got '${opts.vision}'`);
  if (vision && arch !== 'qwen3_5') throw new Error('bench: --vision on needs --arch qwen3_5 (a Qwen3.5 vision-language model)');
  const shape = {
    hidden: num(opts, 'hidden', 256),
    layers: num(opts, 'layers', 4),
    heads: num(opts, 'heads', 4),
    kvHeads: num(opts, 'kvHeads', 2),
    headDim: num(opts, 'headDim', 64),
    intermediate: num(opts, 'intermediate', 768),
    vocab: num(opts, 'vocab', 2048),
  };
  const hybrid = arch === 'qwen3_5'
    ? {
      arch: 'qwen3_5' as const,
      linearKeyHeads: num(opts, 'linearKeyHeads', TINY_DEFAULTS.linearKeyHeads),
      linearValueHeads: num(opts, 'linearValueHeads', TINY_DEFAULTS.linearValueHeads),
      linearKeyHeadDim: num(opts, 'linearKeyHeadDim', TINY_DEFAULTS.linearKeyHeadDim),
      linearValueHeadDim: num(opts, 'linearValueHeadDim', TINY_DEFAULTS.linearValueHeadDim),
      layerTypes: benchLayerTypes(opts, shape.layers),
      ...(vision ? { vision: true, visionShape: benchVisionShape(opts) } : {}),
    }
    : {};
  // Generating a 0.6B-shaped model takes minutes of single-threaded JS: one per shape and dtype per
  // process (the GPU-bench archive runs the train bench twice on the same model).
  const shapeKey = JSON.stringify({ ...shape, ...hybrid });
  const key = `${dtype} ${shapeKey}`;
  let files = generated.get(key);
  if (!files) {
    // Keep only this shape's models (both dtypes): the archive benches two 0.6B–0.8B shapes one after the other.
    for (const k of generated.keys()) if (!k.endsWith(` ${shapeKey}`)) generated.delete(k);
    files = (await makeTinyModel({ seed: 1, dtype, ...shape, ...hybrid })).files;
    generated.set(key, files);
  }
  const { layerTypes: _types, ...described } = hybrid as { layerTypes?: LayerType[] };
  return { ckpt: await openCheckpoint(files), source: `generated ${JSON.stringify({ ...shape, ...described, ...(arch === 'qwen3_5' ? { fullAttentionInterval: num(opts, 'fullAttentionInterval', 4) } : {}) })}` };
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

/** One timed training step over a fixed batch: backward, then the optimizer (ms of each part and the whole). */
export function timedTrainStep(engine: Pick<Engine, 'backward' | 'step'>, batch: { sequences: ScoreSequence[]; dLdLogp: Float32Array[]; opt: OptimizerConfig }): () => Promise<{ backwardMs: number; stepMs: number }> {
  const { sequences, dLdLogp, opt } = batch;
  return async () => {
    const t0 = now();
    await engine.backward({ sequences, temperature: 1, dLdLogp });
    const t1 = now();
    await engine.step(opt);
    return { backwardMs: t1 - t0, stepMs: now() - t0 };
  };
}
