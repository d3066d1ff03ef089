// Catch for tiny models. The TRL catch prompt, the tool-schema system block and the grid text make an
// episode ~1,600 tokens with a byte-level tokenizer — minutes per step on a CPU-emulated GPU. This
// variant plays the same built-in catch env (same OpenEnv protocol, same `move`/`stay` tools and calls,
// same reward) but says only where the ball is relative to the paddle (`left`, `right`, `above`) and
// renders with a Qwen3-format template without the tools block, so a whole episode is ~330 tokens.

import type { DatasetRow, Tool, ToolEnv } from '../rollout/env.ts';
import { catchActionId, catchReward, CATCH_COLS, CATCH_ROWS, MOVE_TOOL, STAY_TOOL } from './envs/catch.ts';
import { EpisodeSlot, type OpenEpisode } from './envs/episode-session.ts';
import type { ChatTemplateTask } from './task.ts';
import type { RewardFunction } from '../grpo/rewards.ts';

/** Qwen3's turn format (same tokens around turns, tool calls and tool responses) minus tools block and think block. */
export const COMPACT_CHAT_TEMPLATE = String.raw`{%- for message in messages %}
    {%- if message.content is string %}{%- set content = message.content %}{%- else %}{%- set content = '' %}{%- endif %}
    {%- if message.role == 'user' or message.role == 'system' %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>\n' }}
    {%- elif message.role == 'assistant' %}
        {{- '<|im_start|>assistant\n' + content }}
        {%- for call in message.tool_calls or [] %}
            {%- if content or not loop.first %}{{- '\n' }}{%- endif %}
            {{- '<tool_call>\n{"name": "' + call.function.name + '", "arguments": ' + (call.function.arguments | tojson) + '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
        {{- '\n<tool_response>\n' + content + '\n</tool_response>' }}
        {%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\n' }}{%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}`;

export const COMPACT_CATCH_PROMPT = 'Catch the ball.\n';

/** Where the ball is relative to the paddle, or how the game ended. */
export function compactCatchObservation(infoState: readonly number[], done: boolean, reward: number | null): string {
  if (done) return (reward ?? 0) > 0 ? 'caught' : 'missed';
  let ball = -1;
  let paddle = -1;
  infoState.forEach((v, i) => {
    if (v !== 1) return;
    if (Math.floor(i / CATCH_COLS) < CATCH_ROWS - 1) ball = i % CATCH_COLS;
    else paddle = i % CATCH_COLS;
  });
  if (ball < 0 || paddle < 0) throw new Error('catch observation has no ball or no paddle');
  return ball < paddle ? 'left' : ball > paddle ? 'right' : 'above';
}

/** The catch tool env with one-word observations; `reward`/`done` as in catch.mjs (so catchReward applies). */
export class CompactCatchEnv implements ToolEnv {
  reward = 0;
  done = false;
  /** Moves the env accepted this episode (a game takes 9). */
  moves = 0;
  private readonly episode: EpisodeSlot;
  readonly tools: Tool[] = [
    { declaration: MOVE_TOOL, call: (args) => this.act(catchActionId(args.direction)) },
    { declaration: STAY_TOOL, call: () => this.act(1) },
  ];

  constructor(baseUrl: string, open: OpenEpisode) {
    this.episode = new EpisodeSlot(baseUrl, open);
  }

  async reset(_row: DatasetRow): Promise<string> {
    const first = await this.episode.reset();
    this.reward = 0;
    this.moves = 0;
    this.done = first.done;
    return compactCatchObservation(first.observation.info_state as number[], false, null);
  }

  private async act(actionId: number): Promise<string> {
    if (this.done) throw new Error('Episode is done.');
    const result = await this.episode.step({ action_id: actionId, game_name: 'catch', game_params: {} });
    this.reward = typeof result.reward === 'number' ? result.reward : 0;
    this.done = result.done;
    this.moves++;
    return compactCatchObservation(result.observation.info_state as number[], result.done, this.reward);
  }

  close(): Promise<void> {
    return this.episode.close();
  }
}

const caught: RewardFunction = function caught({ environments }) {
  return environments.map((env) => (env instanceof CompactCatchEnv ? catchReward(env) : null));
};

/**
 * A dense shaping term for tiny models: the fraction of the game's 9 moves that were played. The catch
 * reward alone is 0 until a whole game of well-formed calls is played, too sparse for a few steps.
 */
const progress: RewardFunction = function progress({ environments }) {
  return environments.map((env) => (env instanceof CompactCatchEnv ? Math.min(env.moves, 9) / 9 : null));
};

/** The compact catch task: rows, env factory over the built-in catch env, reward, template. */
export const COMPACT_CATCH_TASK: ChatTemplateTask = {
  name: 'catch',
  dataset: (size = 1000) => Array.from({ length: size }, () => ({ prompt: [{ role: 'user' as const, content: COMPACT_CATCH_PROMPT }] })),
  envFactory: (urls, open) => {
    const url = urls.catch;
    if (!url) throw new Error('the catch env needs a base URL');
    return () => new CompactCatchEnv(url, open!);
  },
  rewardFuncs: [caught, progress],
  config: { chat_template_kwargs: null },
  template: COMPACT_CHAT_TEMPLATE,
};

/** The scripted policy on one-word observations. */
export function compactCatchAction(observation: string): { name: string; arguments: Record<string, unknown> } {
  const word = observation.trim().split('\n').pop();
  if (word === 'left' || word === 'right') return { name: 'move', arguments: { direction: word } };
  return { name: 'stay', arguments: {} };
}
