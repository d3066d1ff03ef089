// How a checkpoint's weight matrices are stored on the GPU, and what that costs in log-prob accuracy.
// `auto` keeps the checkpoint's own precision where the adapter can hold it: f32 stays f32 (a user
// comparing with transformers must not see f16's error by default); bf16 goes to f16 on adapters
// with shader-f16, where it is exact but for values below f16's normal range; f16 stays f16 there.
// It lowers f32 to f16 only when the memory plan does not fit in f32 but does in f16, and says so.
// The same rule for `score`/`generate`/`train` (loadEngine) and the app's model load.

import type { DType } from '../model/types.ts';
import type { GpuDtype } from './memory-plan.ts';

export type WeightChoice = 'auto' | GpuDtype;

export interface WeightPrecision {
  /** The dtype the checkpoint stores its matrices in ('mixed' when they differ). */
  checkpoint: DType | 'mixed';
  /** How the matrices sit on the GPU (norm weights are always f32). */
  stored: GpuDtype;
  /** Why, in one sentence, with the expected error when the values change. */
  reason: string;
  /** Typical largest log-prob difference from scoring the checkpoint's exact values (0: none). */
  expectedLogprobError: number;
}

/**
 * Log-prob error of f32 weights stored in f16 (each rounded to 11 significant bits), as measured
 * against transformers on issue 26's checkpoints (base 2.25e-3, adapter 2.04e-3, a full-FT export
 * 1.94e-3). It grows with the logits' spread: 1.3e-2 on the sharp tiny model of
 * tests/fixtures/transformers-qwen3-f32.
 */
export const F32_AS_F16_LOGPROB_ERROR = 2e-3;
/**
 * bf16 weights in f16 (f16 has 3 more mantissa bits, so every bf16 value in f16's normal range is
 * exact): 7.5e-6 measured against transformers on lavapipe (tests/engine/gpu-transformers-bf16.test.ts).
 */
export const BF16_AS_F16_LOGPROB_ERROR = 1e-5;

/** The dtype of the checkpoint's matrices (2-D tensors: what the choice applies to). */
export function matrixDtypeOf(tensors: Iterable<{ dtype: DType; shape: readonly number[] }>): DType | 'mixed' {
  const seen = new Set<DType>();
  for (const t of tensors) if (t.shape.length === 2) seen.add(t.dtype);
  if (seen.size === 0) return 'F32';
  return seen.size === 1 ? [...seen][0]! : 'mixed';
}

function errorIn(stored: GpuDtype, checkpoint: DType | 'mixed'): number {
  if (stored === 'f32' || checkpoint === 'F16') return 0;
  return checkpoint === 'BF16' ? BF16_AS_F16_LOGPROB_ERROR : F32_AS_F16_LOGPROB_ERROR;
}

function inF16(checkpoint: DType | 'mixed'): string {
  if (checkpoint === 'F16') return 'f16 weights kept in f16 (exact)';
  if (checkpoint === 'BF16') return `bf16 weights in f16: exact but for values below 6.1e-5 (log-probs within ~${BF16_AS_F16_LOGPROB_ERROR.toExponential(0)})`;
  return `${checkpoint === 'mixed' ? 'mixed-precision' : 'f32'} weights rounded to f16 (log-probs typically off by ~${F32_AS_F16_LOGPROB_ERROR.toExponential(0)}, more with sharp logits)`;
}

export interface PrecisionInput {
  wanted: WeightChoice;
  checkpoint: DType | 'mixed';
  /** The adapter has shader-f16. */
  f16: boolean;
  /** Whether the run's memory plan fits with the matrices in `dtype`. */
  fits: (dtype: GpuDtype) => boolean;
}

export function chooseWeightPrecision({ wanted, checkpoint, f16, fits }: PrecisionInput): WeightPrecision {
  const result = (stored: GpuDtype, reason: string): WeightPrecision => ({ checkpoint, stored, reason, expectedLogprobError: errorIn(stored, checkpoint) });
  if (wanted === 'f32') return result('f32', `f32 as asked${checkpoint === 'F32' ? '' : ` (the ${checkpoint.toLowerCase()} values exactly)`}`);
  if (wanted === 'f16') return result('f16', `f16 as asked: ${inF16(checkpoint)}`);
  const halves = checkpoint === 'BF16' || checkpoint === 'F16';
  // 16-bit checkpoints go to f16 where kernels read halves natively; elsewhere f32 holds them exactly.
  const natural: GpuDtype = halves && f16 ? 'f16' : 'f32';
  if (natural === 'f16') return result('f16', `the checkpoint's precision where the adapter has shader-f16: ${inF16(checkpoint)}`);
  if (fits('f32') || !fits('f16')) return result('f32', halves ? `the ${checkpoint.toLowerCase()} values exactly (this adapter has no shader-f16)` : "the checkpoint's own precision");
  return result('f16', `lowered: the run's memory plan does not fit this adapter in f32, it does in f16: ${inF16(checkpoint)}`);
}
