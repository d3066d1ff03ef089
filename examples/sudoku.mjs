// TRL's examples/scripts/openenv/sudoku.py as an environment class: `place(row, col, number)` on TextArena's
// Sudoku-v0 (webgrpo's built-in /envs/sudoku, or OpenEnv's sudoku Space with --env-url). The server's
// observation is the whole game log (boards as "R1 . 3 . | …" lines, moves as "[row col number]"); each
// move answers with the board and, by difficulty, hints: easy = guaranteed moves and short candidate
// lists, medium = candidates of the first empty cells, hard = none. Five reward functions, as TRL's.
// A row's `difficulty` column overrides SudokuEnv.difficulty.
//
//   webgrpo train --model DIR --env-class examples/sudoku.mjs
import { EnvClient, envUrl } from 'webgrpo/openenv';

/** TRL's sudoku_prompt.txt (the system message). */
export const SYSTEM_PROMPT = "You are an expert Sudoku player with deep knowledge of logical deduction strategies and number placement techniques.\n\n## GAME RULES\n\n1. The puzzle is a 9x9 grid divided into nine 3x3 subgrids (boxes)\n2. Some cells are pre-filled with numbers 1-9\n3. You must fill in the empty cells (shown as '.') with numbers 1-9\n4. Each row must contain numbers 1-9 without repetition\n5. Each column must contain numbers 1-9 without repetition\n6. Each 3x3 subgrid must contain numbers 1-9 without repetition\n7. You cannot overwrite pre-filled cells\n8. Invalid moves result in penalties (-1 reward)\n\n## HOW TO PLAY\n\nUse the `place` tool to make moves. The tool takes three arguments:\n- `row`: Row number (1-9)\n- `col`: Column number (1-9)\n- `number`: Number to place (1-9)\n\n## STRATEGIC APPROACH\n\nDo not repeat the same move twice.\n\n### Basic Strategies\n- **Naked Singles**: If a cell has only one possible candidate, fill it in immediately.\n- **Hidden Singles**: If a number can only go in one cell within a row, column, or box, place it there.\n- **Scanning**: Look at each row, column, and box to find where specific numbers can go.\n\n### Intermediate Strategies\n- **Naked Pairs/Triples**: When two/three cells in a unit contain only the same candidates, eliminate those from other cells.\n- **Hidden Pairs/Triples**: When numbers only appear in specific cells within a unit, those cells can only contain those numbers.\n- **Pointing Pairs**: When a candidate in a box is restricted to a single row/column, eliminate it elsewhere.\n\n### Solving Process\n1. Start by scanning the entire grid to identify easy fills (cells with few candidates)\n2. Look for rows, columns, or boxes with many numbers already placed\n3. Fill all naked singles first\n4. Then look for hidden singles in each row, column, and box\n5. Apply more advanced techniques as needed\n\n### Common Pitfalls to Avoid\n- Don't guess randomly - Sudoku is pure logic\n- Don't overlook any constraint (row, column, or box)\n- Don't try to overwrite pre-filled cells\n- Don't place invalid numbers (must be 1-9)\n- Don't use invalid coordinates (must be 1-9)\n- Don't repeat a move that was already made\n\n## EXAMPLES\n\n### Example 1: Naked Single\nIf row 3, column 4 can only contain the number 5:\n→ call `place(row=3, col=4, number=5)`\n\n### Example 2: Hidden Single\nIf the number 8 can only go in one cell in row 1:\n→ call `place(row=1, col=7, number=8)`\n\n### Example 3: Row Analysis\nRow 2 is missing only value 5, and column 8 is the empty cell:\n→ call `place(row=2, col=8, number=5)`\n\n### Example 4: Box Analysis\nIn the center box, only one cell can contain 9:\n→ call `place(row=5, col=5, number=9)`\n\n## BOARD READING\n\nThe board is displayed as a 9x9 grid:\n- Numbers 1-9 are pre-filled or already placed\n- Empty cells are shown as '.'\n- Rows are labeled R1-R9 (top to bottom)\n- Columns are labeled C1-C9 (left to right)\n\nExample board representation:\n```\n   C1 C2 C3   C4 C5 C6   C7 C8 C9  \nR1  .  8  9 |  1  .  . |  .  3  7\nR2  2  7  1 |  9  4  3 |  6  .  8\nR3  .  6  5 |  .  2  7 |  4  9  .\n   - - - - - - - - - - - - - - - - \nR4  .  .  . |  7  8  . |  9  2  3\nR5  .  9  2 |  .  5  6 |  .  .  4\nR6  7  3  8 |  .  .  2 |  1  .  .\n   - - - - - - - - - - - - - - - - \nR7  8  4  . |  .  .  9 |  5  .  .\nR8  5  .  . |  6  .  8 |  3  4  9\nR9  9  .  6 |  5  3  4 |  8  7  2\n```\n\n## COORDINATE REFERENCE\n\nRow indices (top to bottom): 1, 2, 3, 4, 5, 6, 7, 8, 9\nColumn indices (left to right): 1, 2, 3, 4, 5, 6, 7, 8, 9\n\nSubgrid layout:\n```\nSubgrid 1 | Subgrid 2 | Subgrid 3\n  (R1-R3)    (R1-R3)     (R1-R3)\n  (C1-C3)    (C4-C6)     (C7-C9)\n----------+-----------+----------\nSubgrid 4 | Subgrid 5 | Subgrid 6\n  (R4-R6)    (R4-R6)     (R4-R6)\n  (C1-C3)    (C4-C6)     (C7-C9)\n----------+-----------+----------\nSubgrid 7 | Subgrid 8 | Subgrid 9\n  (R7-R9)    (R7-R9)     (R7-R9)\n  (C1-C3)    (C4-C6)     (C7-C9)\n```\n\n## IMPORTANT CONSTRAINTS\n\n- Coordinates are 1-indexed (1-9 for both row and column)\n- Numbers must be 1-9\n- One move per tool call\n- Must be a valid move (no rule violations)\n- Never repeat a previous move\n\n## YOUR GOAL\n\nUse ONLY the `place` tool to fill in empty cells one at a time. No explanation, no reasoning, just the `place`.\n";

