import { describe, expect, it } from 'vitest';
import { computeLoss, type LossOptions, type LossSequence } from '../../src/rl/grpo/losses.ts';
import type { LossType, SamplingLevel } from '../../src/rl/config.ts';

const base: LossOptions = {
  lossType: 'dapo',
  epsilonLow: 0.2,
  epsilonHigh: 0.2,
  delta: null,
  beta: 0,
  importanceSamplingLevel: 'token',
  topEntropyQuantile: 1,
  entropyCoef: 0,
  useBiasCorrectionKl: false,
  gradientAccumulationSteps: 1,
  maxCompletionLength: 16,
  numItemsInBatch: 4,
};

const onPolicy = (): LossSequence[] => [
  { logp: [-1, -2, -3], mask: [1, 1, 0], advantage: 1.5 },
  { logp: [-0.5, -0.7], mask: [1, 1], advantage: -0.5 },
];

describe('losses: hand-computed numbers', () => {
  it('dapo on-policy: loss = −Σ A·m / N_tok, gradient −A/N_tok on trained tokens only', () => {
    const out = computeLoss(onPolicy(), base);
    expect(out.loss).toBeCloseTo(-0.5, 12);
    expect(Array.from(out.dLdLogp[0]!)).toEqual([-0.375, -0.375, 0]);
    expect(Array.from(out.dLdLogp[1]!)).toEqual([0.125, 0.125]);
    expect(out.metrics.clipRegionMean).toBe(0);
    expect(out.metrics.tokens).toBe(4);
  });

  it('dapo normalizes by the whole generation batch, not the micro-batch, and never ÷GAS', () => {
    const out = computeLoss(onPolicy(), { ...base, numItemsInBatch: 8, gradientAccumulationSteps: 2 });
    expect(out.loss).toBeCloseTo(-0.25, 12);
    expect(out.dLdLogp[0]![0]).toBeCloseTo(-0.1875, 7);
  });

  it('grpo: mean over sequences of the per-sequence token mean, ÷GAS', () => {
    const out = computeLoss(onPolicy(), { ...base, lossType: 'grpo', gradientAccumulationSteps: 2 });
    // ((−1.5·2/2) + (0.5·2/2)) / 2 sequences / 2 GAS
    expect(out.loss).toBeCloseTo(-0.25, 12);
    expect(out.dLdLogp[0]![0]).toBeCloseTo(-1.5 / 8, 7);
    expect(out.dLdLogp[1]![1]).toBeCloseTo(0.5 / 8, 7);
  });

  it('bnpo: Σ over the micro-batch ÷ its tokens ÷ GAS; dr_grpo: ÷ (B · max_completion_length) ÷ GAS', () => {
    const bnpo = computeLoss(onPolicy(), { ...base, lossType: 'bnpo', gradientAccumulationSteps: 2 });
    expect(bnpo.loss).toBeCloseTo(-2 / 4 / 2, 12);
    const dr = computeLoss(onPolicy(), { ...base, lossType: 'dr_grpo', gradientAccumulationSteps: 2 });
    expect(dr.loss).toBeCloseTo(-2 / (2 * 16) / 2, 12);
    expect(dr.dLdLogp[0]![1]).toBeCloseTo(-1.5 / 64, 7);
  });

  it('clipping: ratio outside [1−ε, 1+ε_high] on the pessimistic side gets no gradient, and is counted', () => {
    const ln = Math.log;
    const seqs: LossSequence[] = [
      // ρ = 1.5, A = +1 → clipped to 1.2 (high), no gradient
      { logp: [ln(1.5)], logpOld: [0], mask: [1], advantage: 1 },
      // ρ = 0.5, A = −1 → clipped to 0.8 (low), no gradient
      { logp: [ln(0.5)], logpOld: [0], mask: [1], advantage: -1 },
      // ρ = 0.5, A = +1 → the unclipped term is smaller: ℓ = −0.5, gradient −A·ρ
      { logp: [ln(0.5)], logpOld: [0], mask: [1], advantage: 1 },
    ];
    const out = computeLoss(seqs, { ...base, numItemsInBatch: 3 });
    expect(out.loss).toBeCloseTo((-1.2 + 0.8 - 0.5) / 3, 12);
    expect(out.dLdLogp[0]![0]).toBe(0);
    expect(out.dLdLogp[1]![0]).toBe(0);
    expect(out.dLdLogp[2]![0]).toBeCloseTo(-0.5 / 3, 7);
    expect(out.metrics.clipHighMean).toBeCloseTo(1 / 3, 12);
    expect(out.metrics.clipLowMean).toBeCloseTo(1 / 3, 12);
    expect(out.metrics.clipRegionMean).toBeCloseTo(2 / 3, 12);
    expect(out.metrics.clipLowMin).toBe(0);
    expect(out.metrics.clipHighMax).toBe(1);
  });

  it('epsilon_high widens only the upper bound; delta caps the unclipped ratio', () => {
    const seq: LossSequence[] = [{ logp: [Math.log(1.5)], logpOld: [0], mask: [1], advantage: 1 }];
    const wide = computeLoss(seq, { ...base, epsilonHigh: 0.6, numItemsInBatch: 1 });
    expect(wide.loss).toBeCloseTo(-1.5, 12);
    expect(wide.dLdLogp[0]![0]).toBeCloseTo(-1.5, 6);
    // A < 0, ρ = 1.5: −min(−1.5, −1.2) = 1.5 unclipped; delta = 1.4 caps it → 1.4 and no gradient
    const neg: LossSequence[] = [{ logp: [Math.log(1.5)], logpOld: [0], mask: [1], advantage: -1 }];
    expect(computeLoss(neg, { ...base, numItemsInBatch: 1 }).loss).toBeCloseTo(1.5, 12);
    const capped = computeLoss(neg, { ...base, delta: 1.4, numItemsInBatch: 1 });
    expect(capped.loss).toBeCloseTo(1.4, 12);
    expect(capped.dLdLogp[0]![0]).toBe(0);
  });

  it('k3 KL: β·(e^{ref−logp} − (ref−logp) − 1), gradient β·(1 − e^{ref−logp}) through logp only', () => {
    const seq: LossSequence[] = [{ logp: [-1], logpRef: [-1.5], mask: [1], advantage: 0 }];
    const out = computeLoss(seq, { ...base, beta: 0.1, numItemsInBatch: 1 });
    const kl = Math.exp(-0.5) + 0.5 - 1;
    expect(out.loss).toBeCloseTo(0.1 * kl, 12);
    expect(out.metrics.kl).toBeCloseTo(kl, 12);
    expect(out.dLdLogp[0]![0]).toBeCloseTo(0.1 * (1 - Math.exp(-0.5)), 7);
  });

  it('sequence-level ratio (GSPO) is the masked mean of Δ, shared by every token', () => {
    // Δ = [0.2, 0.4, (masked 5)] → log w = 0.3, ρ = e^0.3 > 1.2, A = +1 → clipped high, no gradient
    const seq: LossSequence[] = [{ logp: [0.2, 0.4, 5], logpOld: [0, 0, 0], mask: [1, 1, 0], advantage: 1 }];
    const out = computeLoss(seq, { ...base, importanceSamplingLevel: 'sequence', numItemsInBatch: 2 });
    expect(out.loss).toBeCloseTo(-1.2, 12);
    expect(out.metrics.clipHighMean).toBe(1);
    expect(Array.from(out.dLdLogp[0]!)).toEqual([0, 0, 0]);
  });

  it('top_entropy_quantile keeps only the highest-entropy trained tokens', () => {
    const seq: LossSequence[] = [{ logp: [-1, -1, -1, -1], entropy: [0.1, 0.9, 0.5, 2.0], mask: [1, 1, 1, 0], advantage: 1 }];
    // trained entropies [0.1, 0.9, 0.5]; keep the top 1/3 → quantile(·, 2/3) = 0.9 → only token 1
    const out = computeLoss(seq, { ...base, topEntropyQuantile: 1 / 3, numItemsInBatch: 3 });
    expect(Array.from(out.dLdLogp[0]!).map((g) => +g.toFixed(6))).toEqual([0, -0.333333, 0, 0]);
    expect(out.metrics.entropy).toBeCloseTo(0.5, 12);
  });

  it('entropy bonus lowers the loss by coef · Σ H·m / N_tok and returns dL/dH', () => {
    const seq: LossSequence[] = [{ logp: [-1, -1], entropy: [1, 3], mask: [1, 1], advantage: 0 }];
    const out = computeLoss(seq, { ...base, entropyCoef: 0.5, numItemsInBatch: 2 });
    expect(out.loss).toBeCloseTo(-0.5 * 4 / 2, 12);
    expect(Array.from(out.dLdEntropy![0]!)).toEqual([-0.25, -0.25]);
  });

  it('names the problem on bad input', () => {
    expect(() => computeLoss([{ logp: [-1, -2], mask: [1], advantage: 0 }], base)).toThrow(/mask has 1 tokens, logp has 2/);
    expect(() => computeLoss([{ logp: [-1], mask: [1], advantage: 0 }], { ...base, beta: 0.1 })).toThrow(/reference log-probs/);
  });
});

