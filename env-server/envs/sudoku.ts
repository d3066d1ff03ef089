// TextArena `Sudoku-v0` as OpenEnv's textarena_env serves it (the wire format of wordle.ts: one
// cumulative `[GAME]` log as a single message, specs/openenv-protocol.md §5.3). The rules are TextArena's
// Sudoku env (github.com/LeonGuertler/TextArena textarena/envs/Sudoku, read for facts):
// - a move is the first `[row col num]` in the message (1-based); a bare message is bracketed first;
// - a move is correct only when it matches the generated solution; a correct move appends the board;
// - out of bounds, overwriting a filled cell (a clue or an earlier move), a wrong number, or no
//   `[r c n]` at all are invalid moves: the first warns, a second in a row ends the game with reward =
//   the fraction of the originally empty cells now correct (TextArena's error allowance 1);
// - the last empty cell filled correctly wins with reward 1; after 100 valid moves the next move ends
//   the game with the fraction correct; every other reward is 0.
// Difficulty (a reset kwarg, as TextArena's registered ids): easy 70 clues (Sudoku-v0-easy), none 60
// (Sudoku-v0), medium 40, hard 20; removals keep the solution unique, as TextArena's do.

import type { EnvDefinition, EnvInstance, WireObservation } from './types.ts';
import { actionJsonSchema, requireValidAction, validateModel } from './validation.ts';
import { BASE_STATE_SCHEMA } from './json-schema.ts';
import { defaultMetadata } from './metadata.ts';
import { cryptoRng, rngForSeed } from './rng.ts';
import { WORDLE_ACTION as TEXTARENA_ACTION, WORDLE_OBSERVATION_SCHEMA as TEXTARENA_OBSERVATION_SCHEMA } from './wordle.ts';
import { generateSudoku, renderBoard, type Grid } from './sudoku-board.ts';

export const SUDOKU_ENV_ID = 'Sudoku-v0';
export const SUDOKU_MAX_TURNS = 100;

/** Clues per difficulty: TextArena's `Sudoku-v0-easy`, `Sudoku-v0`, `-medium`, `-hard`. */
export const SUDOKU_CLUES = { easy: 70, default: 60, medium: 40, hard: 20 } as const;
export type SudokuDifficulty = 'easy' | 'medium' | 'hard';

/** TextArena's player prompt for player 0 (its text, as the game sends it). */
const PLAYER_PROMPT =
  'You are Player 0. You are playing Sudoku.\n' +
  "Here is the current state of the Sudoku grid. Each row is numbered from 1 to 9, and each column is also numbered from 1 to 9.\n" +
  "Empty cells are represented by '.', and pre-filled cells contain digits from 1 to 9.\n\n" +
  'Current Sudoku Grid:\n' +
  'Your objective is to fill the empty cells in the 9x9 grid with digits from 1 to 9 such that:\n' +
  '1. Each row contains all digits from 1 to 9 without repetition.\n' +
  '2. Each column contains all digits from 1 to 9 without repetition.\n' +
  '3. Each of the nine 3x3 subgrids contains all digits from 1 to 9 without repetition.\n\n' +
  'Rules and Instructions:\n' +
  '1. **Do not overwrite** the initial numbers provided in the grid.\n' +
  "2. **Only fill** empty cells represented by '.'.\n" +
  "3. You may respond in any manner you prefer, but ensure that your response includes the format of '[row column number]'.\n" +
  '4. **Ensure** that your move does not violate Sudoku rules. Invalid moves will result in penalties.\n' +
  'Examples:\n' +
  '- **Valid Move**:\n' +
  '  - Grid Snippet Before Move:\n' +
  '  \n' +
  '  - Move: `[5 3 7]`\n' +
  '  - Explanation: Placing 7 at row 5, column 3 does not violate any Sudoku rules.\n\n' +
  '- **Invalid Move** (Overwriting a pre-filled cell):\n' +
  '  - Grid Snippet Before Move:\n' +
  '  \n' +
  '  - Move: `[1 1 9]`\n' +
  '  - Explanation: Cell (1,1) is already filled with 5. You cannot overwrite it.\n\n' +
  '- **Invalid Move** (Violating Sudoku rules):\n' +
  '  - Grid Snippet Before Move:\n' +
  '  \n' +
  '  - Move: `[1 3 5]`\n' +
  '  - Explanation: Placing 5 in row 1, column 3 violates the rule since 5 already exists in row 1.\n\n' +
  'The history of your moves and thoughts will be appended as you play more rounds. Use the history of your move to improve your decision making by avoiding the moves you have tried. Good luck!\n\n';

