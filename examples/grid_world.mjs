// OpenEnv's grid_world (envs/grid_world_env) as an environment class: one tool, `move(direction)`, on a
// 5×5 grid from (0, 0) to the goal at (4, 4). The env pays −0.1 a step and +1.0 at the goal (which ends
// the episode); the reward is the episode's return, the sum of what the env paid.
// OpenEnv's grid_world is no built-in env: point the class at a server with --env-url.
//
//   webgrpo train --model DIR --env-class examples/grid_world.mjs --env-url http://127.0.0.1:8000
import { EnvClient, envUrl } from 'webgrpo/openenv';

export const PROMPT = `You are an agent in a 5x5 grid world. Your position is (x, y), starting at (0, 0); the goal is at (4, 4).
Moving DOWN adds 1 to x, UP subtracts 1 from x, RIGHT adds 1 to y, LEFT subtracts 1 from y; the walls stop you.
Each move costs 0.1 and reaching the goal pays 1.0. Reach the goal in as few moves as you can, calling \`move\` once per turn.\n\n`;

/** The env's observation as the text the model reads. */
function describe(result) {
  const { x, y, message } = result.observation;
  return `Position (${x}, ${y}). ${message}`;
}

export default class GridWorldEnv {
  constructor() {
    this.client = new EnvClient(envUrl('grid_world'));
    this.reward = 0;
    this.done = false;
  }

  async reset() {
    const first = await this.client.reset();
    this.reward = 0;
    this.done = first.done;
    return describe(first);
  }

  /**
   * Move the agent one cell.
   *
   * @param {string} direction One of "UP", "DOWN", "LEFT" or "RIGHT".
   * @returns {string} The position after the move and the env's message.
   */
  async move(direction) {
    if (this.done) throw new Error('The episode is over: the goal was reached.');
    const result = await this.client.step({ action: String(direction).toUpperCase() });
    this.reward += result.reward ?? 0;
    this.done = result.done;
    return describe(result);
  }

  close() {
    return this.client.close();
  }
}

export function reward_from_env({ environments }) {
  return environments.map((env) => env.reward);
}

export const rewardFuncs = [reward_from_env];

export const dataset = Array.from({ length: 1000 }, () => ({ prompt: [{ role: 'user', content: PROMPT }] }));

export const config = { chat_template_kwargs: { enable_thinking: false }, log_completions: true, logging_steps: 1, max_completion_length: 1024 };
