// A whole training run on one of TRL's example tasks (echo, catch, wordle, multi): the example's
// dataset, env and reward functions turned into a RunTaskSpec, then the shared run orchestrator
// (run.ts: trainable mode, optional SFT warm-up on transcripts, GRPO). The `train` CLI, the learning
// test and the catch demo all run through here.

import type { Engine } from '../engine/types.ts';
import type { TextTokenizer } from '../model/tokenizer.ts';
import type { CheckpointStore, TrainerCheckpoint } from './grpo/checkpoint.ts';
import type { GRPOConfig } from './config.ts';
import { envToolSchemas } from './rollout/env.ts';
import type { ChatTemplateTask, EnvUrlName } from './tasks/task.ts';
import { rewardSources } from './grpo/rewards.ts';
import { runTraining, type RunEvent, type RunProgress } from './run.ts';
import { tokenizeTranscript, type Transcript } from './grpo/sft.ts';
import { seededEpisodes } from './tasks/solvers.ts';
import { rolloutChatTemplate } from './rollout/templates/select.ts';

export type { RunEvent, RunProgress } from './run.ts';
export { resetOptimizer, trainableMode } from './run.ts';
export type { ChatTemplateTask } from './tasks/task.ts';

export interface ExampleRunOptions {
  engine: Engine;
  tokenizer: TextTokenizer;
  task: ChatTemplateTask;
  /** Base URL of each built-in env the example needs, e.g. `{ catch: 'http://127.0.0.1:8000/envs/catch' }`. */
  envUrls: Partial<Record<EnvUrlName, string>>;
  config: GRPOConfig;
  /** SFT warm-up data; used when config.sft_steps > 0 (skipped on resume). */
  transcripts?: Transcript[];
  /** Rows of the example dataset (default: the example's own size). */
  datasetSize?: number;
  checkpointStore?: CheckpointStore;
  resume?: TrainerCheckpoint;
  signal?: AbortSignal;
  /** Decode slots: the sequence count the engine's memory plan was checked for (run.ts plannedWorkload). */
  maxBatchSize: number;
  /** Progress within each GRPO step (run.ts GrpoOptions.onProgress). */
  onProgress?: (p: RunProgress) => void;
}

export async function* runExample(opts: ExampleRunOptions): AsyncGenerator<RunEvent, void> {
  const { engine, tokenizer, task, config: c } = opts;
  // Seeded resets, reseeded per generation batch: the env games are a function of (seed, generation).
  const episodes = seededEpisodes(0);
  const envFactory = task.envFactory(opts.envUrls, episodes);
  const probe = envFactory();
  const template = task.template ?? rolloutChatTemplate(tokenizer, { hasTools: probe.tools.length > 0 });
  yield* runTraining({
    engine,
    tokenizer,
    config: c,
    task: { dataset: task.dataset(opts.datasetSize), envFactory, episodes, rewardFuncs: rewardSources(task.rewardFuncs, probe), template },
    sftExamples: () => {
      const tools = envToolSchemas(probe);
      return (opts.transcripts ?? []).map((t) => tokenizeTranscript(t, { tokenizer, template, tools, chatTemplateKwargs: c.chat_template_kwargs }));
    },
    checkpointStore: opts.checkpointStore,
    resume: opts.resume,
    signal: opts.signal,
    maxBatchSize: opts.maxBatchSize,
    onProgress: opts.onProgress,
  });
}
