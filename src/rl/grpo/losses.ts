// The GRPO losses (specs/grpo-semantics.md §11) as functions from per-token log-probs to a scalar
// loss and its exact gradient dL/dlogp per token. The engine knows nothing about RL: it receives
// dL/dlogp and backpropagates it (DESIGN.md). Everything here is small CPU arrays.

import type { LossType, SamplingLevel } from '../config.ts';
import { quantile } from './stats.ts';

/** One completion of a micro-batch; every array has one entry per completion token. */
export interface LossSequence {
  /** Current policy log-probs (temperature-scaled). */
  logp: ArrayLike<number>;
  /** Log-probs at generation time; absent = on-policy (logp detached, so ρ ≡ 1 but the gradient still flows). */
  logpOld?: ArrayLike<number>;
  /** Reference-policy log-probs; required when beta ≠ 0. */
  logpRef?: ArrayLike<number>;
  /** Per-token entropy (nats); required for the entropy bonus and top_entropy_quantile < 1. */
  entropy?: ArrayLike<number>;
  /** m = completion_mask × tool_mask (1 = trained). */
  mask: ArrayLike<number>;
  advantage: number;
}

export interface LossOptions {
  lossType: LossType;
  /** ε_low (TRL `epsilon`). */
  epsilonLow: number;
  /** ε_high (TRL `epsilon_high`, defaulting to epsilon). */
  epsilonHigh: number;
  /** Cap on the unclipped ratio (TRL `delta`), null = off. */
  delta: number | null;
  beta: number;
  importanceSamplingLevel: SamplingLevel;
  topEntropyQuantile: number;
  entropyCoef: number;
  useBiasCorrectionKl: boolean;
  gradientAccumulationSteps: number;
  maxCompletionLength: number;
  /** dapo's N_tok: Σ m over the whole generation batch (the same for every micro-batch). */
  numItemsInBatch: number;
}

export interface LossMetrics {
  /** Masked means over the micro-batch (TRL's masked_batch_mean). */
  clipLowMean: number;
  clipHighMean: number;
  clipRegionMean: number;
  /** Extremes of the per-sequence masked means. */
  clipLowMin: number;
  clipHighMax: number;
  /** Masked mean of the k3 KL; NaN when beta = 0. */
  kl: number;
  /** Masked mean entropy; NaN when entropies were not given. */
  entropy: number;
  /** The loss without the entropy bonus. */
  policyLoss: number;
  /** Trained tokens of this micro-batch. */
  tokens: number;
}

export interface LossOutput {
  loss: number;
  dLdLogp: Float32Array[];
  /** dL/dH per token; non-null only when entropyCoef ≠ 0. */
  dLdEntropy: Float32Array[] | null;
  metrics: LossMetrics;
}

/** Resolves the loss options from a GRPOConfig-shaped object. */
export function lossOptionsFromConfig(
  c: {
    loss_type: LossType;
    epsilon: number;
    epsilon_high: number | null;
    delta: number | null;
    beta: number;
    importance_sampling_level: SamplingLevel;
    top_entropy_quantile: number;
    entropy_coef: number;
    use_bias_correction_kl: boolean;
    gradient_accumulation_steps: number;
    max_completion_length: number;
  },
  numItemsInBatch: number,
): LossOptions {
  return {
    lossType: c.loss_type,
    epsilonLow: c.epsilon,
    epsilonHigh: c.epsilon_high ?? c.epsilon,
    delta: c.delta,
    beta: c.beta,
    importanceSamplingLevel: c.importance_sampling_level,
    topEntropyQuantile: c.top_entropy_quantile,
    entropyCoef: c.entropy_coef,
    useBiasCorrectionKl: c.use_bias_correction_kl,
    gradientAccumulationSteps: c.gradient_accumulation_steps,
    maxCompletionLength: c.max_completion_length,
    numItemsInBatch,
  };
}

function sumMask(mask: ArrayLike<number>): number {
  let s = 0;
  for (let t = 0; t < mask.length; t++) s += mask[t]!;
  return s;
}

