// TRL's text-only BrowserGym example (examples/scripts/openenv/browsergym_llm.py, specs/browsergym.md
// §6): five tools (click, fill, send_keys, scroll, noop) that send BrowserGym action strings, the
// observation formatted as Goal / Error / Page structure with the tree cut at 2,000 characters, the
// reward shaped to 1.0 for a solved episode, and a 10-step cap. `reset` passes the row's
// `task_name` (one server serves every task), so a dataset can mix tasks.

import type { StepResult } from '../../../openenv/index.ts';
import type { DatasetRow, Tool, ToolEnv } from '../../rollout/env.ts';
import { pyReprString } from '../../../pyrepr.ts';
import type { ToolDeclaration } from '../../rollout/schema.ts';
import { EpisodeSlot, type OpenEpisode } from './episode-session.ts';

export const BROWSERGYM_SYSTEM_PROMPT = `You control a web browser to complete tasks.

The page structure shows elements as: [bid] element_type 'element_text'
For example: [13] button 'Click Me!' means the element has bid='13'.

Use the available tools to interact with the page:
- click: Click an element by its bid
- fill: Fill an input field with text
- send_keys: Send keyboard input
- scroll: Scroll the page
- noop: Do nothing

Complete the given task as efficiently as possible.`;

/**
 * TRL's `--dataset-prompt` default. TRL appends the reset observation to the last prompt message with
 * no separator (GRPOTrainer: `prompt[-1]["content"] += observation`), so the model reads
 * "…successfully.Goal: …": kept as TRL has it (specs/browsergym.md §6), so the prompt is TRL's token for token.
 */
export const BROWSERGYM_DATASET_PROMPT = 'Complete the web task successfully.';
/** TRL's `--max-steps` default: the episode ends after this many tool calls. */
export const BROWSERGYM_MAX_STEPS = 10;
/** `_format_observation` cuts the tree at this many characters (code points) and appends `...`. */
export const AXTREE_CUT = 2000;

const OBSERVATION = { type: 'string' as const, description: 'The updated page observation.' };

// The docstrings as transformers' get_json_schema reads them (summary, Args, Returns).
export const BROWSERGYM_TOOLS: ToolDeclaration[] = [
  {
    name: 'click',
    description: 'Click an element on the page.',
    parameters: [{ name: 'bid', type: 'string', description: 'The BrowserGym ID of the element to click.' }],
    returns: OBSERVATION,
  },
  {
    name: 'fill',
    description: 'Fill an input field with text.',
    parameters: [
      { name: 'bid', type: 'string', description: 'The BrowserGym ID of the input field.' },
      { name: 'text', type: 'string', description: 'The text to type into the field.' },
    ],
    returns: OBSERVATION,
  },
  {
    name: 'send_keys',
    description: 'Send keyboard input to the page.',
    parameters: [{ name: 'text', type: 'string', description: 'The keyboard input to send.' }],
    returns: OBSERVATION,
  },
  {
    name: 'scroll',
    description: 'Scroll the page.',
    parameters: [{ name: 'direction', type: 'string', description: "Direction to scroll, either 'up' or 'down'." }],
    returns: OBSERVATION,
  },
  {
    name: 'noop',
    description: 'Do nothing and observe the current page state.',
    parameters: [],
    returns: { type: 'string', description: 'The current page observation.' },
  },
];

/** TRL's `_format_observation` (§6.5); `withError` false: the VLM script's reset form, which has no Error part (§6.8). */
export function formatObservation(observation: Record<string, unknown>, withError = true): string {
  const parts: string[] = [];
  const goal = typeof observation.goal === 'string' ? observation.goal : '';
  const error = typeof observation.error === 'string' ? observation.error : '';
  const tree = typeof observation.axtree_txt === 'string' ? observation.axtree_txt : '';
  if (goal) parts.push(`Goal: ${goal}`);
  if (withError && observation.last_action_error === true && error) parts.push(`Error: ${error}`);
  if (tree) {
    const points = [...tree];
    parts.push(`Page structure:\n${points.length > AXTREE_CUT ? points.slice(0, AXTREE_CUT).join('') + '...' : tree}`);
  }
  return parts.length > 0 ? parts.join('\n\n') : 'No observation available.';
}

