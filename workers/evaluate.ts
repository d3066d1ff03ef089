// The trained policy beside its base on the same held-out episodes, as `webgrpo eval --compare` does
// it: the task resolved and bound through the launcher (src/rl/launch.ts) to the held-out split's rows
// and seeds, each policy's episodes played by src/rl/eval/play.ts and summed up by summary.ts (success
// with its Wilson interval), and the paired difference trained − base with its interval. How the base
// is put on the engine (adapters off, or the starting weights uploaded again after full fine-tuning)
// is the caller's: `policies` plays each one and returns when the engine is back to the trained weights.

import type { EvalResult, EvalProgress } from './api.ts';
import type { Engine } from '../src/engine/types.ts';
import type { ModelConfig } from '../src/model/types.ts';
import type { TextTokenizer } from '../src/model/tokenizer.ts';
import { bindRun, resolveRun, type ConfigLayer } from '../src/rl/launch.ts';
import type { DatasetRow } from '../src/rl/rollout/env.ts';
import type { RolloutEngine } from '../src/rl/rollout/rollout.ts';
import type { RolloutVision } from '../src/rl/rollout/rollout-images.ts';
import { splitRows } from '../src/rl/eval/eval-rows.ts';
import { playSplit } from '../src/rl/eval/play.ts';
import { seedSpace } from '../src/rl/eval/seed-space.ts';
import { comparison, summarize } from '../src/rl/eval/summary.ts';
import type { Trajectory } from '../src/rl/eval/trajectory.ts';

/** The sampling seed of evaluation episodes (greedy decoding ignores it). */
const EVAL_SAMPLING_SEED = 1_000_000;

/** Episodes kept with the result for the trajectory viewer, per policy (the summary counts them all). */
const KEPT_TRAJECTORIES = 64;

export type Policy = 'base' | 'trained';

export interface EvaluateInput {
  tokenizer: TextTokenizer;
  model: ModelConfig;
  vision?: RolloutVision;
  /** The run's config as the page stored it (the preset merged in). */
  config: ConfigLayer;
  /** The task evaluated (RunOptions.task); its env is the server at envUrl. */
  task: string;
  envUrl: string;
  /** task 'mcp': the run's prompts. */
  prompts?: DatasetRow[];
  episodes: number;
  /** Plays `play` with the engine holding `policy`'s weights, and leaves it holding the trained ones after. */
  policies: (policy: Policy, play: (engine: RolloutEngine) => Promise<Trajectory[]>) => Promise<Trajectory[]>;
  onProgress?: (p: EvalProgress) => void;
}

/** The engine with the adapters switched on or off for every generate call and decode session (a LoRA run's base is the adapters off). */
export function withAdapters(engine: Engine, adapters: boolean): RolloutEngine {
  return {
    config: engine.config,
    newSequence: () => engine.newSequence(),
    releaseSequence: (seq) => engine.releaseSequence(seq),
    generate: (req) => engine.generate({ ...req, adapters }),
    openDecode: (opts) => engine.openDecode({ ...opts, adapters }),
  };
}

export async function evaluate(input: EvaluateInput): Promise<EvalResult> {
  if (!Number.isInteger(input.episodes) || input.episodes < 1) throw new Error(`evaluate: episodes must be a positive integer, got ${input.episodes}`);
  const resolved = await resolveRun({ env: input.task, envUrl: input.envUrl, prompts: async () => input.prompts ?? [], preset: false, config: [input.config] }, input.model);
  // An MCP env has no held-out split of its own: its run's prompts, at held-out seeds.
  const rows = resolved.task.name === 'mcp' ? resolved.task.task.dataset() : splitRows(resolved.task, 'eval');
  const seedOf = seedSpace(resolved.task.env, 'eval');
  const played: Record<Policy, Trajectory[]> = { base: [], trained: [] };
  // Trained first: after full fine-tuning the base takes an upload, and the trained weights come back last.
  for (const [k, policy] of (['trained', 'base'] as const).entries()) {
    // A fresh binding per policy: both play the same seeds and rows, in the same order.
    const task = bindRun(resolved, { tokenizer: input.tokenizer, model: input.model, ...(input.vision ? { vision: input.vision } : {}), split: 'eval' });
    played[policy] = await input.policies(policy, async (engine) => (await playSplit({
      engine,
      tokenizer: input.tokenizer,
      task,
      rows,
      episodes: input.episodes,
      seedOf,
      config: resolved.config,
      temperature: 0,
      seed: EVAL_SAMPLING_SEED,
      ...(input.vision ? { imageTokenizer: input.vision.imageTokenizer } : {}),
      ...(input.onProgress ? { onProgress: (p) => input.onProgress!({ policy, round: k + 1, rounds: 2, done: p.episodesDone, total: input.episodes }) } : {}),
    })).trajectories);
  }
  const name = resolved.task.name;
  return {
    task: name,
    episodes: input.episodes,
    base: summarize(played.base, name),
    trained: summarize(played.trained, name),
    paired: comparison(played.trained, played.base),
    trajectories: { base: played.base.slice(0, KEPT_TRAJECTORIES), trained: played.trained.slice(0, KEPT_TRAJECTORIES) },
  };
}
