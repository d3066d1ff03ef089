// One step's metrics under TRL's log names (specs/grpo-semantics.md §13), computed from plain
// numbers so the browser worker, the CLI and the run store all see the same object.

import type { LossMetrics } from './losses.ts';
import { fracZeroStd } from './advantages.ts';
import { nanmax, nanmean, nanmin, nanstd } from './stats.ts';

/** What the metrics need from one rollout. */
export interface RolloutStats {
  /** Completion tokens with tool_mask = 1 (model tokens; tool-result suffixes excluded). */
  modelTokens: number;
  /** Prompt + completion tokens (for num_tokens). */
  totalTokens: number;
  truncated: boolean;
  toolCalls: number;
  toolFailures: number;
  /** Calls that repeated a failing call beyond stubborn_threshold (default 0). */
  stubbornCalls?: number;
  /** Calls that never reached the env: an unknown tool name or bad arguments (default 0; among toolFailures). */
  invalidCalls?: number;
  /** The episode ran past episode_timeout_s / env_call_timeout_s (default false). */
  timedOut?: boolean;
  /** The last tool results were rolled back for the token budget (default false). */
  overBudget?: boolean;
}

export interface StepMetricsInput {
  rollouts: RolloutStats[];
  rewardNames: string[];
  /** R: one column of N values per reward function (NaN = null). */
  rewardMatrix: Float64Array[];
  /** Combined reward per rollout (NaN = unscorable). */
  rewards: ArrayLike<number>;
  /** The std each rollout's advantage was scaled by (group or batch). */
  rewardStd: ArrayLike<number>;
  /** Per micro-batch loss metrics of this step. */
  lossMetrics: LossMetrics[];
  /** Sum of the micro-batch losses of this step (the objective whose gradient was applied). */
  loss: number;
  gradNorm: number;
  learningRate: number;
  /** Cumulative prompt + completion tokens seen since the start of training (TRL's num_input_tokens_seen). */
  numTokens: number;
  stepTime: number;
  beta: number;
  entropyCoef: number;
}

export type Metrics = Record<string, number>;

/** Length statistics over tool_mask = 1 tokens; terminated = not truncated (0 when there are none, as TRL logs). */
function lengthMetrics(rollouts: RolloutStats[]): Metrics {
  const lengths = rollouts.map((r) => r.modelTokens);
  const terminated = rollouts.filter((r) => !r.truncated).map((r) => r.modelTokens);
  const term = terminated.length > 0 ? terminated : [0];
  return {
    'completions/mean_length': nanmean(lengths),
    'completions/min_length': nanmin(lengths),
    'completions/max_length': nanmax(lengths),
    'completions/mean_terminated_length': nanmean(term),
    'completions/min_terminated_length': nanmin(term),
    'completions/max_terminated_length': nanmax(term),
    'completions/clipped_ratio': rollouts.length === 0 ? 0 : rollouts.filter((r) => r.truncated).length / rollouts.length,
  };
}

/**
 * tools/call_frequency = calls / completions; tools/failure_frequency = failures / calls;
 * tools/invalid_frequency = calls that never reached the env (a tool it does not offer, arguments the tool
 * cannot take; they are failures too) / calls (0 without calls), which tells a model that does not know the
 * env's tools from an env that refuses them; tools/stubborn_frequency = stubborn repeats / calls (0 without calls); tools/over_budget_frequency =
 * completions whose last tool results were rolled back because they did not fit the token budget / completions;
 * rollouts/timed_out = episodes closed by a timeout in this step (webgrpo's names for the last three).
 */
export function toolMetrics(rollouts: RolloutStats[]): Metrics {
  const calls = rollouts.reduce((n, r) => n + r.toolCalls, 0);
  const failures = rollouts.reduce((n, r) => n + r.toolFailures, 0);
  const stubborn = rollouts.reduce((n, r) => n + (r.stubbornCalls ?? 0), 0);
  const invalid = rollouts.reduce((n, r) => n + (r.invalidCalls ?? 0), 0);
  return {
    'tools/call_frequency': rollouts.length === 0 ? 0 : calls / rollouts.length,
    'tools/failure_frequency': calls === 0 ? 0 : failures / calls,
    'tools/invalid_frequency': calls === 0 ? 0 : invalid / calls,
    'tools/stubborn_frequency': calls === 0 ? 0 : stubborn / calls,
    'tools/over_budget_frequency': rollouts.length === 0 ? 0 : rollouts.filter((r) => r.overBudget).length / rollouts.length,
    'rollouts/timed_out': rollouts.filter((r) => r.timedOut).length,
  };
}