function checkShapes(seq: LossSequence, i: number, opts: LossOptions): void {
  const T = seq.logp.length;
  const same = (name: string, a: ArrayLike<number> | undefined) => {
    if (a !== undefined && a.length !== T) throw new Error(`loss: sequence ${i}: ${name} has ${a.length} tokens, logp has ${T}`);
  };
  same('mask', seq.mask);
  same('logpOld', seq.logpOld);
  same('logpRef', seq.logpRef);
  same('entropy', seq.entropy);
  if (opts.beta !== 0 && !seq.logpRef) throw new Error(`loss: sequence ${i}: beta ≠ 0 needs reference log-probs (logpRef)`);
  if ((opts.entropyCoef !== 0 || opts.topEntropyQuantile < 1) && !seq.entropy) {
    throw new Error(`loss: sequence ${i}: entropy_coef / top_entropy_quantile need per-token entropies`);
  }
}

/**
 * Per-token normalizer w such that loss = Σ_{i,t} w_i · m_it · ℓ_it (§11 "Normalizers").
 * Returns one weight per sequence.
 */
function normalizerWeights(seqs: LossSequence[], opts: LossOptions, tokensInMicroBatch: number): number[] {
  const B = seqs.length;
  const gas = opts.gradientAccumulationSteps;
  switch (opts.lossType) {
    case 'grpo':
      return seqs.map((s) => 1 / (Math.max(sumMask(s.mask), 1) * B * gas));
    case 'bnpo':
      return seqs.map(() => 1 / (Math.max(tokensInMicroBatch, 1) * gas));
    case 'dr_grpo':
      return seqs.map(() => 1 / (B * opts.maxCompletionLength * gas));
    case 'dapo':
      return seqs.map(() => 1 / Math.max(opts.numItemsInBatch, 1));
  }
}

