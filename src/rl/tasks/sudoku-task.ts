// TRL's Sudoku example (examples/scripts/openenv/sudoku.py at TRL f2cd577) as a task: its `SudokuEnv`
// class ported — `place(row, col, number)` over TextArena's Sudoku-v0 (the built-in /envs/sudoku or a
// TextArena server playing it), the board read back from the cumulative game log, hints by difficulty
// (easy: guaranteed moves and ≤3-candidate cells, medium: candidates of the first empty cells, hard:
// none), and its five reward functions. TRL's reward helpers are properties there, so they are no tools.

import type { RewardFunction } from '../grpo/rewards.ts';
import type { DatasetRow, Tool, ToolEnv } from '../rollout/env.ts';
import type { ToolDeclaration } from '../rollout/schema.ts';
import { EpisodeSlot, openEnvEpisodes, type OpenEpisode } from './envs/episode-session.ts';
import { wordleLog } from './envs/wordle.ts';
import { SUDOKU_SYSTEM_PROMPT } from './sudoku-prompt.ts';
import type { ChatTemplateTask } from './task.ts';

export type SudokuHints = 'easy' | 'medium' | 'hard';

/** TRL's defaults: `--dataset-prompt`, `--max-turns`, `--difficulty`. */
export const SUDOKU_USER_PROMPT = 'Play Sudoku like an expert.';
export const SUDOKU_MAX_TURNS = 100;

export const PLACE_TOOL: ToolDeclaration = {
  name: 'place',
  description: 'Place a number on the Sudoku board.',
  parameters: [
    { name: 'row', type: 'integer', description: 'Row number (1-9).' },
    { name: 'col', type: 'integer', description: 'Column number (1-9).' },
    { name: 'number', type: 'integer', description: 'Number to place (1-9).' },
  ],
  returns: { type: 'string', description: 'The result of the move and updated board state.' },
};

type Grid = number[][];

/** Whether the text holds a TextArena board (TRL's check: R1, R9 and a box rule). */
export function isBoardText(text: string): boolean {
  return text.includes('R1') && text.includes('R9') && text.includes('|');
}

/** `R<digit>` lines: the row's cells are its `.` and digits after the label. */
function rowLines(text: string): { row: number; cells: string }[] {
  const out: { row: number; cells: string }[] = [];
  for (const line of text.split('\n')) {
    const s = line.trim();
    if (s.length > 1 && s[0] === 'R' && /[0-9]/.test(s[1]!)) out.push({ row: Number(s[1]), cells: s.slice(2) });
  }
  return out;
}

/** The 9×9 grid of a board text (0 = empty); all zeros when the text holds no board. */
export function parseBoard(text: string): Grid {
  const grid: Grid = Array.from({ length: 9 }, () => Array(9).fill(0));
  if (!isBoardText(text)) return grid;
  for (const { row, cells } of rowLines(text)) {
    if (row < 1 || row > 9) continue;
    let col = 0;
    for (const ch of cells) {
      if (col >= 9) break;
      if (ch === '.') grid[row - 1]![col++] = 0;
      else if (/[0-9]/.test(ch)) grid[row - 1]![col++] = Number(ch);
    }
  }
  return grid;
}

export function countFilled(text: string): number {
  return isBoardText(text) ? parseBoard(text).flat().filter((v) => v !== 0).length : 0;
}

/** The numbers the row, column and box leave for an empty cell (none for a filled one). */
export function candidates(grid: Grid, row: number, col: number): number[] {
  if (grid[row]![col] !== 0) return [];
  const used = new Set<number>();
  for (let i = 0; i < 9; i++) {
    used.add(grid[row]![i]!);
    used.add(grid[i]![col]!);
  }
  const r0 = 3 * Math.floor(row / 3);
  const c0 = 3 * Math.floor(col / 3);
  for (let r = r0; r < r0 + 3; r++) for (let c = c0; c < c0 + 3; c++) used.add(grid[r]![c]!);
  return [1, 2, 3, 4, 5, 6, 7, 8, 9].filter((n) => !used.has(n));
}

/** Empty cells (1-based) with their candidates; by fewest candidates first (a stable sort) when asked. */
export function emptyCellsWithCandidates(text: string, byDifficulty: boolean): { row: number; col: number; options: number[] }[] {
  const grid = parseBoard(text);
  const cells: { row: number; col: number; options: number[] }[] = [];
  for (let r = 0; r < 9; r++) for (let c = 0; c < 9; c++) if (grid[r]![c] === 0) cells.push({ row: r + 1, col: c + 1, options: candidates(grid, r, c) });
  if (byDifficulty) cells.sort((a, b) => a.options.length - b.options.length);
  return cells;
}

