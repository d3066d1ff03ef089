// TextArena Sudoku's boards: a full grid filled by randomized backtracking, then cells removed in a
// random order, each removal kept only while the puzzle still has exactly one solution, until `clues`
// cells are left to try (so a puzzle may keep more clues than asked, as TextArena's does). Rendered as
// TextArena renders it (row and column labels, `.` for empty, `|` and `- ` box rules).

import type { Rng } from './rng.ts';

/** 9 rows of 9 cells, 0 = empty. */
export type Grid = number[][];

const box = (r: number, c: number) => 3 * Math.floor(r / 3) + Math.floor(c / 3);

/** Whether `num` may go at (row, col) under the row, column and box rules (the cell itself not counted). */
export function isSafe(grid: Grid, row: number, col: number, num: number): boolean {
  for (let i = 0; i < 9; i++) {
    if (i !== col && grid[row]![i] === num) return false;
    if (i !== row && grid[i]![col] === num) return false;
  }
  const r0 = 3 * Math.floor(row / 3);
  const c0 = 3 * Math.floor(col / 3);
  for (let r = r0; r < r0 + 3; r++) for (let c = c0; c < c0 + 3; c++) if ((r !== row || c !== col) && grid[r]![c] === num) return false;
  return true;
}

function shuffle<T>(items: T[], rng: Rng): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/** A full valid grid: cells in reading order, each trying 1–9 in a random order, backtracking. */
export function fullGrid(rng: Rng): Grid {
  const grid: Grid = Array.from({ length: 9 }, () => Array(9).fill(0));
  const fill = (cell: number): boolean => {
    if (cell === 81) return true;
    const r = Math.floor(cell / 9);
    const c = cell % 9;
    for (const num of shuffle([1, 2, 3, 4, 5, 6, 7, 8, 9], rng)) {
      if (!isSafe(grid, r, c, num)) continue;
      grid[r]![c] = num;
      if (fill(cell + 1)) return true;
      grid[r]![c] = 0;
    }
    return false;
  };
  fill(0);
  return grid;
}

/**
 * Solutions of `grid`, counted up to `limit`. Candidates are bitmasks and the search always branches on
 * the empty cell with the fewest candidates: the count is the one TextArena's plain backtracking finds,
 * in milliseconds even for 20-clue puzzles.
 */
export function countSolutions(grid: Grid, limit = 2): number {
  const rows = new Uint16Array(9);
  const cols = new Uint16Array(9);
  const boxes = new Uint16Array(9);
  const empty: number[] = [];
  for (let r = 0; r < 9; r++) {
    for (let c = 0; c < 9; c++) {
      const v = grid[r]![c]!;
      if (v === 0) {
        empty.push(r * 9 + c);
        continue;
      }
      const bit = 1 << v;
      // A given that breaks the rules: no solution.
      if ((rows[r]! | cols[c]! | boxes[box(r, c)]!) & bit) return 0;
      rows[r]! |= bit;
      cols[c]! |= bit;
      boxes[box(r, c)]! |= bit;
    }
  }
  let found = 0;
  const search = (left: number): void => {
    if (found >= limit) return;
    if (left === 0) {
      found++;
      return;
    }
    let best = -1;
    let bestFree = 0;
    let bestCount = 10;
    for (let i = 0; i < left; i++) {
      const cell = empty[i]!;
      const r = Math.floor(cell / 9);
      const c = cell % 9;
      const free = ~(rows[r]! | cols[c]! | boxes[box(r, c)]!) & 0x3fe;
      let n = 0;
      for (let m = free; m; m &= m - 1) n++;
      if (n < bestCount) [best, bestFree, bestCount] = [i, free, n];
      if (n === 0) return;
    }
    const cell = empty[best]!;
    empty[best] = empty[left - 1]!;
    empty[left - 1] = cell;
    const r = Math.floor(cell / 9);
    const c = cell % 9;
    for (let m = bestFree; m && found < limit; m &= m - 1) {
      const bit = m & -m;
      rows[r]! |= bit;
      cols[c]! |= bit;
      boxes[box(r, c)]! |= bit;
      search(left - 1);
      rows[r]! &= ~bit;
      cols[c]! &= ~bit;
      boxes[box(r, c)]! &= ~bit;
    }
    empty[left - 1] = empty[best]!;
    empty[best] = cell;
  };
  search(empty.length);
  return found;
}

/** The puzzle of a full grid: removals in a random order, each undone when the solution stops being unique. */
export function removeCells(full: Grid, clues: number, rng: Rng): Grid {
  const puzzle = full.map((row) => [...row]);
  const cells = shuffle(Array.from({ length: 81 }, (_, i) => i), rng);
  while (cells.length > clues) {
    const cell = cells.pop()!;
    const r = Math.floor(cell / 9);
    const c = cell % 9;
    const removed = puzzle[r]![c]!;
    puzzle[r]![c] = 0;
    if (countSolutions(puzzle) !== 1) puzzle[r]![c] = removed;
  }
  return puzzle;
}

/** A puzzle and its solution. */
export function generateSudoku(clues: number, rng: Rng): { solution: Grid; puzzle: Grid } {
  const solution = fullGrid(rng);
  return { solution, puzzle: removeCells(solution, clues, rng) };
}

/** TextArena's board text: `   C1 C2 C3   C4 …` header, `R1  5  3  . |  …` rows, a `- ` rule after rows 3 and 6. */
export function renderBoard(grid: Grid): string {
  const header = '   ' + Array.from({ length: 9 }, (_, j) => `C${j + 1}` + ((j + 1) % 3 === 0 ? '  ' : '')).join(' ');
  const lines = [header];
  grid.forEach((row, i) => {
    let text = `R${i + 1} `;
    row.forEach((num, j) => {
      text += ` ${num === 0 ? '.' : num} `;
      if ((j + 1) % 3 === 0 && j < 8) text += '| ';
    });
    lines.push(text.trim());
    if ((i + 1) % 3 === 0 && i < 8) lines.push('   ' + '- '.repeat(16));
  });
  return lines.join('\n');
}
