// What a run trains on, from the environment the page chose: TRL's example task for that env (its
// dataset, tool env class over the env's OpenEnv URL, reward functions, chat template) and, for the
// SFT warm-up, transcripts from the built-in scripted solver or the JSONL the user uploaded. Or, on
// any MCP environment, the user's own prompts with the env's tools/list and rewards (src/rl/tasks/mcp-task.ts).
//
// The built-in tiny model plays catch through the compact variant (src/rl/tasks/compact-catch.ts): the same
// built-in catch env, tools and reward, but one-word observations and no tool-schema block, so an
// episode is ~330 tokens instead of ~1,600 and a step takes seconds, not minutes, on a software GPU.

import type { TextTokenizer } from '../src/model/tokenizer.ts';
import { COMPACT_CATCH_TASK } from '../src/rl/tasks/compact-catch.ts';
import type { GRPOConfig } from '../src/rl/config.ts';
import { envToolSchemas } from '../src/rl/rollout/env.ts';
import { EXAMPLES } from '../src/rl/tasks/prompts.ts';
import { rewardSources, type RewardFunction } from '../src/rl/grpo/rewards.ts';
import type { ChatTemplateTask } from '../src/rl/run-example.ts';
import { parseTranscripts, tokenizeTranscript, type SftExample, type Transcript } from '../src/rl/grpo/sft.ts';
import { seededEpisodes, SOLVERS, type SeededEpisodes } from '../src/rl/tasks/solvers.ts';
import { rolloutChatTemplate } from '../src/rl/rollout/templates/select.ts';
import type { DatasetRow, EnvFactory } from '../src/rl/rollout/env.ts';
import { mcpTask } from '../src/rl/tasks/mcp-task.ts';
import type { ToolSchema } from '../src/rl/rollout/schema.ts';

const ENV_NAMES = ['echo', 'catch', 'wordle', 'browsergym'] as const;
/** A TRL example's env, or 'mcp': the user's prompts on any MCP env. */
type EnvName = (typeof ENV_NAMES)[number] | 'mcp';

export interface RunTask {
  env: EnvName;
  dataset: DatasetRow[];
  /** Episodes reset with seeds derived from `episodes.reseed(base)`: a run's games are reproducible. */
  episodes: SeededEpisodes;
  envFactory: EnvFactory;
  /** Every reward source (the task's functions, plus the env's own getReward if it has one). */
  rewardFuncs: RewardFunction[];
  /** The template rollouts and SFT transcripts render with. */
  template: string;
  /** Tool schemas SFT transcripts are rendered with (the env's tools). */
  tools: ToolSchema[];
  /** Name of the scripted solver in src/rl/tasks/solvers.ts that plays this task. */
  solver: string | null;
}

function envName(name: string): EnvName {
  if ((ENV_NAMES as readonly string[]).includes(name) || name === 'mcp') return name as EnvName;
  throw new Error(`no tool environment for '${name}': the trainer knows TRL's ${ENV_NAMES.join(', ')} tasks, or your own prompts on an MCP environment`);
}

export interface RunTaskInput {
  envName: string;
  envUrl: string;
  tokenizer: TextTokenizer;
  /** The built-in tiny model: catch runs as the compact variant. */
  tinyModel: boolean;
  /** envName 'mcp': the prompts the model is given (a run's dataset, cycled). */
  prompts?: DatasetRow[];
}

/** The task over the env at `envUrl` (an MCP env's tool list is read once, here). */
export async function runTask(input: RunTaskInput): Promise<RunTask> {
  const env = envName(input.envName);
  const compact = input.tinyModel && env === 'catch';
  const episodes = seededEpisodes(0);
  const task: ChatTemplateTask = env === 'mcp' ? await mcpTask(input.envUrl, input.prompts ?? [], episodes) : compact ? COMPACT_CATCH_TASK : EXAMPLES[env];
  const envFactory = task.envFactory({ [env]: input.envUrl }, episodes);
  const probe = envFactory();
  return {
    env,
    dataset: task.dataset(),
    episodes,
    envFactory,
    rewardFuncs: rewardSources(task.rewardFuncs, probe),
    template: task.template ?? rolloutChatTemplate(input.tokenizer, { hasTools: probe.tools.length > 0 }),
    tools: envToolSchemas(probe),
    solver: compact ? 'catch-compact' : env !== 'mcp' && SOLVERS[env] ? env : null,
  };
}

/** Episodes the scripted solver plays for the warm-up: enough variety for a few batches, cheap to play. */
export function solverEpisodes(config: GRPOConfig): number {
  return Math.max(16, config.sft_batch_size * 2);
}

export interface SftDataInput {
  task: RunTask;
  envUrl: string;
  config: GRPOConfig;
  tokenizer: TextTokenizer;
  /** Uploaded transcripts; used instead of the solver's when given. */
  jsonl?: string;
}

/** Tokenized SFT examples, rendered exactly as the rollouts render (so the tokens line up). */
export async function sftExamples(input: SftDataInput): Promise<SftExample[]> {
  const { task } = input;
  let transcripts: Transcript[];
  if (input.jsonl !== undefined) {
    transcripts = parseTranscripts(input.jsonl, 'uploaded SFT data');
  } else {
    const solve = task.solver ? SOLVERS[task.solver] : undefined;
    if (!solve) {
      throw new Error(`sft_steps > 0 but there is no scripted solver for '${task.env}' (only ${Object.keys(SOLVERS).join(', ')}): upload SFT transcripts as JSONL or set sft_steps to 0`);
    }
    transcripts = await solve({ baseUrl: input.envUrl, episodes: solverEpisodes(input.config), seed: input.config.seed });
  }
  return transcripts.map((t) => tokenizeTranscript(t, { tokenizer: input.tokenizer, template: task.template, tools: task.tools, chatTemplateKwargs: input.config.chat_template_kwargs }));
}
