// Metrics the page derives from a step's rollouts before showing and storing it.
import type { RolloutView } from '../../workers/api.ts';

/**
 * The task's success rate: the fraction of the step's shown rollouts whose outcome reward (the task's
 * first reward function: a catch, a solved word, an echo) is positive; an unscorable rollout counts as
 * a failure. The same rule as the greedy evaluation's "success". Null when the step logged no rollouts.
 */
export function successRate(rollouts: readonly RolloutView[]): number | null {
  if (rollouts.length === 0) return null;
  const ok = rollouts.filter((r) => {
    if (r.error !== undefined) return false;
    const outcome = Object.values(r.rewards)[0];
    return typeof outcome === 'number' && outcome > 0;
  }).length;
  return ok / rollouts.length;
}
