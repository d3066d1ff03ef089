// TextArena `Wordle-v0` as served by OpenEnv's textarena_env (spec: openenv-protocol.md §5.3).
// The observation is one cumulative game log; rewards and `info.reward_signals` follow OpenEnv's
// textarena rewards. Secrets and the English-word check come from the shipped word lists
// (wordle-words/, see PROVENANCE.md).

import { readFileSync } from 'node:fs';
import type { EnvDefinition, EnvInstance, WireObservation } from './types.ts';
import { actionJsonSchema, actionModel, requireValidAction, validateModel } from './validation.ts';
import { BASE_STATE_SCHEMA, modelSchema, observationSchema } from './json-schema.ts';
import { defaultMetadata } from './metadata.ts';
import { cryptoRng, rngForSeed, type Rng } from './rng.ts';
import { wordleFeedback, type WordleMark } from '../../src/openenv/wordle-feedback.ts';
import { isEvalSeed, WORDLE_EVAL_WORDS, wordleEvalWord } from '../../src/openenv/eval-split.ts';

export { wordleFeedback };

export const WORDLE_ENV_ID = 'Wordle-v0';

const HELD_OUT: ReadonlySet<string> = new Set(WORDLE_EVAL_WORDS);
export const WORD_LENGTH = 5;
export const MAX_GUESSES = 6;

const INTRO =
  'You are Playing Wordle.\n' +
  `A secret ${WORD_LENGTH}-letter word has been chosen. You have ${MAX_GUESSES} attempts to guess it.\n` +
  "For each guess, wrap your word in square brackets (e.g., '[apple]').\n" +
  'Feedback for each letter will be given as follows:\n' +
  '  - G (green): correct letter in the correct position\n' +
  '  - Y (yellow): letter exists in the word but in the wrong position\n' +
  '  - X (wrong): letter is not in the word\n' +
  'Enter your guess to begin.\n';

const WRONG_FORMAT = 'You tried submitting a word in the wrong format. Please make sure to use squared brackets.';
const WRONG_LENGTH = `Your word must be exactly ${WORD_LENGTH} letters.`;
const GAME_OVER = 'Game is over. Call reset.';

/** Python's `\[(\w+)\]`: \w is Unicode letters, numbers and underscore (not combining marks). */
const BRACKETED_WORD = /\[([\p{L}\p{N}_]+)\]/u;

export const WORDLE_ACTION = actionModel('TextArenaAction', 'Action for TextArena environments.', [
  { name: 'message', type: { kind: 'string' }, description: 'Message (the move) to send to the environment' },
]);

const MESSAGE_SCHEMA = modelSchema({
  title: 'TextArenaMessage',
  description: 'A single message in a TextArena conversation.',
  fields: [
    { name: 'sender_id', schema: { type: 'integer' }, required: true },
    { name: 'content', schema: { type: 'string' }, required: true },
    { name: 'category', schema: { type: 'string' }, required: true },
  ],
  additionalProperties: false,
});

/** TextArena's observation schema (every TextArena game of textarena_env sends it; sudoku.ts too). */
export const WORDLE_OBSERVATION_SCHEMA = observationSchema(
  'TextArenaObservation',
  'Observation from a TextArena environment.',
  [
    { name: 'prompt', schema: { type: 'string' }, description: 'Prompt for the current player', required: true },
    {
      name: 'messages',
      schema: { type: 'array', items: { $ref: '#/$defs/TextArenaMessage' } },
      description: 'Conversation so far',
    },
    { name: 'current_player_id', schema: { type: 'integer' }, description: 'ID of the player to move', default: 0 },
    {
      name: 'legal_players',
      schema: { type: 'array', items: { type: 'integer' } },
      description: 'Players allowed to move',
    },
    {
      name: 'info',
      schema: { type: 'object', additionalProperties: true },
      description: 'Step info, including reward_signals',
    },
  ],
  { TextArenaMessage: MESSAGE_SCHEMA },
);

export interface WordleWords {
  /** Secrets, drawn uniformly. */
  answers: readonly string[];
  /** Every word accepted as a guess (includes the answers). */
  valid: ReadonlySet<string>;
}

/** Completion of a guess: (greens + 0.5·yellows) / 5. */
function completion(feedback: readonly WordleMark[]): number {
  const greens = feedback.filter((f) => f === 'G').length;
  const yellows = feedback.filter((f) => f === 'Y').length;
  return (greens + 0.5 * yellows) / WORD_LENGTH;
}

/**
 * Green and yellow fractions from OpenEnv's Wordle reward provider: in the text after the first
 * `Feedback:` of the log, the last non-blank line made only of G/Y/X once spaces are removed
 * (nothing when fewer than two non-blank lines follow).
 */
