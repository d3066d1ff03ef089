// The built-in /envs/sudoku: TextArena Sudoku-v0's rules (TextArena's env, read for facts) in OpenEnv's
// textarena wire format (one cumulative [GAME] log as a single message, as wordle).

import { describe, expect, it } from 'vitest';
import { countSolutions, generateSudoku, isSafe, renderBoard, type Grid } from '../../env-server/envs/sudoku-board.ts';
import { createSudokuEnvironment, SUDOKU_CLUES, sudokuEnv } from '../../env-server/envs/sudoku.ts';
import { rngForSeed } from '../../env-server/envs/rng.ts';
import type { WireObservation } from '../../env-server/envs/types.ts';

const clues = (g: Grid) => g.flat().filter((v) => v !== 0).length;
const isSolved = (g: Grid) => g.every((row, r) => row.every((v, c) => v >= 1 && v <= 9 && isSafe(g, r, c, v)));
const logOf = (o: WireObservation) => (o.observation.messages as { content: string }[])[0]!.content;

/** A fixed puzzle: a known solution with two holes, (1,1) and (9,9). */
const SOLUTION: Grid = generateSudoku(81, rngForSeed(3)).solution;
const TWO_HOLES = () => {
  const puzzle = SOLUTION.map((r) => [...r]);
  puzzle[0]![0] = 0;
  puzzle[8]![8] = 0;
  return { solution: SOLUTION.map((r) => [...r]), puzzle };
};
const fixed = () => {
  const env = createSudokuEnvironment(TWO_HOLES);
  env.reset({});
  return env;
};

describe('sudoku boards', () => {
  it.each([['easy', SUDOKU_CLUES.easy], ['default', SUDOKU_CLUES.default], ['medium', SUDOKU_CLUES.medium], ['hard', SUDOKU_CLUES.hard]] as const)('%s: a seeded puzzle has exactly one solution, which is the full grid, and at least its clues', (_name, n) => {
    const { solution, puzzle } = generateSudoku(n, rngForSeed(11));
    expect(isSolved(solution)).toBe(true);
    expect(clues(puzzle)).toBeGreaterThanOrEqual(n);
    expect(countSolutions(puzzle)).toBe(1);
    expect(puzzle.every((row, r) => row.every((v, c) => v === 0 || v === solution[r]![c]))).toBe(true);
  });

  it('the same seed gives the same puzzle; another seed another', () => {
    expect(generateSudoku(60, rngForSeed(5))).toEqual(generateSudoku(60, rngForSeed(5)));
    expect(generateSudoku(60, rngForSeed(6)).puzzle).not.toEqual(generateSudoku(60, rngForSeed(5)).puzzle);
  });

  it('counts 0 for a broken given and 2 (the cap) for an empty grid', () => {
    const broken = SOLUTION.map((r) => [...r]);
    broken[0]![1] = broken[0]![0]!;
    expect(countSolutions(broken)).toBe(0);
    expect(countSolutions(Array.from({ length: 9 }, () => Array(9).fill(0)))).toBe(2);
  });

  it("renders as TextArena: labels, '.', box rules", () => {
    const text = renderBoard(TWO_HOLES().puzzle).split('\n');
    expect(text[0]).toBe('   C1 C2 C3   C4 C5 C6   C7 C8 C9  ');
    expect(text[1]).toMatch(/^R1  \.  \d  \d \|  \d  \d  \d \|  \d  \d  \d$/);
    expect(text[4]).toBe('   - - - - - - - - - - - - - - - - ');
    expect(text).toHaveLength(12);
    expect(text[11]).toMatch(/\| {2}\d {2}\d {2}\.$/);
  });
});

