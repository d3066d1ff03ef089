// The held-out split of the built-in envs, shared by the trainer (which plays it) and the env-server
// (whose wordle keeps its words out of every other game). Training's env seeds are 32-bit
// (src/rl/tasks/play-episode.ts seededEpisodes: `>>> 0`), so seeds from 2^32 up are never drawn by a
// run: held-out episode i of catch or wordle resets with seed EVAL_SEED_BASE + i.

/** The first held-out env seed: above every seed a training run or a scripted warm-up resets with. */
export const EVAL_SEED_BASE = 2 ** 32;

/**
 * Wordle's held-out secrets, like the 30 words OpenEnv's Wordle tutorial evaluates on: every 39th word
 * of the shipped answer list (answers.txt, 1174 words). No other game of the built-in env draws them;
 * held-out episode i plays word i mod 30.
 */
export const WORDLE_EVAL_WORDS: readonly string[] = Object.freeze([
  'agent', 'arena', 'belly', 'brick', 'chase', 'cloth', 'crush', 'dodge', 'embed', 'favor',
  'forge', 'graph', 'hobby', 'laser', 'lunch', 'modal', 'nurse', 'peace', 'probe', 'realm',
  'royal', 'seven', 'skill', 'spent', 'stiff', 'syrup', 'token', 'tweet', 'visit', 'woman',
]);

/** Whether a reset seed belongs to the held-out split (an integer ≥ EVAL_SEED_BASE). */
export function isEvalSeed(seed: unknown): seed is number {
  return typeof seed === 'number' && Number.isSafeInteger(seed) && seed >= EVAL_SEED_BASE;
}

/** The secret of a held-out wordle game. */
export function wordleEvalWord(seed: number): string {
  return WORDLE_EVAL_WORDS[(seed - EVAL_SEED_BASE) % WORDLE_EVAL_WORDS.length]!;
}
