// What compact catch (compact-catch.ts) shares with TRL's catch example (examples/catch.mjs): the grid's
// size, the `move(direction)` and `stay()` tools and their action ids, and the reward (grpo-semantics.md §14).

import { pyRepr } from '../../../pyrepr.ts';
import type { ToolDeclaration } from '../../rollout/schema.ts';

export const CATCH_ROWS = 10;
export const CATCH_COLS = 5;

export const MOVE_TOOL: ToolDeclaration = {
  name: 'move',
  description: 'Move the paddle left or right.',
  parameters: [{ name: 'direction', type: 'string', description: 'Direction to move, either "left" or "right".' }],
  returns: { type: 'string', description: 'The observation after moving.' },
};

export const STAY_TOOL: ToolDeclaration = {
  name: 'stay',
  description: 'Do nothing and let the ball fall one step.',
  parameters: [],
  returns: { type: 'string', description: 'The observation after staying.' },
};

const LEFT = 0;
const RIGHT = 2;

export function catchActionId(direction: unknown): number {
  if (direction === 'left') return LEFT;
  if (direction === 'right') return RIGHT;
  throw new Error(`Invalid direction ${pyRepr(direction)}: must be 'left' or 'right'.`);
}

/** TRL's `reward_from_env`: the game's reward clamped to [0, 1] once done, 0 for an unfinished game. */
export function catchReward(env: { done: boolean; reward: number }): number {
  return env.done ? Math.max(env.reward, 0) : 0;
}
