// TRL's examples/scripts/openenv/multi_env.py as an environment class: one class plays Wordle or Catch,
// as the row's `env` column says; the model sees the union of the tools (guess, move, stay) and each
// reward function scores its own game's rollouts (null for the other's).
//
//   webgrpo train --model DIR --env-class examples/multi_env.mjs
import { EnvClient, envUrl } from 'webgrpo/openenv';
import { describeGrid, PROMPT as CATCH_PROMPT } from './catch.mjs';
import { PROMPT as WORDLE_PROMPT } from './wordle.mjs';

export default class MultiEnv {
  constructor() {
    this._wordle = new EnvClient(envUrl('wordle'));
    this._catch = new EnvClient(envUrl('catch'));
    this.active = null;
    this.reward = 0;
    this.done = false;
  }

  async reset(row) {
    const name = row.env ?? 'wordle';
    if (name !== 'wordle' && name !== 'catch') {
      await this.close();
      this.active = null;
      throw new Error(`Unknown environment: ${name}`);
    }
    // This game's client resets first (it ends its own last episode, and the trainer's episode seed
    // reaches a reset started before any await); then the other game's episode ends.
    const started = (name === 'wordle' ? this._wordle : this._catch).reset();
    await (name === 'wordle' ? this._catch : this._wordle).close();
    const first = await started;
    this.active = name;
    this.reward = 0;
    this.done = false;
    if (name === 'wordle') {
      this._log = first.observation.messages[0].content;
      return this._log;
    }
    this.done = first.done;
    return describeGrid(first.observation.info_state);
  }

  /**
   * Make a guess in the Wordle environment.
   *
   * @param {string} guess The guessed word, formatted as '[abcde]'
   * @returns {string} The feedback message from the environment.
   */
  async guess(guess) {
    if (this.active !== 'wordle') throw new Error('guess is only available in Wordle');
    if (this.done) throw new Error('Game over.');
    const result = await this._wordle.step({ message: guess });
    const full = result.observation.messages[0].content;
    const feedback = full.slice(this._log.length);
    this._log = full;
    this.reward = feedback.includes('You attempted an invalid move') ? 0 : result.reward;
    this.done = result.done;
    return feedback;
  }

  async _catchAction(actionId) {
    if (this.done) throw new Error('Episode is done.');
    const result = await this._catch.step({ action_id: actionId, game_name: 'catch', game_params: {} });
    this.reward = result.reward ?? 0;
    this.done = result.done;
    return describeGrid(result.observation.info_state);
  }

  /**
   * Move the paddle left or right.
   *
   * @param {string} direction Direction to move, either "left" or "right".
   * @returns {string} The observation after moving.
   */
  move(direction) {
    if (this.active !== 'catch') throw new Error('move is only available in Catch');
    if (direction === 'left') return this._catchAction(0);
    if (direction === 'right') return this._catchAction(2);
    // TRL's message, with Python's repr of the direction ('up').
    throw new Error(`Invalid direction ${typeof direction === 'string' ? `'${direction}'` : String(direction)}: must be 'left' or 'right'.`);
  }

  /**
   * Do nothing and let the ball fall one step.
   *
   * @returns {string} The observation after staying.
   */
  stay() {
    if (this.active !== 'catch') throw new Error('stay is only available in Catch');
    return this._catchAction(1);
  }

  async close() {
    await Promise.all([this._wordle.close(), this._catch.close()]);
  }
}

export function wordle_reward({ environments }) {
  return environments.map((env) => (env.active === 'wordle' ? env.reward : null));
}

export function catch_reward({ environments }) {
  return environments.map((env) => (env.active !== 'catch' ? null : env.done ? Math.max(env.reward, 0) : 0));
}

export const rewardFuncs = [wordle_reward, catch_reward];

const n = 500;
export const dataset = [
  ...Array.from({ length: n }, () => ({ prompt: [{ role: 'user', content: WORDLE_PROMPT }], env: 'wordle' })),
  ...Array.from({ length: n }, () => ({ prompt: [{ role: 'user', content: CATCH_PROMPT }], env: 'catch' })),
];

export const config = { chat_template_kwargs: { enable_thinking: false }, log_completions: true, logging_steps: 1, max_completion_length: 1024 };