/**
 * Steps that are almost never learning, said on every such step (TRL logs only the numbers): no rollout
 * called a tool (every task here offers tools; without a call the model never acted in the env, and the
 * step trains only on what it said instead), every tool call failed (the env is gone or speaks another
 * protocol), every completion's tool results were rolled back for the budget (the model calls tools
 * but never reads what they return), or no rollout earned any reward (every advantage is 0; an env that
 * never pays scores 0, so this is otherwise silent).
 */
export function stepWarnings(metrics: Readonly<Record<string, number | null>>, invalidTools?: InvalidTools): string[] {
  const warnings: string[] = [];
  const calls = metrics['tools/call_frequency'] ?? 0;
  if (metrics['tools/call_frequency'] === 0) {
    warnings.push('no rollout of this step called a tool (tools/call_frequency 0): the model never acted in the env, so the step cannot learn the task. A model that does not call tools yet needs an SFT warm-up (sft_steps; in the CLI with --sft-solver or --sft).');
  }
  if (calls > 0 && metrics['tools/invalid_frequency'] === 1) {
    warnings.push(`no tool call of this step reached the env (tools/invalid_frequency 1): ${describeInvalidTools(invalidTools)}. The model does not know this env's tools yet: warm it up on transcripts that call them (in the CLI --sft FILE.jsonl).`);
  } else if (calls > 0 && metrics['tools/failure_frequency'] === 1) {
    warnings.push('every tool call of this step failed (tools/failure_frequency 1): the model is reading env errors, not results. Check the env URL and that it is the env the task expects.');
  }
  if (calls > 0 && metrics['tools/over_budget_frequency'] === 1) {
    warnings.push('no tool result of this step reached the model (tools/over_budget_frequency 1): each one would have taken its completion past max_completion_length (or the context), so it was rolled back and the episode ended at its call. Raise max_completion_length (or lower max_context_images).');
  }
  if (noRewardEarned(metrics)) {
    warnings.push('no rollout of this step earned any reward (every reward function gave 0 or nothing): every advantage is 0, so the step learns nothing. An episode the env never rewards scores 0 (as TRL\'s examples); check that the env pays a reward for what the model does (e.g. an answer or a finished game).');
  }
  return warnings;
}

/** The names the model called that the env does not offer, beside the names it does offer. */
export interface InvalidTools {
  called: string[];
  offered: string[];
}

/** Merges the rollouts' invalid-call names (undefined when no rollout made an invalid call). */
export function invalidToolsOf(rollouts: readonly { unknownTools?: readonly string[]; offeredTools?: readonly string[] }[]): InvalidTools | undefined {
  const noted = rollouts.filter((r) => r.offeredTools !== undefined);
  if (noted.length === 0) return undefined;
  return {
    called: [...new Set(noted.flatMap((r) => r.unknownTools ?? []))],
    offered: [...new Set(noted.flatMap((r) => r.offeredTools ?? []))],
  };
}

/** "the model called echo; the env offers move, reset_game" (bad arguments when every name was known). */
export function describeInvalidTools(tools: InvalidTools | undefined): string {
  if (!tools) return 'every call named a tool the env does not offer or had arguments its tool cannot take';
  const offered = tools.offered.length > 0 ? tools.offered.join(', ') : 'no tools';
  if (tools.called.length === 0) return `every call had arguments its tool cannot take (the env offers ${offered})`;
  return `the model called ${tools.called.join(', ')}; the env offers ${offered}`;
}

/**
 * Every value any reward function scored this step is 0 (its `rewards/<name>/mean` and `/std` both 0);
 * functions that scored nothing (mean NaN, or null once logged as JSON) say nothing either way.
 */