// A small deterministic generator so the finite-difference cases are fixed.
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('losses: finite differences of the scalar loss match dL/dlogp', () => {
  const types: LossType[] = ['dapo', 'grpo', 'bnpo', 'dr_grpo'];
  const levels: SamplingLevel[] = ['token', 'sequence'];
  for (const lossType of types) {
    for (const level of levels) {
      for (const variant of ['plain', 'kl+delta+bias', 'entropy']) {
        it(`${lossType} / ${level} / ${variant}`, () => {
          const rand = lcg(lossType.length * 31 + level.length * 7 + variant.length);
          const lengths = [5, 3, 6];
          const seqs: LossSequence[] = lengths.map((T, i) => {
            const logpOld = Float64Array.from({ length: T }, () => -0.5 - 2 * rand());
            return {
              // ratios spread across and beyond the clip range
              logp: logpOld.map((x) => x + (rand() - 0.5) * 0.8),
              logpOld,
              logpRef: Float64Array.from({ length: T }, () => -0.5 - 2 * rand()),
              entropy: Float64Array.from({ length: T }, () => 3 * rand()),
              mask: Float64Array.from({ length: T }, (_, t) => (t === 1 && i === 0 ? 0 : 1)),
              advantage: [1.2, -0.7, 0.3][i]!,
            };
          });
          const opts: LossOptions = {
            ...base,
            lossType,
            importanceSamplingLevel: level,
            epsilonHigh: 0.28,
            gradientAccumulationSteps: 3,
            numItemsInBatch: 20,
            ...(variant === 'kl+delta+bias' ? { beta: 0.3, delta: 1.1, useBiasCorrectionKl: true } : {}),
            ...(variant === 'entropy' ? { entropyCoef: 0.2, topEntropyQuantile: 0.7 } : {}),
          };
          const out = computeLoss(seqs, opts);
          const h = 1e-6;
          let checked = 0;
          seqs.forEach((s, i) => {
            for (let t = 0; t < s.logp.length; t++) {
              const at = (dx: number) => {
                const logp = Float64Array.from(s.logp);
                logp[t]! += dx;
                const copy = seqs.map((q, j) => (j === i ? { ...q, logp } : q));
                return computeLoss(copy, opts).loss;
              };
              const fd = (at(h) - at(-h)) / (2 * h);
              expect(out.dLdLogp[i]![t]).toBeCloseTo(fd, 5);
              if (fd !== 0) checked++;
            }
          });
          expect(checked).toBeGreaterThan(3);
          if (variant === 'entropy') {
            // the bonus term's gradient w.r.t. entropy (the threshold is held fixed by using a tiny step)
            const s = seqs[2]!;
            const withH = (dx: number) => {
              const entropy = Float64Array.from(s.entropy!);
              entropy[0]! += dx;
              return computeLoss(seqs.map((q, j) => (j === 2 ? { ...q, entropy } : q)), { ...opts, topEntropyQuantile: 1 }).loss;
            };
            const fd = (withH(h) - withH(-h)) / (2 * h);
            expect(computeLoss(seqs, { ...opts, topEntropyQuantile: 1 }).dLdEntropy![2]![0]).toBeCloseTo(fd, 6);
          }
        });
      }
    }
  }
});
