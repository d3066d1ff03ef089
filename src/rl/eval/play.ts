// Plays a split's episodes with a model and records each as a trajectory: the same rollout loop,
// envs and reward functions as training, on the split's rows and seeds, with no gradient and no
// optimizer call (the engine only generates). Episode i resets with row i mod rows and the split's
// seed of number i, so two models (or two evaluations of one) play exactly the same games.

import type { TextTokenizer } from '../../model/tokenizer.ts';
import type { GRPOConfig } from '../config.ts';
import { rewardWeights, rolloutRewards, weightedRewardSum } from '../grpo/rewards.ts';
import type { DatasetRow } from '../rollout/env.ts';
import { runRollouts, type Rollout, type RolloutEngine, type RolloutProgress } from '../rollout/rollout.ts';
import type { ImageTokenizer } from '../rollout/image-tokens.ts';
import type { RunTask } from '../tasks/resolve-task.ts';
import type { SeedOf } from '../tasks/play-episode.ts';
import { rowTask } from './eval-rows.ts';
import { failureReason, invalidCalls, trajectoryTurns, type Trajectory } from './trajectory.ts';

export interface PlaySplitOptions {
  engine: RolloutEngine;
  tokenizer: TextTokenizer;
  /** The task bound to the split's seeds (bindTask with `split`). */
  task: RunTask;
  /** The split's rows, one per episode in turn. */
  rows: readonly DatasetRow[];
  episodes: number;
  /** The split's seed of episode number i (seed-space.ts), for the records. */
  seedOf: SeedOf;
  config: GRPOConfig;
  /** 0 = greedy. */
  temperature: number;
  /** Sampling seed (ignored when greedy). */
  seed: number;
  maxBatchSize?: number;
  imageTokenizer?: ImageTokenizer;
  onProgress?: (p: RolloutProgress) => void;
  /** The trainer's step, for reward functions that read trainer_state. */
  globalStep?: number;
}

export interface PlayedSplit {
  trajectories: Trajectory[];
  rollouts: Rollout[];
  /** One column of per-episode values per reward function (NaN = unscorable). */
  rewardMatrix: Float64Array[];
  /** Combined reward per episode (NaN = unscorable). */
  rewards: Float64Array;
}

function finite(x: number): number | null {
  return Number.isFinite(x) ? x : null;
}

function envDone(env: unknown): boolean | null {
  const done = (env as { done?: unknown } | null)?.done;
  return typeof done === 'boolean' ? done : null;
}

export async function playSplit(o: PlaySplitOptions): Promise<PlayedSplit> {
  if (!Number.isInteger(o.episodes) || o.episodes < 1) throw new Error(`evaluation: episodes must be a positive integer, got ${o.episodes}`);
  if (o.rows.length === 0) throw new Error('evaluation: the split has no rows');
  const rows = Array.from({ length: o.episodes }, (_, i) => o.rows[i % o.rows.length]!);
  // Episode k of the split resets with seedOf(k): the same games whatever was played before.
  o.task.episodes.reseed(0);
  const greedy = o.temperature === 0;
  const rollouts = await runRollouts({
    engine: o.engine,
    tokenizer: o.tokenizer,
    rows,
    envFactory: o.task.envFactory,
    config: { ...o.config, temperature: o.temperature, ...(greedy ? { top_p: 1, top_k: 0 } : {}) },
    seed: o.seed,
    template: o.task.template,
    ...(o.maxBatchSize ? { maxBatchSize: o.maxBatchSize } : {}),
    ...(o.imageTokenizer ? { imageTokenizer: o.imageTokenizer } : {}),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
  });
  const R = await rolloutRewards(o.task.rewardFuncs, rollouts, { globalStep: o.globalStep ?? 0, rows });
  const rewards = weightedRewardSum(R, rewardWeights(o.config.reward_weights, o.task.rewardFuncs));
  const names = o.task.rewardFuncs.map((f) => f.name);
  const trajectories = rollouts.map((r, i): Trajectory => {
    // Success is the task's outcome reward (its first function: a catch, a solved word, an echo) being
    // positive; shaping rewards after it (compact catch's `progress`) do not count.
    const success = (R[0]?.[i] ?? NaN) > 0;
    const done = envDone(r.env);
    const last = r.prompt[r.prompt.length - 1];
    return {
      task: rowTask(r.row, o.task.name),
      seed: o.seedOf(i),
      prompt: typeof last?.content === 'string' ? last.content : '',
      turns: trajectoryTurns(r.completion),
      reward: finite(rewards[i]!),
      rewards: Object.fromEntries(names.map((n, k) => [n, finite(R[k]![i]!)])),
      success,
      done,
      tool_calls: r.toolCalls,
      invalid_calls: invalidCalls(r),
      failure_reason: failureReason({ rollout: r, success, done, maxIterations: o.config.max_tool_calling_iterations }),
      ...(r.error ? { error: r.error } : {}),
    };
  });
  return { trajectories, rollouts, rewardMatrix: R, rewards };
}
