// Group advantages (specs/grpo-semantics.md §10) and the normalize_then_sum aggregation (§9).
// Groups are the G adjacent rollouts of one prompt.

import type { ScaleRewards } from '../config.ts';
import { nanmean, nanstd } from './stats.ts';

export interface Advantages {
  /** A_i, finite (nan_to_num: unscorable rollouts and singleton groups get 0). */
  advantages: Float64Array;
  /** The std each rollout was scaled by (group or batch), NaN where undefined; feeds reward_std. */
  std: Float64Array;
}

function checkGroups(n: number, G: number): void {
  if (n % G !== 0) throw new Error(`${n} rewards do not split into groups of num_generations=${G}`);
}

function nanToNum(x: number): number {
  return Number.isFinite(x) ? x : 0;
}

/** A_i = (r_i − μ_g)/(σ + 1e-4) with σ the group or batch unbiased nanstd, or r_i − μ_g for "none". */
export function groupAdvantages(rewards: ArrayLike<number>, G: number, scale: ScaleRewards): Advantages {
  const n = rewards.length;
  checkGroups(n, G);
  const advantages = new Float64Array(n);
  const std = new Float64Array(n);
  const batchStd = nanstd(rewards);
  for (let g = 0; g < n; g += G) {
    const group = Array.from({ length: G }, (_, j) => rewards[g + j]!);
    const mu = nanmean(group);
    const sigma = scale === 'batch' ? batchStd : nanstd(group);
    for (let j = 0; j < G; j++) {
      const centered = group[j]! - mu;
      std[g + j] = sigma;
      advantages[g + j] = nanToNum(scale === 'none' ? centered : centered / (sigma + 1e-4));
    }
  }
  return { advantages, std };
}

/**
 * normalize_then_sum: each reward function is normalized within its group, the weighted nansum is
 * taken, and the sum is normalized over the batch; that batch-normalized value is the advantage.
 */
export function normalizeThenSumAdvantages(R: Float64Array[], weights: number[], G: number): Advantages {
  const n = R[0]?.length ?? 0;
  checkGroups(n, G);
  const combined = new Float64Array(n);
  const scorable = new Uint8Array(n);
  for (let k = 0; k < R.length; k++) {
    const col = R[k]!;
    for (let g = 0; g < n; g += G) {
      const group = col.subarray(g, g + G);
      const mu = nanmean(group);
      const sigma = nanstd(group);
      for (let j = 0; j < G; j++) {
        const v = (group[j]! - mu) / (sigma + 1e-4);
        if (!Number.isNaN(col[g + j]!)) scorable[g + j] = 1;
        if (!Number.isNaN(v)) combined[g + j]! += weights[k]! * v;
      }
    }
  }
  for (let i = 0; i < n; i++) if (!scorable[i]) combined[i] = NaN;
  const mu = nanmean(combined);
  const sigma = nanstd(combined);
  const advantages = new Float64Array(n);
  const std = new Float64Array(n).fill(sigma);
  for (let i = 0; i < n; i++) advantages[i] = nanToNum((combined[i]! - mu) / (sigma + 1e-4));
  return { advantages, std };
}

/** Fraction of rollouts whose scaling std is ≈ 0 (torch.isclose(std, 0): |std| ≤ 1e-8). */
export function fracZeroStd(std: ArrayLike<number>): number {
  let zero = 0;
  for (let i = 0; i < std.length; i++) if (Math.abs(std[i]!) <= 1e-8) zero++;
  return std.length === 0 ? 0 : zero / std.length;
}
