// OpenEnv's connect4 (envs/connect4_env) as an environment class: one tool, `drop(column)`, on a 6×7
// board. The env plays no opponent: moves alternate between X and O, so the model plays both sides.
// The env pays +1 for a move that connects four, −1 for an illegal move (a full column or one off the
// board; it ends the episode), 0 otherwise; the reward is what the env paid for the last move.
// OpenEnv's connect4 is no built-in env: point the class at a server with --env-url.
//
//   webgrpo train --model DIR --env-class examples/connect4.mjs --env-url http://127.0.0.1:8000
import { EnvClient, envUrl } from 'webgrpo/openenv';

export const PROMPT = `You are playing Connect Four on a 6-row, 7-column board; columns are numbered 0 to 6.
Drop pieces with the \`drop\` tool, one call per turn; X and O take turns, and you play both.
A move that connects four in a row, column or diagonal wins (+1). Dropping into a full column or a column off the board loses (-1).\n\n`;

/** The board as rows of X, O and . (top row first), with the columns that still take a piece. */
function describe(result) {
  const { board, legal_actions: legal } = result.observation;
  const rows = board.map((row) => row.map((cell) => (cell === 1 ? 'X' : cell === -1 ? 'O' : '.')).join(' '));
  return `${rows.join('\n')}\n0 1 2 3 4 5 6\nOpen columns: ${legal.join(', ') || 'none'}.${result.done ? ` Game over (reward ${result.reward ?? 0}).` : ''}`;
}

export default class Connect4Env {
  constructor() {
    this.client = new EnvClient(envUrl('connect4'));
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
   * Drop a piece into a column.
   *
   * @param {number} column The column to drop into, 0 to 6.
   * @returns {string} The board after the move.
   */
  async drop(column) {
    if (this.done) throw new Error('The game is over.');
    const result = await this.client.step({ column });
    this.reward = result.reward ?? 0;
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
