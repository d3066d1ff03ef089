// TRL's eval loop for the trainer: each evaluation plays the held-out split's rows, each repeated
// num_generations_eval times (adjacent, as training repeats its prompts), per_device_eval_batch_size
// episodes decoding at once, at the training sampling settings; and reports TRL's `eval_*` metrics
// (eval_reward, eval_reward_std, eval_rewards/<fn>/mean, eval_completions/…, eval_tools/…) plus the
// held-out success rate. It only generates: the weights and the optimizer state are not touched.

import type { TextTokenizer } from '../../model/tokenizer.ts';
import type { GRPOConfig } from '../config.ts';
import { groupAdvantages } from '../grpo/advantages.ts';
import { stepMetrics, type Metrics } from '../grpo/metrics.ts';
import type { DatasetRow } from '../rollout/env.ts';
import type { ImageTokenizer } from '../rollout/image-tokens.ts';
import type { RolloutEngine } from '../rollout/rollout.ts';
import { hashInts } from '../seeds.ts';
import type { SeedOf } from '../tasks/play-episode.ts';
import type { RunTask } from '../tasks/resolve-task.ts';
import { playSplit } from './play.ts';
import { wilsonInterval } from './summary.ts';

/** The held-out split a run evaluates on: the task bound to the split's seeds, and its rows. */
export interface Evaluation {
  task: RunTask;
  rows: DatasetRow[];
  seedOf: SeedOf;
}

/** Training-only metrics an evaluation has no value for (no loss, no update). */
const NOT_EVAL = /^(loss|grad_norm|learning_rate|num_tokens|step_time|entropy|kl|policy_loss|entropy_coef|clip_ratio\/.*)$/;

/** A 'purpose' for the sampling seed of evaluations (seeds.ts Purpose holds training's). */
const EVAL_SAMPLING = 0xe7a1;

export function trainerEvaluator(o: { engine: RolloutEngine; tokenizer: TextTokenizer; config: GRPOConfig; evaluation: Evaluation; imageTokenizer?: ImageTokenizer }): (step: number) => Promise<Metrics> {
  const { config: c, evaluation } = o;
  const G = c.num_generations_eval ?? c.num_generations;
  const rows = evaluation.rows.flatMap((row) => Array.from({ length: G }, () => row));
  return async (step) => {
    const played = await playSplit({
      engine: o.engine,
      tokenizer: o.tokenizer,
      task: evaluation.task,
      rows,
      episodes: rows.length,
      seedOf: evaluation.seedOf,
      config: c,
      temperature: c.temperature,
      // The same sampling stream at every evaluation: differences between them are the policy's.
      seed: hashInts(c.seed, EVAL_SAMPLING),
      maxBatchSize: c.per_device_eval_batch_size,
      globalStep: step,
      ...(o.imageTokenizer ? { imageTokenizer: o.imageTokenizer } : {}),
    });
    const { std } = groupAdvantages(played.rewards, G, 'group');
    const all = stepMetrics({
      rollouts: played.rollouts.map((r) => ({
        modelTokens: r.toolMask.reduce((a, b) => a + b, 0),
        totalTokens: r.promptIds.length + r.completionIds.length,
        truncated: r.truncated,
        toolCalls: r.toolCalls,
        toolFailures: r.toolFailures,
        stubbornCalls: r.stubbornCalls,
        timedOut: r.timedOut ?? false,
        overBudget: r.overBudget !== undefined,
      })),
      rewardNames: evaluation.task.rewardFuncs.map((f) => f.name),
      rewardMatrix: played.rewardMatrix,
      rewards: played.rewards,
      rewardStd: std,
      lossMetrics: [],
      loss: NaN,
      gradNorm: NaN,
      learningRate: NaN,
      numTokens: NaN,
      stepTime: NaN,
      beta: 0,
      entropyCoef: 0,
    });
    const out: Metrics = {};
    for (const [k, v] of Object.entries(all)) if (!NOT_EVAL.test(k)) out[`eval_${k}`] = v;
    const wins = played.trajectories.filter((t) => t.success).length;
    const [low, high] = wilsonInterval(wins, played.trajectories.length);
    out.eval_success_rate = wins / played.trajectories.length;
    out.eval_success_ci95_low = low;
    out.eval_success_ci95_high = high;
    out.eval_episodes = played.trajectories.length;
    return out;
  };
}