/** Python's `{x!r}` of a tool argument: strings quoted, anything else as the model sent it. */
function repr(value: unknown): string {
  return typeof value === 'string' ? pyReprString(value) : JSON.stringify(value);
}

export interface BrowserGymEnvOptions {
  /** Task when the row names none (TRL's `--task-name`, default click-test). */
  taskName?: string;
  maxSteps?: number;
}

export class BrowserGymToolEnv implements ToolEnv {
  reward = 0;
  done = false;
  steps = 0;
  /** The task of the current episode. */
  taskName = '';
  /** Formatted observations of this episode, reset first (the rollout viewer shows them per step). */
  readonly pages: string[] = [];
  private readonly episode: EpisodeSlot;
  private readonly maxSteps: number;
  private readonly defaultTask: string;
  readonly tools: Tool[] = this.toolsWith(BROWSERGYM_TOOLS);

  /** TRL's five tools with these declarations (in BROWSERGYM_TOOLS' order), each sending its action string. */
  protected toolsWith(declarations: readonly ToolDeclaration[]): Tool[] {
    const actions: ((a: Record<string, unknown>) => string)[] = [
      (a) => `click(${repr(a.bid)})`,
      (a) => `fill(${repr(a.bid)}, ${repr(a.text)})`,
      (a) => `send_keys(${repr(a.text)})`,
      (a) => `scroll(${repr(a.direction)})`,
      () => 'noop()',
    ];
    return declarations.map((declaration, i) => ({ declaration, call: (a) => this.act(actions[i]!(a)) }));
  }

  constructor(baseUrl: string, open: OpenEpisode, options: BrowserGymEnvOptions = {}) {
    this.episode = new EpisodeSlot(baseUrl, open);
    this.maxSteps = options.maxSteps ?? BROWSERGYM_MAX_STEPS;
    this.defaultTask = options.taskName ?? 'click-test';
  }

  async reset(row: DatasetRow): Promise<string> {
    this.reward = 0;
    this.done = false;
    this.steps = 0;
    this.pages.length = 0;
    this.taskName = typeof row.task_name === 'string' ? row.task_name : this.defaultTask;
    const first = await this.episode.reset(this.resetKwargs(this.taskName));
    this.done = first.done;
    return this.resetObservation(first);
  }

  /** The reset frame's kwargs: the row's task (one server serves every task). */
  protected resetKwargs(taskName: string): Record<string, unknown> {
    return { task_name: taskName };
  }

  protected async act(actionStr: string): Promise<unknown> {
    if (this.done) throw new Error('Episode is done.');
    this.steps += 1;
    const result = await this.episode.step({ action_str: actionStr });
    const stepReward = typeof result.reward === 'number' ? result.reward : 0;
    this.done = result.done;
    // TRL: a finished episode scores 1.0 if the page's reward is positive, else 0.0.
    this.reward = this.done ? (stepReward > 0 ? 1.0 : 0.0) : stepReward;
    if (this.steps >= this.maxSteps) this.done = true;
    return this.stepObservation(result);
  }

  /** What reset returns (appended to the prompt): the formatted observation. */
  protected resetObservation(result: StepResult): string {
    return this.record(formatObservation(result.observation));
  }

  /** What a tool call returns: the formatted observation. */
  protected stepObservation(result: StepResult): unknown {
    return this.record(formatObservation(result.observation));
  }

  protected record(text: string): string {
    this.pages.push(text);
    return text;
  }

  close(): Promise<void> {
    return this.episode.close();
  }
}

/** TRL's `reward_completion`: each env's final reward. */
export function rewardCompletion(env: BrowserGymToolEnv): number {
  return env.reward;
}
