// The run orchestrator, shared by the `train` CLI (run-example.ts) and the app's worker
// (workers/trainer-service.ts): trainable mode → SFT warm-up → optimizer reset → GRPO over the task's
// envs (games reseeded per generation, resets prefetched) → PEFT adapter files. Front ends add only
// transport: the CLI prints JSON lines and writes folders; the worker adds comlink events, pause/resume
// segments and IndexedDB checkpoints, calling warmUp() and grpo() per segment.

import type { Engine, TrainableMode } from '../engine/types.ts';
import { peftAdapterFiles } from '../engine/peft-adapter.ts';
import type { TextTokenizer } from '../model/tokenizer.ts';
import type { CheckpointStore, TrainerCheckpoint } from './grpo/checkpoint.ts';
import type { GRPOConfig } from './config.ts';
import type { DatasetRow, EnvFactory } from './rollout/env.ts';
import type { RewardFunction } from './grpo/rewards.ts';
import type { Rollout, RolloutProgress } from './rollout/rollout.ts';
import { envRolloutSource } from './rollout/rollout-source.ts';
import { trainSft, type SftEvent, type SftExample } from './grpo/sft.ts';
import { referenceAfterWarmup, trainGRPO, type EngineState, type StepEvent, type TrainerProgress } from './grpo/trainer.ts';

export type RunEvent = SftEvent | ({ phase: 'grpo' } & StepEvent);

/** Where a GRPO step is: its rollouts' live counts, then the trainer's log-prob passes and micro-batches. */
export type RunProgress = ({ phase: 'rollouts' } & RolloutProgress) | TrainerProgress;

/** What a run trains on (one task, over its env's URL). */
export interface RunTaskSpec {
  dataset: DatasetRow[];
  envFactory: EnvFactory;
  /** Seeded env episodes (solvers.ts seededEpisodes): a run's games are a function of (seed, generation). */
  episodes: { reseed(next: number): void };
  /** Every reward source (the task's functions, plus the env's own getReward if it has one). */
  rewardFuncs: RewardFunction[];
  /** The template rollouts and SFT examples render with. */
  template: string;
}

export { plannedWorkload } from './run-limits.ts';

export function trainableMode(c: GRPOConfig): TrainableMode {
  if (c.train_mode === 'full') return { kind: 'full' };
  return { kind: 'lora', lora: { r: c.lora_r, alpha: c.lora_alpha, targetModules: c.lora_target_modules, seed: c.seed } };
}

const MOMENT = /\.(exp_avg|exp_avg_sq)$/;

/**
 * Starts AdamW afresh (zero moments, step 0) while keeping the weights: GRPO after the SFT warm-up
 * gets its own optimizer, as two separate TRL trainers would.
 */
export async function resetOptimizer(engine: Engine): Promise<void> {
  const state = await engine.saveState();
  const moments = state.tensors.filter((t) => MOMENT.test(t.name));
  if (moments.length === 0) throw new Error('resetOptimizer: the engine state has no AdamW moments (*.exp_avg / *.exp_avg_sq)');
  for (const t of moments) t.data.fill(0);
  await engine.loadState({ tensors: state.tensors, step: 0 });
}

export interface WarmUpOptions {
  engine: Engine;
  config: GRPOConfig;
  examples: SftExample[];
  /** Warm-up steps of the whole run. */
  steps: number;
  /** Steps already done (a resumed warm-up draws fresh batches rather than replaying the first ones). */
  done?: number;
  signal?: AbortSignal;
}

/**
 * The SFT warm-up from step `done` to `steps`; when it completes (not aborted) the optimizer is reset
 * for GRPO. An aborted warm-up just stops after its last step (the caller checkpoints it).
 */
export async function* warmUp(o: WarmUpOptions): AsyncGenerator<SftEvent, void> {
  const c = o.config;
  const done = o.done ?? 0;
  let ran = done;
  for await (const e of trainSft({
    engine: o.engine,
    examples: o.examples,
    steps: o.steps - done,
    batchSize: c.sft_batch_size,
    learningRate: c.sft_learning_rate,
    seed: c.seed + done,
    optimizer: { beta1: c.adam_beta1, beta2: c.adam_beta2, eps: c.adam_epsilon, weightDecay: c.weight_decay, maxGradNorm: c.max_grad_norm },
    signal: o.signal,
  })) {
    ran++;
    yield e;
  }
  if (ran === o.steps) await resetOptimizer(o.engine);
}

