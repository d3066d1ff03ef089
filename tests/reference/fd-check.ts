// Finite-difference checking of the reference backward: L = Σ_t c_t·logprob_t (+ Σ_t e_t·entropy_t), central
// differences with h = 1e-5 in float64, compared with refBackward coordinate by coordinate.

import type { ModelConfig } from '../../src/model/types.ts';
import { refBackward, refScore, type RefSequence } from '../../src/engine/reference/qwen3.ts';
import { mulberry32 } from '../../src/random.ts';
import type { RefLora, RefWeights } from '../../src/engine/reference/weights.ts';

export const FD_STEP = 1e-5;
/** Required agreement: |analytic − numeric| ≤ REL_TOL·max(|analytic|, |numeric|) + ABS_TOL. */
export const REL_TOL = 1e-6;
/** Round-off of a central difference is ≈ ε·|L|/h ≈ 2e-10 here: gradients this small are checked absolutely. */
export const ABS_TOL = 1e-9;

export interface FdResult {
  tensor: string;
  index: number;
  analytic: number;
  numeric: number;
}

/** Central-difference dL/dθ for one coordinate of `data` (restored afterwards). */
export function numericGrad(loss: () => number, data: Float64Array, index: number): number {
  const saved = data[index];
  data[index] = saved + FD_STEP;
  const plus = loss();
  data[index] = saved - FD_STEP;
  const minus = loss();
  data[index] = saved;
  return (plus - minus) / (2 * FD_STEP);
}

export function weightedLogprobLoss(
  cfg: ModelConfig,
  w: RefWeights,
  seq: RefSequence,
  temperature: number,
  dLdLogp: number[],
  lora?: RefLora,
  dLdEntropy?: number[],
): () => number {
  return () => {
    const { logprobs, entropy } = refScore(cfg, w, seq, temperature, lora);
    return logprobs.reduce((acc, lp, t) => acc + dLdLogp[t] * lp + (dLdEntropy ? dLdEntropy[t] * entropy[t] : 0), 0);
  };
}

/**
 * Compares refBackward with finite differences on `perTensor` uniform random coordinates of every
 * tensor plus `perTensor` random coordinates among its significant gradients
 * (base weights when `base`, LoRA A/B when a LoRA is given). Returns one row per coordinate.
 */
export function fdCompare(
  cfg: ModelConfig,
  w: RefWeights,
  seq: RefSequence,
  temperature: number,
  dLdLogp: number[],
  opts: { lora?: RefLora; base: boolean; perTensor: number; seed: number; dLdEntropy?: number[] },
): FdResult[] {
  const { grads, loraGrads } = refBackward(cfg, w, seq, temperature, dLdLogp, opts.lora, { baseGrads: opts.base, dLdEntropy: opts.dLdEntropy });
  const loss = weightedLogprobLoss(cfg, w, seq, temperature, dLdLogp, opts.lora, opts.dLdEntropy);
  const uniform = mulberry32(opts.seed);
  const targets: { tensor: string; data: Float64Array; grad: Float64Array }[] = [];
  if (opts.base) for (const [name, data] of w) targets.push({ tensor: name, data, grad: grads.get(name)! });
  if (opts.lora && loraGrads) {
    for (const [name, data] of opts.lora.A) targets.push({ tensor: `${name}:lora_A`, data, grad: loraGrads.A.get(name)! });
    for (const [name, data] of opts.lora.B) targets.push({ tensor: `${name}:lora_B`, data, grad: loraGrads.B.get(name)! });
  }
  const rows: FdResult[] = [];
  for (const { tensor, data, grad } of targets) {
    // Uniform coordinates catch a gradient wrongly left at zero; coordinates among the clearly
    // non-zero gradients make sure each tensor is tested where relative error means something.
    const significant: number[] = [];
    for (let i = 0; i < grad.length; i++) if (Math.abs(grad[i]) > SIGNIFICANT_GRAD) significant.push(i);
    const indices: number[] = [];
    for (let k = 0; k < opts.perTensor; k++) indices.push(Math.floor(uniform() * data.length));
    for (let k = 0; k < opts.perTensor && significant.length > 0; k++) indices.push(significant[Math.floor(uniform() * significant.length)]);
    for (const index of indices) rows.push({ tensor, index, analytic: grad[index], numeric: numericGrad(loss, data, index) });
  }
  return rows;
}

/** Above this, the central difference's round-off (≈ 2e-10 here) is < 1e-6 relative by a wide margin. */
export const SIGNIFICANT_GRAD = 1e-3;

export function fdAgrees(r: FdResult): boolean {
  return Math.abs(r.analytic - r.numeric) <= REL_TOL * Math.max(Math.abs(r.analytic), Math.abs(r.numeric)) + ABS_TOL;
}

export function relativeError(r: FdResult): number {
  return Math.abs(r.analytic - r.numeric) / Math.max(Math.abs(r.analytic), Math.abs(r.numeric));
}

/** The tensor "type" of a name: the layer index stripped, e.g. `model.layers.*.self_attn.q_norm.weight`. */
export function tensorKind(tensor: string): string {
  return tensor.replace(/layers\.\d+\./, 'layers.*.');
}