describe('/envs/sudoku', () => {
  it('reset: the player prompt and the board in one [GAME] log, reward 0, TextArena state', () => {
    const env = createSudokuEnvironment();
    const o = env.reset({ seed: 1 });
    const log = logOf(o);
    expect(log.startsWith('\n[GAME] You are Player 0. You are playing Sudoku.\n')).toBe(true);
    expect(log).toContain("\n[GAME] Game Board:\n   C1 C2 C3   C4 C5 C6   C7 C8 C9  \nR1 ");
    expect(o.observation.prompt).toBe(log.trim());
    expect([o.reward, o.done, o.observation.current_player_id, o.observation.legal_players]).toEqual([0, false, 0, [0]]);
    expect(env.state()).toMatchObject({ env_id: 'Sudoku-v0', num_players: 1, max_turns: 100, turn: 0 });
    expect(logOf(createSudokuEnvironment().reset({ seed: 1 }))).toBe(log);
  });

  it('difficulty picks the clues and the env id; a bad one is refused by name', () => {
    const env = createSudokuEnvironment();
    env.reset({ seed: 2, difficulty: 'hard' });
    expect(env.state().env_id).toBe('Sudoku-v0-hard');
    expect(() => env.reset({ difficulty: 'extreme' })).toThrow("difficulty must be 'easy', 'medium' or 'hard', got \"extreme\"");
  });

  it('a correct move appends the board; the last one wins with reward 1 and no more moves', () => {
    const env = fixed();
    const a = SOLUTION[0]![0]!;
    const first = env.step({ message: `I place [1 1 ${a}]` });
    expect([first.reward, first.done]).toEqual([0, false]);
    expect(logOf(first)).toMatch(new RegExp(`\\n\\[GAME\\] I place \\[1 1 ${a}\\]\\n\\[GAME\\] Board state: \\n   C1 C2 C3   C4 C5 C6   C7 C8 C9  \\nR1  ${a}  `));
    expect(first.observation.prompt).toBe('Sudoku-v0');
    const win = env.step({ message: `9 9 ${SOLUTION[8]![8]}` });
    expect([win.reward, win.done]).toEqual([1, true]);
    expect(() => env.step({ message: '[1 1 1]' })).toThrow('Game is over. Call reset.');
  });

  it.each([
    ['no [r c n]', 'hello', "Invalid move format. Player 0 did not respond with valid 'row column number'."],
    ['out of bounds', '[10 1 5]', 'Invalid move. Player 0 attempted to place 5 at (10, 1), which is out of bounds.'],
    ['a clue', '[1 2 5]', 'Invalid move. Player 0 attempted to overwrite a pre-filled cell (1, 2).'],
  ])('invalid (%s): warned once, reward 0', (_what, message, reason) => {
    const o = fixed().step({ message });
    expect([o.reward, o.done]).toEqual([0, false]);
    expect(logOf(o).endsWith(`\n[GAME] You attempted an invalid move. Reason: ${reason} Please resubmit a valid move and remember to follow the game rules to avoid penalties.`)).toBe(true);
  });

  it('a wrong number violates the rules; a second invalid move in a row ends the game with the fraction correct', () => {
    const env = fixed();
    const wrong = (SOLUTION[0]![0]! % 9) + 1;
    expect(logOf(env.step({ message: `[1 1 ${wrong}]` }))).toContain(`attempted to place ${wrong} at (1, 1), which violates Sudoku rules.`);
    env.step({ message: `[9 9 ${SOLUTION[8]![8]}]` }); // valid: the streak restarts
    env.step({ message: `[1 1 ${wrong}]` });
    const end = env.step({ message: `[1 1 ${wrong}]` });
    expect([end.reward, end.done]).toEqual([0.5, true]);
  });

  it('a move on a cell the player already filled is an overwrite', () => {
    const env = fixed();
    env.step({ message: `[1 1 ${SOLUTION[0]![0]}]` });
    expect(logOf(env.step({ message: `[1 1 ${SOLUTION[0]![0]}]` }))).toContain('overwrite a pre-filled cell (1, 1)');
  });

  it("serves TextArena's schemas and metadata (the class is TextArenaEnvironment)", () => {
    expect(sudokuEnv.metadata.name).toBe('TextArenaEnvironment');
    expect((sudokuEnv.schema.action as { title: string }).title).toBe('TextArenaAction');
    expect(sudokuEnv.validateAction({ message: 3 }).ok).toBe(false);
  });
});