const MOVE = /\[([0-9]+)\s([0-9]+)\s([0-9]+)\]/;
const GAME_OVER = 'Game is over. Call reset.';

function difficultyOf(value: unknown): SudokuDifficulty | null {
  if (value === undefined || value === null) return null;
  if (value === 'easy' || value === 'medium' || value === 'hard') return value;
  throw new Error(`difficulty must be 'easy', 'medium' or 'hard', got ${JSON.stringify(value)}`);
}

function episodeIdFrom(value: unknown): string {
  if (value === undefined || value === null) return globalThis.crypto.randomUUID();
  if (typeof value !== 'string') throw new Error(`episode_id must be a string or null, got ${JSON.stringify(value)}`);
  return value;
}

/** A puzzle fixed by a test (its solution and clues), or null: generated per reset. */
export type SudokuSource = ((clues: number, seed: unknown) => { solution: Grid; puzzle: Grid }) | null;

class SudokuEnvironment implements EnvInstance {
  private episodeId: string = globalThis.crypto.randomUUID();
  private stepCount = 0;
  private envId = SUDOKU_ENV_ID;
  private solution: Grid = [];
  private puzzle: Grid = [];
  private board: Grid = [];
  private log = '';
  /** Valid moves made (TextArena's `turn`). */
  private turn = 0;
  private invalidStreak = 0;
  private done = false;
  private lastReward = 0.0;

  constructor(private readonly source: SudokuSource) {
    // A fresh env is already in a game, so a stateless HTTP /step (fresh env, no reset) works.
    this.newGame(null, undefined);
  }

  reset(kwargs: Record<string, unknown>): WireObservation {
    const difficulty = difficultyOf(kwargs.difficulty);
    this.episodeId = episodeIdFrom(kwargs.episode_id);
    this.stepCount = 0;
    this.newGame(difficulty, kwargs.seed);
    return this.observe(0.0);
  }

  step(data: Record<string, unknown>): WireObservation {
    if (this.done) throw new Error(GAME_OVER);
    const message = requireValidAction(TEXTARENA_ACTION, data).message as string;
    this.stepCount += 1;
    const reward = this.play(message);
    this.lastReward = reward;
    return this.observe(reward);
  }

  state(): Record<string, unknown> {
    return {
      episode_id: this.episodeId,
      step_count: this.stepCount,
      env_id: this.envId,
      num_players: 1,
      max_turns: SUDOKU_MAX_TURNS,
      turn: this.turn,
      last_reward: this.lastReward,
      last_info: {},
      raw_state: {}, // upstream's game_state holds the board only; the solution stays server-side here too
    };
  }

  close(): void {
    // Holds no resources.
  }

  private newGame(difficulty: SudokuDifficulty | null, seed: unknown): void {
    const clues = SUDOKU_CLUES[difficulty ?? 'default'];
    const { solution, puzzle } = this.source ? this.source(clues, seed) : generateSudoku(clues, seed === undefined || seed === null ? cryptoRng() : rngForSeed(seed));
    this.envId = difficulty ? `${SUDOKU_ENV_ID}-${difficulty}` : SUDOKU_ENV_ID;
    this.solution = solution;
    this.puzzle = puzzle;
    this.board = puzzle.map((row) => [...row]);
    this.log = '';
    this.turn = 0;
    this.invalidStreak = 0;
    this.done = false;
    this.lastReward = 0.0;
    this.announce(PLAYER_PROMPT);
    this.announce(`Game Board:\n${renderBoard(this.board)}`);
  }

