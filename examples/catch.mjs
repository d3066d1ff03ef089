// TRL's examples/scripts/openenv/catch.py as an environment class: `move(direction)` and `stay()` over
// OpenSpiel's catch (webgrpo's built-in /envs/catch, or an OpenSpiel server with --env-url), each
// answering with a text description of the grid. Reward: the game's ±1 clamped to [0, 1] once done.
//
//   webgrpo train --model DIR --env-class examples/catch.mjs
import { EnvClient, envUrl } from 'webgrpo/openenv';

const ROWS = 10;
const COLS = 5;

export const PROMPT = `You are an AI agent playing the game **Catch**.

### Game Description
- The game is played on a **10×5 grid**.
- There is one **falling ball** and one **paddle** that you control at the bottom.
- The objective is to **move the paddle left or right to catch the ball** as it falls.
- The episode ends when the ball reaches the bottom row:
  - You get **+1 reward** if you catch it.
  - You get **–1 reward** if you miss it.

### Observation Format
Each observation is a flattened 10x5 grid (list of 50 floats).
- 1.0 → occupied (ball or paddle)
- 0.0 → empty cell

You have the following tools available:
- \`move(direction)\`: Move the paddle left or right. Direction must be "left" or "right".
- \`stay\`: Do nothing and let the ball fall one step.

Observe the grid, determine where the ball is relative to the paddle, then move accordingly.
`;

/** The flat 50-float grid as text (1-based rows and columns; a 1.0 in the last row is the paddle). */
export function describeGrid(infoState) {
  let ball = null;
  let paddle = null;
  infoState.forEach((value, i) => {
    if (value !== 1) return;
    const row = Math.floor(i / COLS);
    if (row < ROWS - 1) ball = { row: row + 1, col: (i % COLS) + 1 };
    else paddle = (i % COLS) + 1;
  });
  const lines = [];
  if (ball) lines.push(`Ball: row ${ball.row}/${ROWS}, column ${ball.col}/${COLS}`);
  if (paddle !== null) lines.push(`Paddle: column ${paddle}/${COLS}`);
  if (ball && paddle !== null) {
    const diff = ball.col - paddle;
    if (diff < 0) lines.push(`The ball is ${-diff} column(s) to the LEFT of the paddle.`);
    else if (diff > 0) lines.push(`The ball is ${diff} column(s) to the RIGHT of the paddle.`);
    else lines.push('The ball is directly above the paddle.');
  }
  return lines.join('\n');
}

export default class CatchEnv {
  constructor() {
    this.client = new EnvClient(envUrl('catch'));
    this.reward = 0;
    this.done = false;
  }

  async reset() {
    const first = await this.client.reset();
    this.reward = 0;
    this.done = first.done;
    return describeGrid(first.observation.info_state);
  }

  async _act(actionId) {
    if (this.done) throw new Error('Episode is done.');
    const result = await this.client.step({ action_id: actionId, game_name: 'catch', game_params: {} });
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
    if (direction === 'left') return this._act(0);
    if (direction === 'right') return this._act(2);
    // TRL's message, with Python's repr of the direction ('up').
    throw new Error(`Invalid direction ${typeof direction === 'string' ? `'${direction}'` : String(direction)}: must be 'left' or 'right'.`);
  }

  /**
   * Do nothing and let the ball fall one step.
   *
   * @returns {string} The observation after staying.
   */
  stay() {
    return this._act(1);
  }

  close() {
    return this.client.close();
  }
}

export function reward_from_env({ environments }) {
  return environments.map((env) => (env.done ? Math.max(env.reward, 0) : 0));
}

export const rewardFuncs = [reward_from_env];

export const dataset = Array.from({ length: 1000 }, () => ({ prompt: [{ role: 'user', content: PROMPT }] }));

export const config = {
  chat_template_kwargs: { enable_thinking: false },
  log_completions: true,
  logging_steps: 1,
  num_train_epochs: 1,
  per_device_train_batch_size: 2,
  num_generations: 8,
  max_completion_length: 4096,
  gradient_accumulation_steps: 16,
};