function feedbackSignals(log: string): { greens: number; yellows: number } {
  const at = log.indexOf('Feedback:');
  if (at < 0) return { greens: 0, yellows: 0 };
  const lines = log
    .slice(at + 'Feedback:'.length)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  if (lines.length < 2) return { greens: 0, yellows: 0 };
  for (let i = lines.length - 1; i >= 0; i--) {
    const marks = lines[i]!.replaceAll(' ', '');
    if (/^[GYX]+$/.test(marks)) {
      return {
        greens: marks.replaceAll(/[^G]/g, '').length / WORD_LENGTH,
        yellows: marks.replaceAll(/[^Y]/g, '').length / WORD_LENGTH,
      };
    }
  }
  return { greens: 0, yellows: 0 };
}

const UNREADABLE_GUESS = '[dunno]';

/**
 * The guess as the repetition signal sees it: the first `[xxxxx]` (lower-cased), else the first
 * five a–z letters of the lower-cased move, else `[dunno]` (fewer than five letters).
 */
function normalizedGuess(message: string): string {
  const bracketed = /\[[A-Za-z]{5}\]/.exec(message);
  if (bracketed !== null) return bracketed[0].toLowerCase();
  const letters = message.toLowerCase().replaceAll(/[^a-z]/g, '');
  return letters.length >= WORD_LENGTH ? `[${letters.slice(0, WORD_LENGTH)}]` : UNREADABLE_GUESS;
}

/** Upstream's textarena reset honours `episode_id`; without one it draws a uuid4. */
function episodeIdFrom(value: unknown): string {
  if (value === undefined || value === null) return globalThis.crypto.randomUUID();
  if (typeof value !== 'string') throw new Error(`episode_id must be a string or null, got ${JSON.stringify(value)}`);
  return value;
}

class WordleEnvironment implements EnvInstance {
  private episodeId: string = globalThis.crypto.randomUUID();
  private stepCount = 0;
  private rng: Rng = cryptoRng();
  private secret = '';
  private log = '';
  /** Valid guesses made (TextArena's `turn`). */
  private turn = 0;
  private guesses: string[] = [];
  /** Completion of the last valid guess: the reward if the game ends on invalid moves. */
  private lastCompletion = 0.0;
  /** Consecutive invalid moves: the first warns, the second ends the game. */
  private invalidStreak = 0;
  /** Normalized guesses this episode, for `wordle.repetitions`. */
  private seenGuesses: string[] = [];
  private done = false;
  private lastReward = 0.0;
  private lastInfo: Record<string, unknown> = {};

  constructor(private readonly words: WordleWords) {
    // A fresh env is already in a game, so a stateless HTTP /step (fresh env, no reset) works.
    this.newGame();
  }

  reset(kwargs: Record<string, unknown>): WireObservation {
    this.rng = rngForSeed(kwargs.seed);
    this.episodeId = episodeIdFrom(kwargs.episode_id);
    this.stepCount = 0;
    this.newGame(kwargs.seed);
    return this.observe(0.0);
  }

  step(data: Record<string, unknown>): WireObservation {
    if (this.done) throw new Error(GAME_OVER);
    const message = requireValidAction(WORDLE_ACTION, data).message as string;
    this.stepCount += 1;
    const reward = this.play(message);
    const { greens, yellows } = feedbackSignals(this.log);
    this.lastInfo = {
      reward_signals: {
        'wordle.greens': greens,
        'wordle.yellows': yellows,
        'wordle.repetitions': this.repetitions(message),
        'wordle.correct': reward,
      },
    };
    this.lastReward = reward;
    return this.observe(reward);
  }

  state(): Record<string, unknown> {
    return {
      episode_id: this.episodeId,
      step_count: this.stepCount,
      env_id: WORDLE_ENV_ID,
      num_players: 1,
      max_turns: null,
      turn: this.turn,
      last_reward: this.lastReward,
      last_info: this.lastInfo,
      raw_state: {}, // upstream leaks the secret here
    };
  }

  close(): void {
    // Holds no resources.
  }

  /**
   * A secret outside the held-out words (src/openenv/eval-split.ts), so no training game plays one:
   * a draw that lands on one is drawn again from the same stream, and every other seed keeps its word.
   */
  private drawSecret(): string {
    const { answers } = this.words;
    const allHeldOut = answers.every((w) => HELD_OUT.has(w));
    for (;;) {
      const word = answers[this.rng.int(answers.length)]!;
      if (allHeldOut || !HELD_OUT.has(word)) return word;
    }
  }

  private newGame(seed?: unknown): void {
    this.secret = isEvalSeed(seed) && this.words.answers.includes(wordleEvalWord(seed)) ? wordleEvalWord(seed) : this.drawSecret();
    this.log = '';
    this.turn = 0;
    this.guesses = [];
    this.lastCompletion = 0.0;
    this.invalidStreak = 0;
    this.seenGuesses = [];
    this.done = false;
    this.lastReward = 0.0;
    this.lastInfo = {};
    this.announce(INTRO);
  }