  private announce(text: string): void {
    this.log += '\n[GAME] ' + text;
  }

  /** Applies one move and returns its reward. */
  private play(message: string): number {
    // TextArena's ActionFormattingWrapper brackets a bare move.
    const move = message.includes('[') || message.includes(']') ? message : `[${message}]`;
    this.announce(move.replaceAll('[Player]', '').replaceAll('[GAME]', ''));
    let reward = 0.0;
    const match = MOVE.exec(move);
    if (match === null) {
      reward = this.invalidMove("Invalid move format. Player 0 did not respond with valid 'row column number'.");
    } else {
      const [row, col, num] = [Number(match[1]), Number(match[2]), Number(match[3])];
      if (row < 1 || row > 9 || col < 1 || col > 9 || num < 1 || num > 9) {
        reward = this.invalidMove(`Invalid move. Player 0 attempted to place ${num} at (${row}, ${col}), which is out of bounds.`);
      } else if (this.board[row - 1]![col - 1] !== 0) {
        reward = this.invalidMove(`Invalid move. Player 0 attempted to overwrite a pre-filled cell (${row}, ${col}).`);
      } else if (this.solution[row - 1]![col - 1] === num) {
        this.board[row - 1]![col - 1] = num;
        this.invalidStreak = 0;
        this.turn += 1;
        this.announce(`Board state: \n${renderBoard(this.board)}`);
        if (this.board.every((r, i) => r.every((v, j) => v === this.solution[i]![j]))) {
          this.done = true;
          return 1.0;
        }
        // TextArena checks the turn limit before counting this move.
        if (this.turn - 1 >= SUDOKU_MAX_TURNS) {
          this.done = true;
          return this.completion();
        }
        return 0.0;
      } else {
        reward = this.invalidMove(`Invalid move. Player 0 attempted to place ${num} at (${row}, ${col}), which violates Sudoku rules.`);
      }
    }
    if (!this.done && this.turn >= SUDOKU_MAX_TURNS) {
      this.done = true;
      return this.completion();
    }
    return reward;
  }

  private invalidMove(reason: string): number {
    if (this.invalidStreak >= 1) {
      // Error allowance 1: a second invalid move in a row ends the game, scored by the cells filled.
      this.done = true;
      return this.completion();
    }
    this.invalidStreak += 1;
    this.announce(`You attempted an invalid move. Reason: ${reason} Please resubmit a valid move and remember to follow the game rules to avoid penalties.`);
    return 0.0;
  }

  /** Fraction of the puzzle's empty cells now holding their solution. */
  private completion(): number {
    let total = 0;
    let correct = 0;
    for (let r = 0; r < 9; r++) {
      for (let c = 0; c < 9; c++) {
        if (this.puzzle[r]![c] !== 0) continue;
        total++;
        if (this.board[r]![c] === this.solution[r]![c]) correct++;
      }
    }
    return total > 0 ? correct / total : 0.0;
  }

  private observe(reward: number): WireObservation {
    return {
      observation: {
        prompt: this.turn === 0 ? this.log.trim() : this.envId,
        messages: [{ sender_id: -1, content: this.log, category: 'MESSAGE' }],
        current_player_id: 0,
        legal_players: [0],
        info: {},
      },
      reward,
      done: this.done,
    };
  }
}

/** A Sudoku env; tests pass a fixed puzzle source. */
export function createSudokuEnvironment(source: SudokuSource = null): EnvInstance {
  return new SudokuEnvironment(source);
}

export const sudokuEnv: EnvDefinition = {
  name: 'sudoku',
  metadata: defaultMetadata('TextArenaEnvironment'),
  schema: { action: actionJsonSchema(TEXTARENA_ACTION), observation: TEXTARENA_OBSERVATION_SCHEMA, state: BASE_STATE_SCHEMA },
  validateAction: (data) => validateModel(TEXTARENA_ACTION, data),
  create: () => createSudokuEnvironment(),
};
