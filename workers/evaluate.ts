// Greedy evaluation of the trained policy beside the base model: the same held-out episodes (the task's
// held-out split, src/rl/eval: rows and env seeds training never draws), played once with the LoRA adapters on and once with them off,
// scored by the task's reward functions.

import type { EvalRow } from './api.ts';
import type { Engine } from '../src/engine/types.ts';
import type { TextTokenizer } from '../src/model/tokenizer.ts';
import type { GRPOConfig } from '../src/rl/config.ts';
import { rewardWeights, rolloutRewards, weightedRewardSum } from '../src/rl/grpo/rewards.ts';
import { runRollouts, type RolloutEngine } from '../src/rl/rollout/rollout.ts';
import { bindTask, resolveTask } from '../src/rl/tasks/resolve-task.ts';
import { splitRows } from '../src/rl/eval/eval-rows.ts';
import type { ModelTier } from '../src/rl/tasks/presets.ts';
import type { DatasetRow } from '../src/rl/rollout/env.ts';
import type { RolloutVision } from '../src/rl/rollout/rollout-images.ts';

/** The sampling seed of evaluation episodes (greedy decoding ignores it). */
const EVAL_SAMPLING_SEED = 1_000_000;

export interface EvaluateInput {
  engine: Engine;
  tokenizer: TextTokenizer;
  /** A vision-language model's images (its engine loaded with the vision tower): screenshots are embedded. */
  vision?: RolloutVision;
  /** Why the checkpoint's vision tower cannot be used (config.visionError), for a vision task's refusal. */
  visionError?: string;
  /** The model's size (tiny models play catch in its compact form, as in training). */
  tier: ModelTier;
  config: GRPOConfig;
  /** The task evaluated (RunOptions.task: a built-in task's name, or 'mcp'); its env is the server at envUrl. */
  task: string;
  envUrl: string;
  /** task 'mcp': the run's prompts. */
  prompts?: DatasetRow[];
  episodes: number;
}

/** The engine with the adapters switched on or off for every generate call and decode session. */
function withAdapters(engine: Engine, adapters: boolean): RolloutEngine {
  return {
    config: engine.config,
    newSequence: () => engine.newSequence(),
    releaseSequence: (seq) => engine.releaseSequence(seq),
    generate: (req) => engine.generate({ ...req, adapters }),
    openDecode: (opts) => engine.openDecode({ ...opts, adapters }),
  };
}

async function evaluatePolicy(input: EvaluateInput, policy: EvalRow['policy']): Promise<EvalRow> {
  // A fresh seeded task per policy: both see the same ball columns / words, in the same order.
  const resolved = await resolveTask({ env: input.task, url: input.envUrl, tier: input.tier, prompts: async () => input.prompts ?? [] });
  const task = bindTask(resolved, { tokenizer: input.tokenizer, readsImages: input.vision !== undefined, ...(input.visionError ? { visionError: input.visionError } : {}), split: 'eval' });
  // Episode i resets with the held-out split's seed i.
  task.episodes.reseed(0);
  // An MCP env has no held-out split of its own: its run's prompts, at held-out seeds.
  const heldOut = resolved.name === 'mcp' ? task.dataset : splitRows(resolved, 'eval');
  const rows = Array.from({ length: input.episodes }, (_, i) => heldOut[i % heldOut.length]!);
  const rollouts = await runRollouts({
    engine: withAdapters(input.engine, policy === 'trained'),
    tokenizer: input.tokenizer,
    rows,
    envFactory: task.envFactory,
    // temperature 0 = greedy in the engine's sampler
    config: { ...input.config, temperature: 0, top_p: 1, top_k: 0 },
    seed: EVAL_SAMPLING_SEED,
    template: task.template,
    ...(input.vision ? { imageTokenizer: input.vision.imageTokenizer } : {}),
  });
  const R = await rolloutRewards(task.rewardFuncs, rollouts, { globalStep: 0 });
  const rewards = [...weightedRewardSum(R, rewardWeights(input.config.reward_weights, task.rewardFuncs))];
  const scored = rewards.filter((x) => Number.isFinite(x));
  return {
    policy,
    episodes: rollouts.length,
    meanReward: scored.length ? scored.reduce((a, b) => a + b, 0) / scored.length : NaN,
    // success = the task's outcome reward (its first function: a catch, a solved word, an echo) is positive;
    // shaping rewards that follow it (e.g. compact catch's `progress`) do not count
    successRate: R[0]!.filter((x) => x > 0).length / rollouts.length,
    meanToolCalls: rollouts.reduce((n, r) => n + r.toolCalls, 0) / rollouts.length,
  };
}

export async function evaluate(input: EvaluateInput): Promise<EvalRow[]> {
  if (!Number.isInteger(input.episodes) || input.episodes < 1) throw new Error(`evaluate: episodes must be a positive integer, got ${input.episodes}`);
  return [await evaluatePolicy(input, 'base'), await evaluatePolicy(input, 'trained')];
}
