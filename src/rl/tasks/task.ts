// The task contract: what a training task is (a dataset, an env factory over OpenEnv base URLs, reward
// functions, GRPOConfig overrides). Its own module so task modules and the task table import it
// without importing each other.

import type { DatasetRow, EnvFactory } from '../rollout/env.ts';
import type { OpenEpisode } from './envs/episode-session.ts';
import type { RewardFunction } from '../grpo/rewards.ts';

/** The built-in envs a task may need a URL for. */
export type EnvUrlName = 'echo' | 'catch' | 'wordle' | 'browsergym' | 'sudoku';

export type ExampleName = 'echo' | 'catch' | 'wordle' | 'multi' | 'browsergym' | 'browsergym-vlm';

export interface ExampleTask {
  /**
   * `mcp`: the generic task of any MCP env (mcp-task.ts); `action-schema`: of any action-protocol env
   * (action-schema-task.ts); `env-class`: a user's module (env-class.ts).
   */
  name: ExampleName | 'sudoku' | 'mcp' | 'action-schema' | 'env-class';
  /** The example's dataset (`size` rows where the script has a --dataset-size). */
  dataset(size?: number): DatasetRow[];
  /** Env base URLs by built-in env name (`echo`, `catch`, `wordle`, `browsergym`). */
  envFactory(urls: Partial<Record<EnvUrlName, string>>, open?: OpenEpisode): EnvFactory;
  /** Named as in the script (`fn.name` is the metric name `rewards/<name>/mean`). */
  rewardFuncs: RewardFunction[];
  /** The script's GRPOConfig arguments (TRL names) that differ from the defaults. */
  config: Record<string, unknown>;
  /** Its env returns images (screenshots): only a model that reads them can train on it. */
  needsVision?: boolean;
}

/** A task (dataset, env factory, reward functions, config overrides), optionally with its own chat template. */
export type ChatTemplateTask = ExampleTask & {
  /** Rendering template; default: the checkpoint's own (swapped for the Qwen3 training variant with tools). */
  template?: string;
};