const isBoardRow = (s) => s.length > 1 && s[0] === 'R' && /\d/.test(s[1]);

/** A log text holds a board. */
function hasBoard(text) {
  return text.includes('R1') && text.includes('R9') && text.includes('|');
}

/** The 9×9 grid of a board text (0 = empty). */
function parseGrid(text) {
  const grid = Array.from({ length: 9 }, () => Array(9).fill(0));
  if (!hasBoard(text)) return grid;
  for (const line of text.split('\n')) {
    const s = line.trim();
    if (!isBoardRow(s)) continue;
    const row = Number(s[1]) - 1;
    let col = 0;
    for (const ch of s.slice(2)) {
      if (ch === '.') grid[row][col++] = 0;
      else if (/\d/.test(ch)) grid[row][col++] = Number(ch);
    }
  }
  return grid;
}

const filledCells = (text) => (hasBoard(text) ? parseGrid(text).flat().filter((v) => v !== 0).length : 0);

/** Numbers 1-9 not yet in the cell's row, column or box. */
function candidates(grid, row, col) {
  if (grid[row][col] !== 0) return [];
  const used = new Set();
  for (let i = 0; i < 9; i++) used.add(grid[row][i]).add(grid[i][col]);
  const r0 = 3 * Math.floor(row / 3);
  const c0 = 3 * Math.floor(col / 3);
  for (let r = r0; r < r0 + 3; r++) for (let c = c0; c < c0 + 3; c++) used.add(grid[r][c]);
  return [1, 2, 3, 4, 5, 6, 7, 8, 9].filter((n) => !used.has(n));
}

