// The options of `webgrpo bench rollouts` (strings from the CLI) checked and typed, and the bench's two
// tasks: what each plays (task, env path, scripted warm-up transcripts) and the sizes its episodes
// need. Apart from run.ts so that a bad option is caught, and a task chosen, without an engine.

import type { Transcript } from '../../src/rl/grpo/sft.ts';
import type { RolloutSchedulerName } from '../../src/rl/rollout/rollout.ts';
import { browsergymTranscripts } from '../../src/rl/tasks/browsergym-solver.ts';
import { browsergymTask, parseBrowserGymMix, type BrowserGymMix } from '../../src/rl/tasks/browsergym-task.ts';
import { COMPACT_CATCH_TASK } from '../../src/rl/tasks/compact-catch.ts';
import { compactCatchTranscripts } from '../../src/rl/tasks/solvers.ts';
import type { ChatTemplateTask, EnvUrlName } from '../../src/rl/tasks/task.ts';

export type BenchTaskName = 'catch' | 'browsergym';

/** One task the bench can play. */
export interface BenchTask {
  name: BenchTaskName;
  /** The task (loaded when the bench starts: the browsergym task is an example class's module). */
  task: () => Promise<ChatTemplateTask>;
  /** The built-in env it plays, served at `/envs/<env>`; also its key in the task's env URLs. */
  env: EnvUrlName;
  /** Scripted, won episodes for the untimed SFT warm-up of the generated model. */
  transcripts(baseUrl: string, episodes: number, seed: number): Promise<Transcript[]>;
  /** Sampled completion tokens per episode, tool replies included (TRL's max_completion_length). */
  maxCompletionLength: number;
  /** The memory plan's tokens per sequence: the longest prompt plus the completion. */
  maxTokensPerSequence: number;
  /** Warm-up defaults: SFT steps and learning rate. */
  sftSteps: number;
  sftLearningRate: number;
}

export function benchTask(name: BenchTaskName, mix: BrowserGymMix = 'mix'): BenchTask {
  if (name === 'catch') {
    return {
      name, task: async () => COMPACT_CATCH_TASK, env: 'catch',
      transcripts: (baseUrl, episodes, seed) => compactCatchTranscripts({ baseUrl, episodes, seed }),
      // A whole compact catch episode is ~330 tokens.
      maxCompletionLength: 400, maxTokensPerSequence: 512,
      sftSteps: 70, sftLearningRate: 2e-2,
    };
  }
  return {
    name, task: () => browsergymTask(mix), env: 'browsergym',
    transcripts: (baseUrl, episodes, seed) => browsergymTranscripts({ baseUrl, episodes, seed, mix }),
    // TRL's browsergym max_completion_length. The byte-tokenized prompt (system prompt, the five tool
    // schemas, the reset page) is 1.3–2.3k tokens; each tool reply is a whole page (≤ 2,000 characters).
    maxCompletionLength: 1024, maxTokensPerSequence: 4096,
    // 70 steps (catch's) leave the loss at 0.99 and every episode a single turn without a tool call;
    // 200 reach 0.11 and tool-calling episodes of 1–3 turns (BENCHMARKS.md).
    sftSteps: 200, sftLearningRate: 2e-2,
  };
}

export interface BenchRolloutsOptions {
  task: BenchTask;
  /** base URL of an env serving the task; null: an in-process env-server. */
  env: string | null;
  /** checkpoint folder/repo; null: the generated tiny model, warmed up. */
  model: string | null;
  episodes: number;
  seed: number;
  sftSteps: number;
  sftLearningRate: number;
  schedulers: RolloutSchedulerName[];
  latency: boolean;
  latencySeed: number;
  maxBatch: number;
}

function int(opts: Record<string, string>, key: string, dflt: number): number {
  if (opts[key] === undefined) return dflt;
  const v = Number(opts[key]);
  if (!Number.isInteger(v) || v < 0) throw new Error(`bench rollouts: --${key} must be a non-negative integer, got '${opts[key]}'`);
  return v;
}

function positive(opts: Record<string, string>, key: string, dflt: number): number {
  if (opts[key] === undefined) return dflt;
  const v = Number(opts[key]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`bench rollouts: --${key} must be a positive number, got '${opts[key]}'`);
  return v;
}

export function parseBenchRolloutsOptions(opts: Record<string, string>): BenchRolloutsOptions {
  const taskName = opts.task ?? 'catch';
  if (taskName !== 'catch' && taskName !== 'browsergym') throw new Error(`bench rollouts: --task must be catch or browsergym, got '${taskName}'`);
  if (opts.tasks !== undefined && taskName !== 'browsergym') throw new Error('bench rollouts: --tasks (the browsergym task mix) needs --task browsergym');
  const task = benchTask(taskName, opts.tasks === undefined ? 'mix' : parseBrowserGymMix(opts.tasks));
  const which = opts.scheduler ?? 'both';
  if (!['lockstep', 'continuous', 'both'].includes(which)) throw new Error(`bench rollouts: --scheduler must be lockstep, continuous or both, got '${which}'`);
  const latency = opts.latency ?? 'on';
  if (latency !== 'on' && latency !== 'off') throw new Error(`bench rollouts: --latency must be on or off, got '${latency}'`);
  const episodes = int(opts, 'episodes', 16);
  if (episodes < 1) throw new Error('bench rollouts: --episodes must be ≥ 1');
  const maxBatch = int(opts, 'max-batch', episodes);
  if (maxBatch < 1) throw new Error('bench rollouts: --max-batch must be ≥ 1');
  return {
    task,
    env: opts.env ?? null,
    model: opts.model ?? null,
    episodes,
    seed: int(opts, 'seed', 42),
    sftSteps: int(opts, 'sft-steps', task.sftSteps),
    sftLearningRate: positive(opts, 'sft-lr', task.sftLearningRate),
    schedulers: which === 'both' ? ['lockstep', 'continuous'] : [which as RolloutSchedulerName],
    latency: latency === 'on',
    latencySeed: int(opts, 'latency-seed', 1),
    maxBatch,
  };
}