export interface GrpoOptions {
  engine: Engine;
  tokenizer: TextTokenizer;
  config: GRPOConfig;
  task: RunTaskSpec;
  checkpointStore?: CheckpointStore;
  resume?: TrainerCheckpoint;
  signal?: AbortSignal;
  /** Each generation's rollouts as soon as they are played (the app shows them with the next step). */
  onRollouts?: (rollouts: Rollout[]) => void | Promise<void>;
  /**
   * Decode slots: the sequence count the engine's memory plan was checked for (plannedWorkload's
   * numSequences). A generation larger than this plays in waves (lockstep) or refills freed slots
   * (continuous); no engine batch exceeds it.
   */
  maxBatchSize: number;
  /** The KL reference when GRPO starts from a warmed-up policy (referenceAfterWarmup); default: the base model. */
  reference?: EngineState;
  /** Progress within each step, as it changes (counts only; the CLI shows it on stderr). */
  onProgress?: (p: RunProgress) => void;
}

/** GRPO over the task's envs: one rollout source (reseeded games, prefetched resets) feeding trainGRPO. */
export async function* grpo(o: GrpoOptions): AsyncGenerator<StepEvent, void> {
  const { engine, tokenizer, config, task } = o;
  const onProgress = o.onProgress;
  const source = envRolloutSource({
    engine, tokenizer, envFactory: task.envFactory, episodes: task.episodes, config, template: task.template, maxBatchSize: o.maxBatchSize,
    onProgress: onProgress && ((p) => onProgress({ phase: 'rollouts', ...p })),
  });
  try {
    yield* trainGRPO({
      engine,
      config,
      dataset: task.dataset,
      rollouts: async (req) => {
        const rollouts = await source.rollouts(req);
        await o.onRollouts?.(rollouts);
        return rollouts;
      },
      prefetch: source.prefetch,
      rewardFuncs: task.rewardFuncs,
      checkpointStore: o.checkpointStore,
      resume: o.resume,
      reference: o.reference,
      signal: o.signal,
      decode: (ids) => tokenizer.decode(ids),
      onProgress,
    });
  } finally {
    // A stopped run may leave a prefetched generation's sessions open: closed in the background (a
    // reset without a timeout may never answer, and stopping must not wait for it).
    void source.close();
  }
}

export interface RunOptions extends GrpoOptions {
  /** SFT warm-up examples; needed when config.sft_steps > 0 (the warm-up is skipped on resume). */
  sftExamples?: () => SftExample[] | Promise<SftExample[]>;
}

/** A whole run in one call: trainable mode, warm-up (unless resuming), GRPO. */
export async function* runTraining(o: RunOptions): AsyncGenerator<RunEvent, void> {
  const { engine, config: c } = o;
  engine.setTrainable(trainableMode(c));
  let warmedUp = false;
  if (!o.resume && c.sft_steps > 0) {
    const examples = o.sftExamples ? await o.sftExamples() : [];
    if (examples.length === 0) throw new Error('sft_steps > 0 needs transcripts (--sft FILE or --sft-solver)');
    yield* warmUp({ engine, config: c, examples, steps: c.sft_steps, signal: o.signal });
    if (o.signal?.aborted) return;
    warmedUp = true;
  }
  // KL is measured against the policy GRPO starts from: the warmed-up one after a warm-up.
  const reference = o.reference ?? (await referenceAfterWarmup(engine, c, warmedUp));
  for await (const e of grpo({ ...o, reference })) yield { phase: 'grpo', ...e };
}

/** The PEFT adapter as files (adapter_config.json, adapter_model.safetensors), the same from every front end. */
export async function adapterFiles(engine: Engine, baseModelName: string): Promise<{ name: string; bytes: Uint8Array }[]> {
  return [...peftAdapterFiles(await engine.exportAdapter(baseModelName))].map(([name, bytes]) => ({ name, bytes }));
}
