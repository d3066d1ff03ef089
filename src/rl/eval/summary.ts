// An evaluation's numbers: success rate with its Wilson 95% interval, mean reward, tool calls and
// invalid calls per episode, the failure-reason histogram, per task for multi-task envs, wordle's
// tutorial columns, and — for two models on the same episodes — the paired difference with its interval.

import { FAILURE_REASONS, type FailureReason, type Trajectory } from './trajectory.ts';

/** The normal quantile of a two-sided 95% interval. */
const Z95 = 1.959963984540054;

/** Wilson's score interval for `successes` of `n` (95%); [0, 1] when n = 0. */
export function wilsonInterval(successes: number, n: number, z = Z95): [number, number] {
  if (n === 0) return [0, 1];
  const p = successes / n;
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const center = (p + z2 / (2 * n)) / denom;
  const half = (z / denom) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return [Math.max(0, center - half), Math.min(1, center + half)];
}

export interface SplitSummary {
  episodes: number;
  success_rate: number;
  success_ci95: [number, number];
  /** Over scorable episodes; null when none was. */
  mean_reward: number | null;
  tool_calls_per_episode: number;
  invalid_calls_per_episode: number;
  failure_reasons: Partial<Record<FailureReason, number>>;
}

export interface WordleColumns {
  /** Games won (the secret guessed within 6 guesses). */
  wins: number;
  /** Valid guesses per won game (null with no win). */
  guesses_per_win: number | null;
  /** Guesses the game refused (not a word, wrong format, wrong length), over all games. */
  invalid_guesses: number;
}

export type EvalSummary = SplitSummary & { per_task?: Record<string, SplitSummary>; wordle?: WordleColumns };

function mean(xs: readonly number[]): number {
  return xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

function splitSummary(ts: readonly Trajectory[]): SplitSummary {
  const n = ts.length;
  const wins = ts.filter((t) => t.success).length;
  const scored = ts.flatMap((t) => (t.reward === null ? [] : [t.reward]));
  const failure_reasons: Partial<Record<FailureReason, number>> = {};
  for (const r of FAILURE_REASONS) {
    const k = ts.filter((t) => t.failure_reason === r).length;
    if (k > 0) failure_reasons[r] = k;
  }
  return {
    episodes: n,
    success_rate: n === 0 ? 0 : wins / n,
    success_ci95: wilsonInterval(wins, n),
    mean_reward: scored.length === 0 ? null : mean(scored),
    tool_calls_per_episode: n === 0 ? 0 : mean(ts.map((t) => t.tool_calls)),
    invalid_calls_per_episode: n === 0 ? 0 : mean(ts.map((t) => t.invalid_calls)),
    failure_reasons,
  };
}

/** The summary of a split's episodes; per task when they played more than one task; wordle's columns for wordle. */
export function summarize(ts: readonly Trajectory[], taskName: string): EvalSummary {
  const out: EvalSummary = splitSummary(ts);
  const tasks = [...new Set(ts.map((t) => t.task))];
  if (tasks.length > 1) out.per_task = Object.fromEntries(tasks.map((task) => [task, splitSummary(ts.filter((t) => t.task === task))]));
  if (taskName === 'wordle') {
    const won = ts.filter((t) => t.success);
    out.wordle = {
      wins: won.length,
      guesses_per_win: won.length === 0 ? null : mean(won.map((t) => t.tool_calls - t.invalid_calls)),
      invalid_guesses: ts.reduce((s, t) => s + t.invalid_calls, 0),
    };
  }
  return out;
}

export interface PairedDifference {
  /** Episodes both models played (the same seeds and rows). */
  episodes: number;
  /** Mean of (this model − the other) over the episodes. */
  difference: number;
  /** The normal-approximation 95% interval of the mean paired difference (sd of the differences / √n). */
  ci95: [number, number];
}

/** The paired difference of per-episode values a − b (same episodes in the same order). */
export function pairedDifference(a: readonly number[], b: readonly number[]): PairedDifference {
  if (a.length !== b.length) throw new Error(`pairedDifference: ${a.length} vs ${b.length} episodes; a paired comparison needs the same episodes`);
  const n = a.length;
  const d = a.map((x, i) => x - b[i]!);
  const m = mean(d);
  const sd = n > 1 ? Math.sqrt(d.reduce((s, x) => s + (x - m) ** 2, 0) / (n - 1)) : NaN;
  const half = (Z95 * sd) / Math.sqrt(n);
  return { episodes: n, difference: m, ci95: [m - half, m + half] };
}

/** How a model compares with another on the same episodes: success and reward, each paired. */
export function comparison(a: readonly Trajectory[], b: readonly Trajectory[]): { success: PairedDifference; reward: PairedDifference } {
  for (let i = 0; i < a.length; i++) {
    if (a[i]!.seed !== b[i]?.seed || a[i]!.task !== b[i]?.task) throw new Error(`comparison: episode ${i} differs between the two runs (seed ${a[i]!.seed} vs ${b[i]?.seed}): not the same episodes`);
  }
  const both = a.map((_, i) => i).filter((i) => a[i]!.reward !== null && b[i]!.reward !== null);
  return {
    success: pairedDifference(a.map((t) => (t.success ? 1 : 0)), b.map((t) => (t.success ? 1 : 0))),
    reward: pairedDifference(both.map((i) => a[i]!.reward!), both.map((i) => b[i]!.reward!)),
  };
}