/** Empty cells (1-based row, col) as the board text shows them. */
export function emptyCells(text: string): [number, number][] {
  if (!isBoardText(text)) return [];
  const out: [number, number][] = [];
  for (const { row, cells } of rowLines(text)) {
    let col = 0;
    for (const ch of cells) {
      if (ch === '.') out.push([row, ++col]);
      else if (/[0-9]/.test(ch)) col++;
    }
  }
  return out;
}

/** The board's own lines out of a message: from the `C1` header or first row to the first other text. */
export function boardOnly(text: string): string {
  const lines: string[] = [];
  let inBoard = false;
  for (const line of text.split('\n')) {
    const s = line.trim();
    const isRow = s.length > 1 && s[0] === 'R' && /[0-9]/.test(s[1]!);
    if (s.startsWith('C1') || isRow) inBoard = true;
    if (inBoard && (s.startsWith('-') || s.startsWith('R') || s.startsWith('C1'))) lines.push(line);
    else if (inBoard && s !== '' && !s.startsWith('-') && !isRow) break;
  }
  return lines.join('\n');
}

const INVALID_WORDS = ['invalid', 'error', 'cannot', 'already', 'violation', 'lost'];

/** One Sudoku game per episode, as TRL's `SudokuEnv`; the reward functions read its scores. */
export class SudokuToolEnv implements ToolEnv {
  private readonly episode: EpisodeSlot;
  readonly tools: Tool[] = [{ declaration: PLACE_TOOL, call: (args) => this.place(args.row, args.col, args.number) }];
  private moveCounts = new Map<string, number>();
  private successfulMoves: string[] = [];
  private failedMoves: string[] = [];
  private validMoveScores: number[] = [];
  private emptyCellScores: number[] = [];
  private correctScores: number[] = [];
  private repetitionScores: number[] = [];
  private lastBoard = '';
  private lastFull = '';
  private initialFilled = 0;
  private maxFilled = 0;
  private turn = 0;
  private done = false;

  constructor(
    baseUrl: string,
    open: OpenEpisode,
    private readonly hints: SudokuHints = 'easy',
    private readonly maxTurns = SUDOKU_MAX_TURNS,
  ) {
    this.episode = new EpisodeSlot(baseUrl, open);
  }

  async reset(_row: DatasetRow): Promise<string> {
    this.moveCounts = new Map();
    this.successfulMoves = [];
    this.failedMoves = [];
    this.validMoveScores = [];
    this.emptyCellScores = [];
    this.correctScores = [];
    this.repetitionScores = [];
    this.lastBoard = '';
    this.initialFilled = 0;
    this.turn = 0;
    const first = await this.episode.reset();
    this.done = first.done;
    this.lastFull = wordleLog(first);
    if (isBoardText(this.lastFull)) {
      this.lastBoard = this.lastFull;
      this.initialFilled = countFilled(this.lastBoard);
    }
    this.maxFilled = this.initialFilled;
    const board = this.lastBoard ? boardOnly(this.lastBoard) : 'No board available.';
    return `Step 0. Progress: 0 cells filled.\n\nBoard:\n${board}${this.formatHints()}`;
  }

  async place(row: unknown, col: unknown, number: unknown): Promise<string> {
    if (this.done) throw new Error('Game is over. No more moves allowed.');
    this.turn++;
    const move = `[${row} ${col} ${number}]`;
    const result = await this.episode.step({ message: move });
    const correctScore = typeof result.reward === 'number' ? result.reward : Number(result.reward ?? 0);
    this.done = result.done;
    // The log is cumulative: only what this move added is its feedback.
    const full = wordleLog(result);
    const added = full.slice(this.lastFull.length);
    this.lastFull = full;
    const lower = added.toLowerCase();
    const envSaysInvalid = INVALID_WORDS.some((w) => lower.includes(w));
    const gotWarning = lower.includes('please resubmit') || lower.includes('avoid penalties');
    // Placing on a non-empty cell is always invalid, whatever the env said.
    const targetsEmpty = this.lastBoard ? emptyCells(this.lastBoard).some(([r, c]) => r === row && c === col) : true;
    const isValid = !envSaysInvalid && targetsEmpty;

    const repeats = this.moveCounts.get(move) ?? 0;
    this.moveCounts.set(move, repeats + 1);
    const repetitionScore = repeats > 0 ? -Math.min(2 ** (repeats - 1), 10) : 0;
    let validScore = 0;
    if (isValid && repeats === 0) {
      validScore = 1;
      this.successfulMoves.push(move);
    } else if (gotWarning) {
      validScore = -0.5;
      this.failedMoves.push(move);
    }
    if (isValid && isBoardText(added)) {
      this.lastBoard = added;
      this.maxFilled = Math.max(this.maxFilled, countFilled(this.lastBoard));
    }
    this.validMoveScores.push(validScore);
    this.emptyCellScores.push(targetsEmpty ? 1 : -1);
    this.correctScores.push(correctScore);
    this.repetitionScores.push(repetitionScore);
    if (this.turn >= this.maxTurns) this.done = true;

    const board = this.lastBoard ? boardOnly(this.lastBoard) : 'No board available.';
    const status = isValid ? 'valid' : 'invalid';
    const progress = `Step ${this.turn}. Progress: ${this.successfulMoves.length} cells filled.`;
    if (this.done) return `Move ${move}: ${status}. Game over.\n${progress}\n\nFinal board:\n${board}`;
    return `Move ${move}: ${status}\n${progress}\n\nBoard:\n${board}${this.formatHints()}`;
  }

