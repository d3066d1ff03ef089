// Shared by the engine benchmarks: option parsing and the benchmark model (a checkpoint folder or
// a generated random Qwen3 of a given shape).
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import type { Checkpoint } from '../../src/model/types.ts';

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
