// TRL's examples/scripts/openenv/browsergym.py (BrowserGymVLMEnv) as an environment class: the text
// example's five tools, reward and step cap (examples/browsergym_llm.mjs), for a vision-language model —
// every tool result is a list of content blocks, the page's screenshot thumbnailed to fit 512×512
// (TRL's --image-size default, PIL's thumbnail with LANCZOS) and then the page text. The reset
// observation stays text (appended to the prompt) and has no Error part. webgrpo's /envs/browsergym
// sends screenshots when the reset asks (`screenshot: true`); OpenEnv's BrowserGym server sends one
// with every observation and ignores that kwarg.
//
//   webgrpo train --model VLM_DIR --env-class examples/browsergym.mjs
import { EnvClient, envUrl } from 'webgrpo/openenv';
import { imageFromRgbRows, thumbnail } from 'webgrpo/images';
import { describePage, pyRepr } from './browsergym_llm.mjs';

export const SYSTEM_PROMPT = `You control a web browser to complete tasks.

The page structure shows elements as: [bid] element_type 'element_text'
For example: [13] button 'Click Me!' means the element has bid='13'.

You will see a screenshot of the page after each action. Use the visual information
along with the page structure to decide your next action.

Use the available tools to interact with the page:
- click: Click an element by its bid
- fill: Fill an input field with text
- send_keys: Send keyboard input
- scroll: Scroll the page
- noop: Do nothing

Complete the given task as efficiently as possible.`;

const MAX_STEPS = 10;
const IMAGE_SIZE = 512;

export default class BrowserGymVLMEnv {
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
    const result = await this.client.reset({ task_name: row.task_name ?? BrowserGymVLMEnv.taskName, screenshot: true });
    this.done = result.done;
    return describePage(result.observation, false);
  }

  /**
   * Click an element on the page.
   *
   * @param {string} bid The BrowserGym ID of the element to click.
   * @returns {Array} The updated page observation with screenshot.
   */
  click(bid) {
    return this._act(`click(${pyRepr(bid)})`);
  }

  /**
   * Fill an input field with text.
   *
   * @param {string} bid The BrowserGym ID of the input field.
   * @param {string} text The text to type into the field.
   * @returns {Array} The updated page observation with screenshot.
   */
  fill(bid, text) {
    return this._act(`fill(${pyRepr(bid)}, ${pyRepr(text)})`);
  }

  /**
   * Send keyboard input to the page.
   *
   * @param {string} text The keyboard input to send.
   * @returns {Array} The updated page observation with screenshot.
   */
  send_keys(text) {
    return this._act(`send_keys(${pyRepr(text)})`);
  }

  /**
   * Scroll the page.
   *
   * @param {string} direction Direction to scroll, either 'up' or 'down'.
   * @returns {Array} The updated page observation with screenshot.
   */
  scroll(direction) {
    return this._act(`scroll(${pyRepr(direction)})`);
  }

  /**
   * Do nothing and observe the current page state.
   *
   * @returns {Array} The current page observation with screenshot.
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
    // TRL's _format_observation_multimodal: the screenshot (if any), then the text.
    const content = [];
    const shot = imageFromRgbRows(result.observation.screenshot);
    if (shot) content.push({ type: 'image', image: thumbnail(shot, IMAGE_SIZE) });
    content.push({ type: 'text', text: describePage(result.observation) });
    return content;
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

// browsergym.py's GRPOConfig arguments (specs/browsergym.md §6.7): temperature and top_k stay at GRPOConfig's defaults there.
export const config = {
  chat_template_kwargs: { enable_thinking: false },
  learning_rate: 5e-6,
  gradient_accumulation_steps: 32,
  num_generations: 4,
  max_completion_length: 1024,
  num_train_epochs: 1,
  logging_steps: 1,
  log_completions: true,
};