/** Empty cells (1-based) with their candidates; fewest candidates first when sorted (a stable sort, as Python's). */
function emptyCellsWithCandidates(text, sorted) {
  const grid = parseGrid(text);
  const cells = [];
  for (let r = 0; r < 9; r++) for (let c = 0; c < 9; c++) if (grid[r][c] === 0) cells.push([r + 1, c + 1, candidates(grid, r, c)]);
  return sorted ? cells.sort((a, b) => a[2].length - b[2].length) : cells;
}

/** "row col" keys of the empty cells of a board text. */
function emptyCells(text) {
  const cells = new Set();
  if (!hasBoard(text)) return cells;
  for (const line of text.split('\n')) {
    const s = line.trim();
    if (!isBoardRow(s)) continue;
    let col = 0;
    for (const ch of s.slice(2)) {
      if (ch === '.') cells.add(`${s[1]} ${++col}`);
      else if (/\d/.test(ch)) col++;
    }
  }
  return cells;
}

/** The board lines of a message: from the column header or first row line to the first other line. */
function boardOnly(text) {
  const lines = [];
  let inBoard = false;
  for (const line of (text ?? '').split('\n')) {
    const s = line.trim();
    if (s.startsWith('C1') || isBoardRow(s)) inBoard = true;
    if (inBoard && (s.startsWith('-') || s.startsWith('R') || s.startsWith('C1'))) lines.push(line);
    else if (inBoard && s && !s.startsWith('-') && !isBoardRow(s)) break;
  }
  return lines.join('\n');
}

