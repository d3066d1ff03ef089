// TRL's wordle example env (examples/scripts/openenv/wordle.py): `guess(guess)` over TextArena's
// Wordle. The server's observation is the cumulative game log; each guess returns only what it added.

import type { DatasetRow, Tool, ToolEnv } from '../../rollout/env.ts';
import type { ToolDeclaration } from '../../rollout/schema.ts';
import { EpisodeSlot, type OpenEpisode } from './episode-session.ts';
import type { StepResult } from '../../../openenv/index.ts';

export const GUESS_TOOL: ToolDeclaration = {
  name: 'guess',
  description: 'Make a guess in the Wordle environment.',
  parameters: [{ name: 'guess', type: 'string', description: "The guessed word, formatted as '[abcde]'" }],
  returns: { type: 'string', description: 'The feedback message from the environment.' },
};

const INVALID_MOVE = 'You attempted an invalid move';

/** The whole game log: the content of the observation's single message. */
export function wordleLog(result: StepResult): string {
  const messages = result.observation.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw new Error('wordle observation has no messages');
  const content = (messages[0] as { content?: unknown }).content;
  if (typeof content !== 'string') throw new Error('wordle observation message has no text content');
  return content;
}

/** Game state shared by WordleEnv and MultiEnv: the log seen so far, reward and done. */
export class WordleGame {
  reward: number | null = 0;
  done = false;
  private log = '';

  /** Starts from the reset observation; returns the log so far (the prompt's observation). */
  start(first: StepResult): string {
    this.log = wordleLog(first);
    this.reward = 0;
    this.done = false;
    return this.log;
  }

  /** Folds a step result in; returns only the newly appended part of the log. */
  advance(result: StepResult): string {
    const full = wordleLog(result);
    const feedback = full.slice(this.log.length);
    this.log = full;
    // The env does not penalize invalid moves (it repeats the last reward), so TRL zeroes them here.
    this.reward = feedback.includes(INVALID_MOVE) ? 0 : typeof result.reward === 'number' ? result.reward : null;
    this.done = result.done;
    return feedback;
  }
}

export class WordleEnv implements ToolEnv {
  private readonly game = new WordleGame();
  private readonly episode: EpisodeSlot;
  readonly tools: Tool[] = [{ declaration: GUESS_TOOL, call: (args) => this.guess(args.guess) }];

  constructor(baseUrl: string, open: OpenEpisode) {
    this.episode = new EpisodeSlot(baseUrl, open);
  }

  get reward(): number | null {
    return this.game.reward;
  }

  get done(): boolean {
    return this.game.done;
  }

  async reset(_row: DatasetRow): Promise<string> {
    return this.game.start(await this.episode.reset());
  }

  async guess(guess: unknown): Promise<string> {
    if (this.game.done) throw new Error('Game over.');
    return this.game.advance(await this.episode.step({ message: guess }));
  }

  close(): Promise<void> {
    return this.episode.close();
  }
}