function noRewardEarned(metrics: Readonly<Record<string, number | null>>): boolean {
  const scored = Object.keys(metrics).filter((k) => /^rewards\/.+\/mean$/.test(k) && Number.isFinite(metrics[k]));
  return scored.length > 0 && scored.every((k) => metrics[k] === 0 && metrics[`${k.slice(0, -'mean'.length)}std`] === 0);
}

/**
 * Whether a whole run's tool calls all failed, or none of their results ever reached the model, from its
 * steps' metrics (steps without calls say nothing).
 */
export class ToolFailureTally {
  stepsWithCalls = 0;
  stepsAllFailed = 0;
  stepsAllInvalid = 0;
  stepsAllOverBudget = 0;
  /** What the model called that the env does not offer, and what it offers, over the run. */
  invalidTools: InvalidTools | undefined;

  add(metrics: Metrics, invalidTools?: InvalidTools): void {
    if (invalidTools) this.invalidTools = { called: [...new Set([...(this.invalidTools?.called ?? []), ...invalidTools.called])], offered: [...new Set([...(this.invalidTools?.offered ?? []), ...invalidTools.offered])] };
    if ((metrics['tools/call_frequency'] ?? 0) <= 0) return;
    this.stepsWithCalls++;
    if (metrics['tools/failure_frequency'] === 1) this.stepsAllFailed++;
    if (metrics['tools/invalid_frequency'] === 1) this.stepsAllInvalid++;
    if (metrics['tools/over_budget_frequency'] === 1) this.stepsAllOverBudget++;
  }

  /** The model called tools and not one call of the run succeeded. */
  get everyCallFailed(): boolean {
    return this.stepsWithCalls > 0 && this.stepsAllFailed === this.stepsWithCalls;
  }

  /** The model called tools and not one call of the run reached the env (unknown names, bad arguments). */
  get noCallReachedEnv(): boolean {
    return this.stepsWithCalls > 0 && this.stepsAllInvalid === this.stepsWithCalls;
  }

  /** The model called tools and every result of the run was rolled back for the token budget. */
  get everyResultOverBudget(): boolean {
    return this.stepsWithCalls > 0 && this.stepsAllOverBudget === this.stepsWithCalls;
  }
}

export function stepMetrics(input: StepMetricsInput): Metrics {
  const m: Metrics = {
    loss: input.loss,
    grad_norm: input.gradNorm,
    learning_rate: input.learningRate,
    num_tokens: input.numTokens,
    step_time: input.stepTime,
    ...lengthMetrics(input.rollouts),
  };
  input.rewardNames.forEach((name, k) => {
    m[`rewards/${name}/mean`] = nanmean(input.rewardMatrix[k]!);
    m[`rewards/${name}/std`] = nanstd(input.rewardMatrix[k]!);
  });
  m.reward = nanmean(input.rewards);
  m.reward_std = nanmean(input.rewardStd);
  m.frac_reward_zero_std = fracZeroStd(input.rewardStd);
  const lm = input.lossMetrics;
  m.entropy = nanmean(lm.map((x) => x.entropy));
  if (input.beta !== 0) m.kl = nanmean(lm.map((x) => x.kl));
  m['clip_ratio/low_mean'] = nanmean(lm.map((x) => x.clipLowMean));
  m['clip_ratio/low_min'] = nanmin(lm.map((x) => x.clipLowMin));
  m['clip_ratio/high_mean'] = nanmean(lm.map((x) => x.clipHighMean));
  m['clip_ratio/high_max'] = nanmax(lm.map((x) => x.clipHighMax));
  m['clip_ratio/region_mean'] = nanmean(lm.map((x) => x.clipRegionMean));
  if (input.entropyCoef !== 0) {
    m.policy_loss = lm.reduce((s, x) => s + x.policyLoss, 0);
    m.entropy_coef = input.entropyCoef;
  }
  Object.assign(m, toolMetrics(input.rollouts));
  return m;
}

/** One logged completion (TRL's log_completions table row). */
export interface CompletionSample {
  step: number;
  prompt: string;
  completion: string;
  rewards: Record<string, number | null>;
  advantage: number;
}

/** JSON has no NaN: null stands for "not available" in logs. */
export function jsonSafe(metrics: Metrics): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const [k, v] of Object.entries(metrics)) out[k] = Number.isFinite(v) ? v : null;
  return out;
}
