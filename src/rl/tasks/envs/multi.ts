// TRL's multi-env example (examples/scripts/openenv/multi_env.py): one env class routing each episode to
// wordle or catch by the row's `env` column. It offers the union of their tools (`guess, move, stay`);
// a tool of the other game fails with a message naming the game it belongs to.

import type { DatasetRow, Tool, ToolEnv } from '../../rollout/env.ts';
import { CatchEnv, catchReward, MOVE_TOOL, STAY_TOOL } from './catch.ts';
import type { OpenEpisode } from './episode-session.ts';
import { GUESS_TOOL, WordleEnv } from './wordle.ts';

export type MultiEnvName = 'wordle' | 'catch';

export class MultiEnv implements ToolEnv {
  active: MultiEnvName | null = null;
  private readonly wordle: WordleEnv;
  private readonly catchGame: CatchEnv;
  readonly tools: Tool[] = [
    { declaration: GUESS_TOOL, call: (args) => this.guess(args.guess) },
    { declaration: MOVE_TOOL, call: (args) => this.move(args.direction) },
    { declaration: STAY_TOOL, call: () => this.stay() },
  ];

  constructor(urls: { wordle: string; catch: string }, open: OpenEpisode) {
    this.wordle = new WordleEnv(urls.wordle, open);
    this.catchGame = new CatchEnv(urls.catch, open);
  }

  get reward(): number | null {
    if (this.active === 'wordle') return this.wordle.reward;
    if (this.active === 'catch') return this.catchGame.reward;
    return 0;
  }

  get done(): boolean {
    if (this.active === 'wordle') return this.wordle.done;
    if (this.active === 'catch') return this.catchGame.done;
    return false;
  }

  async reset(row: DatasetRow): Promise<string> {
    const name = row.env ?? 'wordle';
    await this.close();
    if (name !== 'wordle' && name !== 'catch') {
      this.active = null;
      throw new Error(`Unknown environment: ${String(name)}`);
    }
    this.active = name;
    return name === 'wordle' ? this.wordle.reset(row) : this.catchGame.reset(row);
  }

  async guess(guess: unknown): Promise<string> {
    if (this.active !== 'wordle') throw new Error('guess is only available in Wordle');
    return this.wordle.guess(guess);
  }

  async move(direction: unknown): Promise<string> {
    if (this.active !== 'catch') throw new Error('move is only available in Catch');
    return this.catchGame.move(direction);
  }

  async stay(): Promise<string> {
    if (this.active !== 'catch') throw new Error('stay is only available in Catch');
    return this.catchGame.stay();
  }

  async close(): Promise<void> {
    await Promise.all([this.wordle.close(), this.catchGame.close()]);
  }
}

/** TRL's `wordle_reward`: the wordle reward, None (→ NaN) for catch episodes. */
export function multiWordleReward(env: MultiEnv): number | null {
  return env.active === 'wordle' ? env.reward : null;
}

/** TRL's `catch_reward`: the clamped catch reward, None (→ NaN) for wordle episodes. */
export function multiCatchReward(env: MultiEnv): number | null {
  return env.active === 'catch' ? catchReward({ done: env.done, reward: env.reward ?? 0 }) : null;
}
