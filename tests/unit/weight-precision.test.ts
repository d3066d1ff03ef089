// `--weights auto` (and the app's auto): the checkpoint's own precision where the adapter holds it,
// f16 only when the memory plan needs it, and always the reason with the expected log-prob error.
import { describe, expect, it } from 'vitest';
import { BF16_AS_F16_LOGPROB_ERROR, chooseWeightPrecision, F32_AS_F16_LOGPROB_ERROR, matrixDtypeOf } from '../../src/engine/weight-precision.ts';

const fitsAll = () => true;
const fitsF16Only = (d: 'f16' | 'f32') => d === 'f16';

describe('weight precision', () => {
  it('auto keeps f32 in f32 even with shader-f16, and lowers it to f16 only when the plan needs it, saying so', () => {
    expect(chooseWeightPrecision({ wanted: 'auto', checkpoint: 'F32', f16: true, fits: fitsAll })).toEqual({
      checkpoint: 'F32', stored: 'f32', reason: "the checkpoint's own precision", expectedLogprobError: 0,
    });
    const lowered = chooseWeightPrecision({ wanted: 'auto', checkpoint: 'F32', f16: true, fits: fitsF16Only });
    expect(lowered).toMatchObject({ stored: 'f16', expectedLogprobError: F32_AS_F16_LOGPROB_ERROR });
    expect(lowered.reason).toBe("lowered: the run's memory plan does not fit this adapter in f32, it does in f16: f32 weights rounded to f16 (log-probs typically off by ~2e-3, more with sharp logits)");
    // Nothing fits: f32 stays, and the load reports the f32 plan's problem.
    expect(chooseWeightPrecision({ wanted: 'auto', checkpoint: 'F32', f16: true, fits: () => false }).stored).toBe('f32');
  });

  it('auto puts bf16 and f16 checkpoints in f16 where the adapter has shader-f16, and holds them exactly in f32 elsewhere', () => {
    const bf16 = chooseWeightPrecision({ wanted: 'auto', checkpoint: 'BF16', f16: true, fits: fitsAll });
    expect(bf16).toMatchObject({ stored: 'f16', expectedLogprobError: BF16_AS_F16_LOGPROB_ERROR });
    expect(bf16.reason).toMatch(/bf16 weights in f16: exact but for values below 6\.1e-5/);
    expect(chooseWeightPrecision({ wanted: 'auto', checkpoint: 'F16', f16: true, fits: fitsAll })).toMatchObject({ stored: 'f16', expectedLogprobError: 0 });
    expect(chooseWeightPrecision({ wanted: 'auto', checkpoint: 'BF16', f16: false, fits: fitsAll })).toMatchObject({ stored: 'f32', expectedLogprobError: 0 });
    expect(chooseWeightPrecision({ wanted: 'auto', checkpoint: 'BF16', f16: false, fits: fitsF16Only })).toMatchObject({ stored: 'f16', expectedLogprobError: BF16_AS_F16_LOGPROB_ERROR });
  });

  it('an explicit choice is kept, with its cost stated', () => {
    expect(chooseWeightPrecision({ wanted: 'f16', checkpoint: 'F32', f16: false, fits: fitsAll })).toMatchObject({ stored: 'f16', expectedLogprobError: F32_AS_F16_LOGPROB_ERROR });
    expect(chooseWeightPrecision({ wanted: 'f32', checkpoint: 'BF16', f16: true, fits: fitsAll })).toMatchObject({ stored: 'f32', reason: 'f32 as asked (the bf16 values exactly)' });
  });

  it('the checkpoint dtype is its matrices\' (norm vectors do not count), or mixed', () => {
    expect(matrixDtypeOf([{ dtype: 'BF16', shape: [4, 4] }, { dtype: 'F32', shape: [4] }])).toBe('BF16');
    expect(matrixDtypeOf([{ dtype: 'BF16', shape: [4, 4] }, { dtype: 'F32', shape: [4, 4] }])).toBe('mixed');
    expect(chooseWeightPrecision({ wanted: 'auto', checkpoint: 'mixed', f16: true, fits: fitsAll }).stored).toBe('f32');
  });
});
