// A whole training run on one of TRL's example tasks (echo, catch, wordle, multi): trainable mode,
// optional SFT warm-up on transcripts, then GRPO with the example's dataset, env and reward functions.
// The `train` CLI, the learning test and the catch demo all run through here.

import type { Engine, TrainableMode } from '../engine/types.ts';
import type { TextTokenizer } from '../model/tokenizer.ts';
import type { CheckpointStore, TrainerCheckpoint } from './checkpoint.ts';
import type { GRPOConfig } from './config.ts';
import { envToolSchemas, type DatasetRow } from './env.ts';
import type { ExampleTask } from './prompts.ts';
import { rewardSources } from './rewards.ts';
import { runRollouts } from './rollout.ts';
import { tokenizeTranscript, trainSft, type SftEvent, type Transcript } from './sft.ts';
import { seededEpisodes } from './solvers.ts';
import { rolloutChatTemplate } from './templates/select.ts';
import { referenceAfterWarmup, trainGRPO, type StepEvent } from './trainer.ts';
import { hashInts } from './random.ts';

export type RunEvent = SftEvent | ({ phase: 'grpo' } & StepEvent);

/** A task (dataset, env factory, reward functions, config overrides), optionally with its own chat template. */
export type ChatTemplateTask = ExampleTask & {
  /** Rendering template; default: the checkpoint's own (swapped for the Qwen3 training variant with tools). */
  template?: string;
};

export interface ExampleRunOptions {
  engine: Engine;
  tokenizer: TextTokenizer;
  task: ChatTemplateTask;
  /** Base URL of each built-in env the example needs, e.g. `{ catch: 'http://127.0.0.1:8000/envs/catch' }`. */
  envUrls: Partial<Record<'echo' | 'catch' | 'wordle', string>>;
  config: GRPOConfig;
  /** SFT warm-up data; used when config.sft_steps > 0 (skipped on resume). */
  transcripts?: Transcript[];
  /** Rows of the example dataset (default: the example's own size). */
  datasetSize?: number;
  checkpointStore?: CheckpointStore;
  resume?: TrainerCheckpoint;
  signal?: AbortSignal;
}

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

export async function* runExample(opts: ExampleRunOptions): AsyncGenerator<RunEvent, void> {
  const { engine, tokenizer, config: c } = opts;
  const task = opts.task;
  // Seeded resets, reseeded per generation batch: the env games are a function of (seed, generation).
  const open = seededEpisodes(0);
  const envFactory = task.envFactory(opts.envUrls, open);
  const probe = envFactory();
  const rewardFuncs = rewardSources(task.rewardFuncs, probe);
  const template = task.template ?? rolloutChatTemplate(tokenizer, { hasTools: probe.tools.length > 0 });
  engine.setTrainable(trainableMode(c));

  let warmedUp = false;
  if (!opts.resume && c.sft_steps > 0) {
    if (!opts.transcripts || opts.transcripts.length === 0) throw new Error('sft_steps > 0 needs transcripts (--sft FILE or --sft-solver)');
    const tools = envToolSchemas(probe);
    const examples = opts.transcripts.map((t) => tokenizeTranscript(t, { tokenizer, template, tools, chatTemplateKwargs: c.chat_template_kwargs }));
    yield* trainSft({
      engine,
      examples,
      steps: c.sft_steps,
      batchSize: c.sft_batch_size,
      learningRate: c.sft_learning_rate,
      seed: c.seed,
      optimizer: { beta1: c.adam_beta1, beta2: c.adam_beta2, eps: c.adam_epsilon, weightDecay: c.weight_decay, maxGradNorm: c.max_grad_norm },
      signal: opts.signal,
    });
    if (opts.signal?.aborted) return;
    await resetOptimizer(engine);
    warmedUp = true;
  }

  const dataset: DatasetRow[] = task.dataset(opts.datasetSize);
  const events = trainGRPO({
    engine,
    config: c,
    dataset,
    rewardFuncs,
    checkpointStore: opts.checkpointStore,
    resume: opts.resume,
    reference: await referenceAfterWarmup(engine, c, warmedUp),
    signal: opts.signal,
    decode: (ids) => tokenizer.decode(ids),
    rollouts: (req) => {
      open.reseed(hashInts(req.seed, 0x5eed));
      return runRollouts({ engine, tokenizer, rows: req.rows, envFactory, config: c, seed: req.seed, template });
    },
  });
  for await (const e of events) yield { phase: 'grpo', ...e };
}
