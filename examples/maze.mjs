// OpenEnv's maze (envs/maze_env) as an environment class: one tool, `move(direction)`, through an 8×8
// maze from (0, 0) to its exit. The env pays a small penalty a move, a larger one for a wall or a cell
// already visited and +10 at the exit; the episode ends at the exit or when the penalties pile up. The
// reward is the episode's return, the sum of what the env paid.
// OpenEnv's maze is no built-in env: point the class at a server with --env-url.
//
//   webgrpo train --model DIR --env-class examples/maze.mjs --env-url http://127.0.0.1:8000
import { EnvClient, envUrl } from 'webgrpo/openenv';

/** OpenEnv's maze action ids (envs/maze_env/server/maze.py's Action). */
const ACTIONS = { up: 0, down: 1, left: 2, right: 3 };
const NAMES = Object.fromEntries(Object.entries(ACTIONS).map(([name, id]) => [id, name]));

export const PROMPT = `You are in a maze, starting at cell [0, 0]; find the exit.
Each observation gives your position and the moves that are open from there.
Every move costs a little, bumping into a wall or going back costs more, and the exit pays 10.
Call \`move\` once per turn with one of the open directions.\n\n`;

/** The env's observation as the text the model reads. */
function describe(result) {
  const { current_position: at, legal_actions: open } = result.observation;
  return `Position [${at.join(', ')}]. Open moves: ${open.map((id) => NAMES[id] ?? id).join(', ') || 'none'}.${result.done ? ' Game over.' : ''}`;
}

export default class MazeEnv {
  constructor() {
    this.client = new EnvClient(envUrl('maze'));
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
   * Move one cell through the maze.
   *
   * @param {string} direction One of "up", "down", "left" or "right".
   * @returns {string} The position after the move and the moves open from there.
   */
  async move(direction) {
    if (this.done) throw new Error('The episode is over.');
    const action = ACTIONS[String(direction).toLowerCase()];
    if (action === undefined) throw new Error(`Invalid direction ${JSON.stringify(direction)}: must be 'up', 'down', 'left' or 'right'.`);
    const result = await this.client.step({ action });
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
