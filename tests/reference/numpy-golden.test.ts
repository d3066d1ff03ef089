import { describe, expect, it } from 'vitest';
import { refLogits } from '../../src/engine/reference/qwen3.ts';
import { GOLDEN_CONFIG, GOLDEN_IDS, goldenLora, goldenWeights } from './golden/golden-case.ts';
import golden from './golden/numpy-logits.json' with { type: 'json' };

function maxAbsDiff(ours: Float64Array[], theirs: number[][]): number {
  expect(ours).toHaveLength(theirs.length);
  let worst = 0;
  ours.forEach((row, t) => {
    expect(row).toHaveLength(theirs[t].length);
    row.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - theirs[t][j]))));
  });
  return worst;
}

describe('reference forward vs an independent numpy transcription of transformers Qwen3', () => {
  // tied head, GQA H=4 K=2, head_dim 8 ≠ 24/4, θ = 1e6, T = 9 (golden/numpy_forward.py)
  it('base model logits agree to 1e-12', () => {
    expect(maxAbsDiff(refLogits(GOLDEN_CONFIG, goldenWeights(), GOLDEN_IDS), golden.logits)).toBeLessThan(1e-12);
  });

  it('logits with LoRA on q_proj, o_proj, down_proj agree to 1e-12', () => {
    expect(maxAbsDiff(refLogits(GOLDEN_CONFIG, goldenWeights(), GOLDEN_IDS, goldenLora()), golden.logitsLora)).toBeLessThan(1e-12);
  });
});
