// An Evaluate result (workers/evaluate.ts) as metrics of the step it evaluated, so the run store keeps
// it with the run (reloads, share links, exports) and the charts draw it at that step. Named apart
// from the trainer's eval loop (TRL's eval_*, sampled at the training temperature): `evaluate/…` is
// greedy, against the base on the same held-out episodes.
import type { EvalResult } from '../../workers/api.ts';

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
