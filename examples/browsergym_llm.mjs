// TRL's examples/scripts/openenv/browsergym_llm.py as an environment class: a text-only web agent on
// BrowserGym's MiniWoB tasks (webgrpo's built-in /envs/browsergym, or a BrowserGym server with
// --env-url). Tools click, fill, noop, scroll, send_keys send BrowserGym action strings; each answers with
// the goal, the last action's error and the page's accessibility tree (cut at 2000 characters). Reward 1
// when the task ends in success. A row's `task_name` column picks the task (default click-test).
//
//   webgrpo train --model DIR --env-class examples/browsergym_llm.mjs
import { EnvClient, envUrl } from 'webgrpo/openenv';

export const SYSTEM_PROMPT = `You control a web browser to complete tasks.

The page structure shows elements as: [bid] element_type 'element_text'
For example: [13] button 'Click Me!' means the element has bid='13'.

Use the available tools to interact with the page:
- click: Click an element by its bid
- fill: Fill an input field with text
- send_keys: Send keyboard input
- scroll: Scroll the page
- noop: Do nothing

Complete the given task as efficiently as possible.`;

const MAX_STEPS = 10;
const AXTREE_CUT = 2000;

/** Python's repr() of a string, as TRL's f"click({bid!r})" writes it into the action. */
export function pyRepr(value) {
  if (typeof value !== 'string') return JSON.stringify(value);
  const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of value) {
    const code = ch.codePointAt(0);
    if (ch === '\\' || ch === quote) out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + quote;
}

/**
 * TRL's _format_observation: goal, the last action's error, the page tree (cut). `withError` false: the
 * VLM script's reset form, which has no Error part (examples/browsergym.mjs).
 */
export function describePage(observation, withError = true) {
  const parts = [];
  if (observation.goal) parts.push(`Goal: ${observation.goal}`);
  if (withError && observation.last_action_error && observation.error) parts.push(`Error: ${observation.error}`);
  if (observation.axtree_txt) {
    const points = [...observation.axtree_txt];
    parts.push(`Page structure:\n${points.length > AXTREE_CUT ? points.slice(0, AXTREE_CUT).join('') + '...' : observation.axtree_txt}`);
  }
  return parts.length > 0 ? parts.join('\n\n') : 'No observation available.';
}

export default class BrowserGymLLMEnv {
  static taskName = 'click-test';

  constructor() {
    this.client = new EnvClient(envUrl('browsergym'));
    this.reward = 0;
    this.done = false;
    this._steps = 0;
  }

  async reset(row) {
    this.reward = 0;
    this.done = false;
    this._steps = 0;
    const result = await this.client.reset({ task_name: row.task_name ?? BrowserGymLLMEnv.taskName });
    this.done = result.done;
    return describePage(result.observation);
  }

  /**
   * Click an element on the page.
   *
   * @param {string} bid The BrowserGym ID of the element to click.
   * @returns {string} The updated page observation.
   */
  click(bid) {
    return this._act(`click(${pyRepr(bid)})`);
  }

  /**
   * Fill an input field with text.
   *
   * @param {string} bid The BrowserGym ID of the input field.
   * @param {string} text The text to type into the field.
   * @returns {string} The updated page observation.
   */
  fill(bid, text) {
    return this._act(`fill(${pyRepr(bid)}, ${pyRepr(text)})`);
  }

  /**
   * Send keyboard input to the page.
   *
   * @param {string} text The keyboard input to send.
   * @returns {string} The updated page observation.
   */
  send_keys(text) {
    return this._act(`send_keys(${pyRepr(text)})`);
  }

  /**
   * Scroll the page.
   *
   * @param {string} direction Direction to scroll, either 'up' or 'down'.
   * @returns {string} The updated page observation.
   */
  scroll(direction) {
    return this._act(`scroll(${pyRepr(direction)})`);
  }

  /**
   * Do nothing and observe the current page state.
   *
   * @returns {string} The current page observation.
   */
  noop() {
    return this._act('noop()');
  }

  async _act(actionStr) {
    if (this.done) throw new Error('Episode is done.');
    this._steps++;
    const result = await this.client.step({ action_str: actionStr });
    const stepReward = Number(result.reward ?? 0);
    this.done = result.done;
    // Binary success on completion, as TRL shapes it.
    this.reward = this.done ? (stepReward > 0 ? 1 : 0) : stepReward;
    if (this._steps >= MAX_STEPS) this.done = true;
    return describePage(result.observation);
  }

  close() {
    return this.client.close();
  }
}

export function reward_completion({ environments }) {
  return environments.map((env) => env.reward);
}

export const rewardFuncs = [reward_completion];

export const dataset = Array.from({ length: 1000 }, () => ({
  prompt: [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: 'Complete the web task successfully.' },
  ],
}));

// browsergym_llm.py's GRPOConfig arguments (specs/browsergym.md §6.7); vLLM and trackio settings have no counterpart here.
export const config = {
  chat_template_kwargs: { enable_thinking: false },
  learning_rate: 5e-6,
  weight_decay: 0.0,
  gradient_accumulation_steps: 32,
  per_device_train_batch_size: 1,
  warmup_steps: 10,
  num_generations: 4,
  max_completion_length: 1024,
  temperature: 0.7,
  top_k: 50,
  num_train_epochs: 1,
  logging_steps: 1,
  save_steps: 50,
};
