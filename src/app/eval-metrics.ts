// An Evaluate result (workers/evaluate.ts) as metrics of the step it evaluated, so the run store keeps
// it with the run (reloads, share links, exports) and the charts draw it at that step. Named apart
// from the trainer's eval loop (TRL's eval_*, sampled at the training temperature): `evaluate/…` is
// greedy, against the base on the same held-out episodes.
import type { EvalResult } from '../../workers/api.ts';

export const EVALUATE_PREFIX = 'evaluate/';

export function evaluateMetrics(r: EvalResult): Record<string, number | null> {
  const num = (v: number | null) => (v !== null && Number.isFinite(v) ? v : null);
  const d = r.paired.success;
  return {
    'evaluate/episodes': r.episodes,
    'evaluate/success_rate': r.trained.success_rate,
    'evaluate/success_ci95_low': r.trained.success_ci95[0],
    'evaluate/success_ci95_high': r.trained.success_ci95[1],
    'evaluate/mean_reward': num(r.trained.mean_reward),
    'evaluate/base_success_rate': r.base.success_rate,
    'evaluate/base_success_ci95_low': r.base.success_ci95[0],
    'evaluate/base_success_ci95_high': r.base.success_ci95[1],
    'evaluate/base_mean_reward': num(r.base.mean_reward),
    'evaluate/success_difference': d.difference,
    'evaluate/success_difference_ci95_low': num(d.ci95[0]),
    'evaluate/success_difference_ci95_high': num(d.ci95[1]),
  };
}

/** A step's held-out numbers as stored (the app's Evaluate, else the trainer's eval loop); null when it has none. */
export interface StepHeldOut {
  source: 'evaluate' | 'eval';
  successRate: number;
  ci95: [number, number];
  episodes: number | null;
  base?: { successRate: number; ci95: [number, number] };
  difference?: { value: number; ci95: [number, number] };
}

export function stepHeldOut(m: Record<string, number | null>): StepHeldOut | null {
  const n = (k: string) => (typeof m[k] === 'number' ? (m[k] as number) : null);
  const rate = n('evaluate/success_rate');
  if (rate !== null) {
    const base = n('evaluate/base_success_rate');
    const diff = n('evaluate/success_difference');
    return {
      source: 'evaluate',
      successRate: rate,
      ci95: [n('evaluate/success_ci95_low') ?? 0, n('evaluate/success_ci95_high') ?? 1],
      episodes: n('evaluate/episodes'),
      ...(base !== null ? { base: { successRate: base, ci95: [n('evaluate/base_success_ci95_low') ?? 0, n('evaluate/base_success_ci95_high') ?? 1] as [number, number] } } : {}),
      ...(diff !== null ? { difference: { value: diff, ci95: [n('evaluate/success_difference_ci95_low') ?? NaN, n('evaluate/success_difference_ci95_high') ?? NaN] as [number, number] } } : {}),
    };
  }
  const evalRate = n('eval_success_rate');
  if (evalRate === null) return null;
  return { source: 'eval', successRate: evalRate, ci95: [n('eval_success_ci95_low') ?? 0, n('eval_success_ci95_high') ?? 1], episodes: n('eval_episodes') };
}
