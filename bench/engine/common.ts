// Shared by the engine benchmarks: option parsing and the benchmark model (a checkpoint folder or
// a generated random Qwen3 of a given shape).
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import type { Checkpoint } from '../../src/model/types.ts';
import type { Qwen3Forward } from '../../src/engine/forward.ts';

export const num = (opts: Record<string, string>, key: string, dflt: number): number => {
  if (opts[key] === undefined) return dflt;
  const v = Number(opts[key]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`bench: --${key} must be a positive number, got '${opts[key]}'`);
  return v;
};

export const now = () => performance.now();

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
  const model = await makeTinyModel({ seed: 1, dtype, ...shape });
  return { ckpt: await openCheckpoint(model.files), source: `generated ${JSON.stringify(shape)}` };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export type MatmulVariant = 'blocked' | 'tiled';

/**
 * GFLOP/s of the engine's forward matmul y = x·Wᵀ at (M, N, K) for each variant × weight storage:
 * median of 5 timed submits after 2 warm-up runs (the first ones compile the pipeline).
 */
export async function matmulPeak(fwd: Qwen3Forward, M: number, N: number, K: number, variants: readonly MatmulVariant[]) {
  const dev = fwd.device;
  const x = fwd.createBuffer('bench x', M * K * 4);
  const w = fwd.createBuffer('bench W', N * K * 4);
  const y = fwd.createBuffer('bench y', M * N * 4);
  dev.queue.writeBuffer(x, 0, Float32Array.from({ length: M * K }, (_, i) => Math.sin(i) * 0.5));
  dev.queue.writeBuffer(w, 0, Float32Array.from({ length: N * K }, (_, i) => Math.cos(i) * 0.5));
  const results: { variant: MatmulVariant; weights: 'f32' | 'f16'; gflops: number }[] = [];
  for (const variant of variants) {
    for (const wDtype of ['f32', 'f16'] as const) {
      const times: number[] = [];
      for (let rep = 0; rep < 7; rep++) {
        const rec = fwd.recorder('bench matmul');
        fwd.encodeMatmul(rec, { x, w, wDtype, y, M, N, K, variant });
        const t0 = now();
        await rec.submit();
        await dev.queue.onSubmittedWorkDone();
        if (rep >= 2) times.push(now() - t0);
      }
      results.push({ variant, weights: wDtype, gflops: (2 * M * N * K) / (median(times) / 1000) / 1e9 });
    }
  }
  for (const b of [x, w, y]) b.destroy();
  return results;
}