  private announce(text: string): void {
    this.log += '\n[GAME] ' + text;
  }

  /** Applies one move to the game and returns its reward. */
  private play(message: string): number {
    // TextArena's ActionFormattingWrapper brackets a bare move.
    const move = message.includes('[') || message.includes(']') ? message : `[${message}]`;
    this.announce(move.replaceAll('[Player]', '').replaceAll('[GAME]', ''));

    const match = BRACKETED_WORD.exec(move);
    if (match === null) return this.invalidMove(WRONG_FORMAT);
    const word = match[1]!.toLowerCase();
    const rejection = this.rejectionReason(word);
    if (rejection !== null) return this.invalidMove(rejection);

    this.invalidStreak = 0;
    const feedback = wordleFeedback(word, this.secret);
    this.guesses.push(word);
    const guessesBefore = this.turn;
    this.turn += 1;
    if (feedback.every((f) => f === 'G')) {
      this.done = true;
      return 1.0;
    }
    this.announce(
      `You submitted [${word}].\nFeedback:\n${[...word.toUpperCase()].join(' ')}\n${feedback.join(' ')}\n` +
        `You have ${MAX_GUESSES - guessesBefore - 1} guesses left.`,
    );
    this.lastCompletion = completion(feedback);
    if (this.turn >= MAX_GUESSES) {
      this.done = true;
      return this.lastCompletion;
    }
    return 0.0;
  }

  /** Why a bracketed word is not a playable guess, checked in TextArena's order; null if it is. */
  private rejectionReason(word: string): string | null {
    if ([...word].length !== WORD_LENGTH) return WRONG_LENGTH;
    if (this.guesses.includes(word)) return `You have already guessed '${word}' before. Please try a different word.`;
    if (!this.words.valid.has(word)) return `'${word}' is not an English word.`;
    return null;
  }

  private invalidMove(reason: string): number {
    if (this.invalidStreak >= 1) {
      // Error allowance 1: a second invalid move in a row ends the game without a message.
      this.done = true;
      return this.lastCompletion;
    }
    this.invalidStreak += 1;
    this.announce(
      `You attempted an invalid move. Reason: ${reason} Please resubmit a valid move and remember to follow the game rules to avoid penalties.`,
    );
    return 0.0;
  }

  /** 1 − earlier occurrences of this normalized guess; `[dunno]` is never counted. */
  private repetitions(message: string): number {
    const guess = normalizedGuess(message);
    if (guess === UNREADABLE_GUESS) return 1.0;
    const earlier = this.seenGuesses.filter((seen) => seen === guess).length;
    this.seenGuesses.push(guess);
    return 1.0 - earlier;
  }

  private observe(reward: number): WireObservation {
    return {
      observation: {
        prompt: this.turn === 0 ? this.log.trim() : WORDLE_ENV_ID,
        messages: [{ sender_id: -1, content: this.log, category: 'MESSAGE' }],
        current_player_id: 0,
        legal_players: [0],
        info: this.lastInfo,
      },
      reward,
      done: this.done,
    };
  }
}

/** A Wordle env over the given word lists (tests pass a one-word answer list to fix the secret). */
export function createWordleEnvironment(words: WordleWords): EnvInstance {
  if (words.answers.length === 0) throw new Error('Wordle needs at least one answer word');
  for (const answer of words.answers) {
    if (!words.valid.has(answer)) throw new Error(`Wordle answer '${answer}' is not in the valid-guess list`);
  }
  return new WordleEnvironment(words);
}

function readWordFile(name: string): string[] {
  const url = new URL(`./wordle-words/${name}`, import.meta.url);
  const words = readFileSync(url, 'utf8').split('\n').filter((line) => line.length > 0);
  for (const word of words) {
    if (!/^[a-z]{5}$/.test(word)) throw new Error(`wordle-words/${name}: '${word}' is not 5 lower-case letters`);
  }
  return words;
}

let shippedWords: WordleWords | null = null;

/** The shipped lists (wordle-words/answers.txt and valid.txt), read once. */
export function loadShippedWords(): WordleWords {
  shippedWords ??= { answers: readWordFile('answers.txt'), valid: new Set(readWordFile('valid.txt')) };
  return shippedWords;
}

export const wordleEnv: EnvDefinition = {
  name: 'wordle',
  metadata: defaultMetadata('TextArenaEnvironment'),
  schema: { action: actionJsonSchema(WORDLE_ACTION), observation: WORDLE_OBSERVATION_SCHEMA, state: BASE_STATE_SCHEMA },
  validateAction: (data) => validateModel(WORDLE_ACTION, data),
  create: () => createWordleEnvironment(loadShippedWords()),
};
