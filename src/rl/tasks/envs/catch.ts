// TRL's catch example env (examples/scripts/openenv/catch.py): `move(direction)` and `stay()` over the
// OpenSpiel catch game, each answering with a text description of the grid (grpo-semantics.md §14).

import type { DatasetRow, Tool, ToolEnv } from '../../rollout/env.ts';
import { pyRepr } from '../../../pyrepr.ts';
import type { ToolDeclaration } from '../../rollout/schema.ts';
import { EpisodeSlot, type OpenEpisode } from './episode-session.ts';

export const CATCH_ROWS = 10;
export const CATCH_COLS = 5;

/**
 * The flat 50-float `info_state` as text. Rows and columns are 1-based; a 1.0 in the last row is the
 * paddle, elsewhere the ball (the last such cell wins), so the terminal grid shows only the paddle.
 */
export function formatCatchObservation(infoState: readonly number[]): string {
  let ball: { row: number; col: number } | null = null;
  let paddleCol: number | null = null;
  infoState.forEach((value, idx) => {
    if (value !== 1) return;
    const r = Math.floor(idx / CATCH_COLS);
    const c = idx % CATCH_COLS;
    if (r < CATCH_ROWS - 1) ball = { row: r + 1, col: c + 1 };
    else paddleCol = c + 1;
  });
  const parts: string[] = [];
  const b = ball as { row: number; col: number } | null;
  const p = paddleCol as number | null;
  if (b) parts.push(`Ball: row ${b.row}/${CATCH_ROWS}, column ${b.col}/${CATCH_COLS}`);
  if (p !== null) parts.push(`Paddle: column ${p}/${CATCH_COLS}`);
  if (b && p !== null) {
    const diff = b.col - p;
    if (diff < 0) parts.push(`The ball is ${-diff} column(s) to the LEFT of the paddle.`);
    else if (diff > 0) parts.push(`The ball is ${diff} column(s) to the RIGHT of the paddle.`);
    else parts.push('The ball is directly above the paddle.');
  }
  return parts.join('\n');
}

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
const STAY = 1;
const RIGHT = 2;

export function catchActionId(direction: unknown): number {
  if (direction === 'left') return LEFT;
  if (direction === 'right') return RIGHT;
  throw new Error(`Invalid direction ${pyRepr(direction)}: must be 'left' or 'right'.`);
}

function infoState(observation: Record<string, unknown>): number[] {
  const state = observation.info_state;
  if (!Array.isArray(state)) throw new Error('catch observation has no info_state list');
  return state as number[];
}

/** One catch game per episode; `reward` (±1 at the end, else 0) and `done` are read by the reward function. */
export class CatchEnv implements ToolEnv {
  reward = 0;
  done = false;
  private readonly episode: EpisodeSlot;
  readonly tools: Tool[] = [
    { declaration: MOVE_TOOL, call: (args) => this.move(args.direction) },
    { declaration: STAY_TOOL, call: () => this.stay() },
  ];

  constructor(baseUrl: string, open: OpenEpisode) {
    this.episode = new EpisodeSlot(baseUrl, open);
  }

  async reset(_row: DatasetRow): Promise<string> {
    const first = await this.episode.reset();
    this.reward = 0;
    this.done = first.done;
    return formatCatchObservation(infoState(first.observation));
  }

  async move(direction: unknown): Promise<string> {
    // The direction is checked before the done state, as in TRL's example.
    return this.act(catchActionId(direction));
  }

  async stay(): Promise<string> {
    return this.act(STAY);
  }

  private async act(actionId: number): Promise<string> {
    if (this.done) throw new Error('Episode is done.');
    const result = await this.episode.step({ action_id: actionId, game_name: 'catch', game_params: {} });
    this.reward = typeof result.reward === 'number' ? result.reward : 0;
    this.done = result.done;
    return formatCatchObservation(infoState(result.observation));
  }

  close(): Promise<void> {
    return this.episode.close();
  }
}

/** TRL's `reward_from_env`: the game's reward clamped to [0, 1] once done, 0 for an unfinished game. */
export function catchReward(env: { done: boolean; reward: number }): number {
  return env.done ? Math.max(env.reward, 0) : 0;
}