/** The loss of one micro-batch and its gradient with respect to every completion token's logp. */
export function computeLoss(seqs: LossSequence[], opts: LossOptions): LossOutput {
  seqs.forEach((s, i) => checkShapes(s, i, opts));
  const lo = 1 - opts.epsilonLow;
  const hi = 1 + opts.epsilonHigh;
  const tokens = seqs.reduce((n, s) => n + sumMask(s.mask), 0);
  const weights = normalizerWeights(seqs, opts, tokens);

  // Entropy mask: keep tokens whose entropy reaches the (1 − top_entropy_quantile) quantile of the
  // micro-batch's trained tokens (TRL's get_high_entropy_mask).
  let entropyThreshold = -Infinity;
  if (opts.topEntropyQuantile < 1) {
    const trained: number[] = [];
    for (const s of seqs) for (let t = 0; t < s.mask.length; t++) if (s.mask[t]) trained.push(s.entropy![t]!);
    entropyThreshold = quantile(trained, 1 - opts.topEntropyQuantile);
  }

  let policyLoss = 0;
  let klSum = 0;
  let entropySum = 0;
  let lowSum = 0;
  let highSum = 0;
  let regionSum = 0;
  let lowMin = Infinity;
  let highMax = -Infinity;
  const dLdLogp: Float32Array[] = [];

  seqs.forEach((s, i) => {
    const T = s.logp.length;
    const A = s.advantage;
    const w = weights[i]!;
    const M = sumMask(s.mask);
    const grad = new Float32Array(T);
    // log importance weight per token (token level) or one per sequence (GSPO)
    const logw = new Float64Array(T);
    for (let t = 0; t < T; t++) logw[t] = s.logpOld ? s.logp[t]! - s.logpOld[t]! : 0;
    if (opts.importanceSamplingLevel === 'sequence') {
      let acc = 0;
      for (let t = 0; t < T; t++) acc += logw[t]! * s.mask[t]!;
      logw.fill(acc / Math.max(M, 1));
    }
    // dL/dρ accumulated per token; ρ depends on logp (token) or on every logp of the sequence.
    const dLdRho = new Float64Array(T);
    let seqLow = 0;
    let seqHigh = 0;
    for (let t = 0; t < T; t++) {
      const m = s.mask[t]!;
      const rho = Math.exp(logw[t]!);
      const low = rho < lo && A < 0 ? 1 : 0;
      const high = rho > hi && A > 0 ? 1 : 0;
      seqLow += low * m;
      seqHigh += high * m;
      lowSum += low * m;
      highSum += high * m;
      regionSum += (low || high ? 1 : 0) * m;
      if (s.entropy) entropySum += s.entropy[t]! * m;
      if (m === 0) continue;

      const keep = s.entropy === undefined || s.entropy[t]! >= entropyThreshold ? 1 : 0;
      // Policy-gradient term ℓ = −min(ρ_u·A, clip(ρ)·A), ρ_u = min(ρ, delta).
      const rhoU = opts.delta !== null ? Math.min(rho, opts.delta) : rho;
      const dRhoU = opts.delta !== null && rho > opts.delta ? 0 : 1;
      const rhoC = Math.min(Math.max(rho, lo), hi);
      const dRhoC = rho >= lo && rho <= hi ? 1 : 0;
      const u = rhoU * A;
      const c = rhoC * A;
      // torch.minimum splits the gradient evenly on ties.
      const dPg = u < c ? -A * dRhoU : c < u ? -A * dRhoC : (-A * (dRhoU + dRhoC)) / 2;
      policyLoss += w * m * keep * -Math.min(u, c);
      dLdRho[t] += w * m * keep * dPg;

      if (opts.beta !== 0) {
        // k3 estimator; the gradient flows only through logp (the reference is constant).
        const d = s.logpRef![t]! - s.logp[t]!;
        const kl = Math.exp(d) - d - 1;
        const dKl = 1 - Math.exp(d);
        klSum += kl * m;
        const corr = opts.useBiasCorrectionKl ? rho : 1;
        policyLoss += w * m * opts.beta * kl * corr;
        grad[t] += w * m * opts.beta * dKl * corr;
        if (opts.useBiasCorrectionKl) dLdRho[t] += w * m * opts.beta * kl;
      }
    }
    // Chain rule through ρ = exp(log w): dρ/dlogp_t = ρ (token), or ρ·m_t/max(M,1) for every t (sequence).
    if (opts.importanceSamplingLevel === 'token') {
      for (let t = 0; t < T; t++) grad[t] += dLdRho[t]! * Math.exp(logw[t]!);
    } else {
      let total = 0;
      for (let t = 0; t < T; t++) total += dLdRho[t]!;
      const rho = Math.exp(logw[0] ?? 0);
      for (let t = 0; t < T; t++) grad[t] += (total * rho * s.mask[t]!) / Math.max(M, 1);
    }
    if (M > 0) {
      lowMin = Math.min(lowMin, seqLow / M);
      highMax = Math.max(highMax, seqHigh / M);
    }
    dLdLogp.push(grad);
  });

  // Entropy bonus: loss −= coef · Σ H·m / N_tok (dapo) or the micro-batch masked mean / GAS (others).
  let loss = policyLoss;
  let dLdEntropy: Float32Array[] | null = null;
  if (opts.entropyCoef !== 0) {
    const denom = opts.lossType === 'dapo' ? Math.max(opts.numItemsInBatch, 1) : Math.max(tokens, 1) * opts.gradientAccumulationSteps;
    loss -= (opts.entropyCoef * entropySum) / denom;
    dLdEntropy = seqs.map((s) => Float32Array.from(s.mask, (m) => (-opts.entropyCoef * m) / denom));
  }

  const perTokenMean = (x: number) => (tokens > 0 ? x / tokens : NaN);
  return {
    loss,
    dLdLogp,
    dLdEntropy,
    metrics: {
      clipLowMean: perTokenMean(lowSum),
      clipHighMean: perTokenMean(highSum),
      clipRegionMean: perTokenMean(regionSum),
      clipLowMin: lowMin === Infinity ? NaN : lowMin,
      clipHighMax: highMax === -Infinity ? NaN : highMax,
      kl: opts.beta !== 0 ? perTokenMean(klSum) : NaN,
      entropy: seqs.every((s) => s.entropy) ? perTokenMean(entropySum) : NaN,
      policyLoss,
      tokens,
    },
  };
}