const mean = (xs) => (xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

export default class SudokuEnv {
  static difficulty = 'easy';
  static maxTurns = 100;

  constructor() {
    this.client = new EnvClient(envUrl('sudoku'));
    this._resetState();
  }

  _resetState() {
    this._moveCounts = new Map();
    this._successfulMoves = [];
    this._failedMoves = [];
    this._validMoveScores = [];
    this._emptyCellScores = [];
    this._correctScores = [];
    this._repetitionScores = [];
    this._lastBoard = '';
    this._initialFilled = 0;
    this._maxFilled = 0;
    this._turn = 0;
    this._done = false;
  }

  async reset(row) {
    this._resetState();
    this._difficulty = row.difficulty ?? SudokuEnv.difficulty;
    const result = await this.client.reset();
    this._done = result.done;
    this._lastFull = result.observation.messages?.[0]?.content ?? '';
    if (hasBoard(this._lastFull)) {
      this._lastBoard = this._lastFull;
      this._initialFilled = filledCells(this._lastBoard);
    }
    this._maxFilled = this._initialFilled;
    const board = this._lastBoard ? boardOnly(this._lastBoard) : 'No board available.';
    return `Step 0. Progress: 0 cells filled.\n\nBoard:\n${board}${this._hints()}`;
  }

  /**
   * Place a number on the Sudoku board.
   *
   * @param {integer} row Row number (1-9).
   * @param {integer} col Column number (1-9).
   * @param {integer} number Number to place (1-9).
   * @returns {string} The result of the move and updated board state.
   */
  async place(row, col, number) {
    if (this._done) throw new Error('Game is over. No more moves allowed.');
    this._turn++;
    const move = `[${row} ${col} ${number}]`;
    const result = await this.client.step({ message: move });
    const correct = Number(result.reward ?? 0);
    this._done = result.done;
    const full = result.observation.messages?.[0]?.content ?? '';
    const added = full.slice(this._lastFull.length);
    this._lastFull = full;
    const lower = added.toLowerCase();
    const envSaysInvalid = ['invalid', 'error', 'cannot', 'already', 'violation', 'lost'].some((w) => lower.includes(w));
    const warned = lower.includes('please resubmit') || lower.includes('avoid penalties');
    // Without a board to check against, the target counts as empty (TRL's rule).
    const targetsEmpty = this._lastBoard ? emptyCells(this._lastBoard).has(`${row} ${col}`) : true;
    const valid = !envSaysInvalid && targetsEmpty;
    const repeats = this._moveCounts.get(move) ?? 0;
    this._moveCounts.set(move, repeats + 1);
    let validScore = 0;
    if (valid && repeats === 0) {
      validScore = 1;
      this._successfulMoves.push(move);
    } else if (warned) {
      validScore = -0.5;
      this._failedMoves.push(move);
    }
    if (valid && hasBoard(added)) {
      this._lastBoard = added;
      this._maxFilled = Math.max(this._maxFilled, filledCells(added));
    }
    this._validMoveScores.push(validScore);
    this._emptyCellScores.push(targetsEmpty ? 1 : -1);
    this._correctScores.push(correct);
    this._repetitionScores.push(repeats > 0 ? -Math.min(2 ** (repeats - 1), 10) : 0);
    if (this._turn >= SudokuEnv.maxTurns) this._done = true;
    const board = this._lastBoard ? boardOnly(this._lastBoard) : 'No board available.';
    const status = valid ? 'valid' : 'invalid';
    const progress = `Step ${this._turn}. Progress: ${this._successfulMoves.length} cells filled.`;
    if (this._done) return `Move ${move}: ${status}. Game over.\n${progress}\n\nFinal board:\n${board}`;
    return `Move ${move}: ${status}\n${progress}\n\nBoard:\n${board}${this._hints()}`;
  }

  _hints() {
    const parts = [];
    const tried = [...this._successfulMoves, ...this._failedMoves];
    if (tried.length > 0) parts.push(`\nMOVES ALREADY TRIED (do not repeat): ${tried.join(', ')}`);
    if (!this._lastBoard) return parts.join('\n');
    if (this._difficulty === 'easy') {
      const cells = emptyCellsWithCandidates(this._lastBoard, true).slice(0, 10);
      const guaranteed = cells.filter(([, , c]) => c.length === 1).map(([r, c, n]) => `[${r} ${c} ${n[0]}]`);
      const other = cells.filter(([, , c]) => c.length > 1 && c.length <= 3).map(([r, c, n]) => `(${r},${c})->${n.join(',')}`);
      if (guaranteed.length > 0) parts.push(`\nGUARANTEED MOVES: ${guaranteed.slice(0, 5).join(', ')}`);
      if (other.length > 0) parts.push(`Other options: ${other.slice(0, 5).join(' | ')}`);
    } else if (this._difficulty === 'medium') {
      const cells = emptyCellsWithCandidates(this._lastBoard, false).slice(0, 10);
      if (cells.length > 0) parts.push(`\nEmpty cells: ${cells.map(([r, c, n]) => `(${r},${c})->${n.join(',')}`).join(' | ')}`);
    }
    return parts.join('\n');
  }

  // Getters, as TRL's @property rewards: read by the reward functions, not tools.
  get correctReward() {
    return this._correctScores.at(-1) ?? 0;
  }

  get validMoveReward() {
    return mean(this._validMoveScores);
  }

  get emptyCellReward() {
    return mean(this._emptyCellScores);
  }

  get repetitionReward() {
    return mean(this._repetitionScores);
  }

  get progressReward() {
    const remaining = 81 - this._initialFilled;
    return remaining > 0 ? (this._maxFilled - this._initialFilled) / remaining : 1;
  }

  close() {
    return this.client.close();
  }
}

export function reward_empty_cell({ environments }) {
  return environments.map((env) => env.emptyCellReward);
}

export function reward_valid_moves({ environments }) {
  return environments.map((env) => env.validMoveReward);
}

export function reward_correct({ environments }) {
  return environments.map((env) => env.correctReward);
}

export function reward_repetition({ environments }) {
  return environments.map((env) => env.repetitionReward);
}

export function reward_progress({ environments }) {
  return environments.map((env) => env.progressReward);
}

export const rewardFuncs = [reward_empty_cell, reward_valid_moves, reward_correct, reward_repetition, reward_progress];

export const dataset = Array.from({ length: 1000 }, () => ({
  prompt: [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: 'Play Sudoku like an expert.' },
  ],
}));

export const config = {
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
  save_steps: 10,
};