  private formatHints(): string {
    const parts: string[] = [];
    const tried = [...this.successfulMoves, ...this.failedMoves];
    if (tried.length > 0) parts.push(`\nMOVES ALREADY TRIED (do not repeat): ${tried.join(', ')}`);
    if (!this.lastBoard) return parts.join('\n');
    if (this.hints === 'easy') {
      const cells = emptyCellsWithCandidates(this.lastBoard, true).slice(0, 10);
      const guaranteed = cells.filter((c) => c.options.length === 1).map((c) => `[${c.row} ${c.col} ${c.options[0]}]`);
      const other = cells.filter((c) => c.options.length > 1 && c.options.length <= 3).map((c) => `(${c.row},${c.col})->${c.options.join(',')}`);
      if (guaranteed.length > 0) parts.push(`\nGUARANTEED MOVES: ${guaranteed.slice(0, 5).join(', ')}`);
      if (other.length > 0) parts.push(`Other options: ${other.slice(0, 5).join(' | ')}`);
    } else if (this.hints === 'medium') {
      const cells = emptyCellsWithCandidates(this.lastBoard, false).slice(0, 10);
      if (cells.length > 0) parts.push(`\nEmpty cells: ${cells.map((c) => `(${c.row},${c.col})->${c.options.join(',')}`).join(' | ')}`);
    }
    return parts.join('\n');
  }

  get correctReward(): number {
    return this.correctScores.at(-1) ?? 0;
  }
  get validMoveReward(): number {
    return mean(this.validMoveScores);
  }
  get emptyCellReward(): number {
    return mean(this.emptyCellScores);
  }
  get repetitionReward(): number {
    return mean(this.repetitionScores);
  }
  get progressReward(): number {
    const remaining = 81 - this.initialFilled;
    return remaining > 0 ? (this.maxFilled - this.initialFilled) / remaining : 1;
  }

  close(): Promise<void> {
    return this.episode.close();
  }
}

const mean = (xs: readonly number[]) => (xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

function rewardOf(name: string, read: (env: SudokuToolEnv) => number): RewardFunction {
  const fn: RewardFunction = ({ environments }) =>
    environments.map((env, i) => {
      if (!(env instanceof SudokuToolEnv)) throw new Error(`${name}: environment ${i} is not a SudokuToolEnv`);
      return read(env);
    });
  Object.defineProperty(fn, 'name', { value: name });
  return fn;
}

/** TRL's five, in its `reward_funcs` order. */
export const SUDOKU_REWARDS: RewardFunction[] = [
  rewardOf('reward_empty_cell', (e) => e.emptyCellReward),
  rewardOf('reward_valid_moves', (e) => e.validMoveReward),
  rewardOf('reward_repetition', (e) => e.repetitionReward),
  rewardOf('reward_progress', (e) => e.progressReward),
  rewardOf('reward_correct', (e) => e.correctReward),
];

/** TRL's sudoku.py: its dataset (system prompt + `--dataset-prompt`), env class and GRPOConfig arguments. */
export function sudokuTask(hints: SudokuHints = 'easy'): ChatTemplateTask {
  return {
    name: 'sudoku',
    dataset: (size = 1000) =>
      Array.from({ length: size }, () => ({
        prompt: [
          { role: 'system' as const, content: SUDOKU_SYSTEM_PROMPT },
          { role: 'user' as const, content: SUDOKU_USER_PROMPT },
        ],
      })),
    envFactory: (urls, open = openEnvEpisodes()) => {
      const url = urls.sudoku;
      if (!url) throw new Error('the sudoku env needs a base URL');
      return () => new SudokuToolEnv(url, open, hints);
    },
    rewardFuncs: SUDOKU_REWARDS,
    config: {
      chat_template_kwargs: { enable_thinking: false },
      log_completions: true,
      logging_steps: 1,
      num_train_epochs: 1,
      learning_rate: 5e-6,
      gradient_accumulation_steps: 64,
      warmup_steps: 20,
      per_device_train_batch_size: 1,
      num_generations: 8,
      max_completion_length: 16384,
      temperature: 0.8,
      top_k: 10,
    },
  };
}
