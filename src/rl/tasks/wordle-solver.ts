// The scripted Wordle policy behind the `wordle` SFT solver: keep every answer still consistent with
// the feedback so far, and guess the candidate that splits the rest into the smallest groups. Pure
// (no fs, no network) so the browser trainer worker runs it too.

import { wordleFeedback, type WordleMark } from '../../openenv/wordle-feedback.ts';
import { WORDLE_ANSWERS } from './wordle-answers.ts';

/**
 * The first guess, fixed so the first turn costs nothing. Chosen by playing every answer in
 * WORDLE_ANSWERS with this solver: opening with 'slate' wins all 1174 within 6 guesses (3.25 on
 * average), while 'arise' (the best by expected group size alone) loses 2.
 */
export const WORDLE_OPENER = 'slate';

/**
 * At most this many candidates are scored as the next guess (each against every candidate), which
 * bounds a turn's work to GUESS_POOL × candidates feedback evaluations.
 */
export const GUESS_POOL = 200;

/** Feedback as a comparable key, e.g. `GXYXX`. */
function key(marks: readonly WordleMark[]): string {
  return marks.join('');
}

/**
 * The guess among the first `pool` candidates that minimizes the expected number of candidates left
 * (sum of squared feedback-group sizes); ties go to the earlier candidate, so the choice is reproducible.
 */
export function bestGuess(candidates: readonly string[], pool = GUESS_POOL): string {
  if (candidates.length === 0) throw new Error('bestGuess: no candidates left');
  let best = candidates[0]!;
  let bestScore = Infinity;
  for (const guess of candidates.slice(0, pool)) {
    const groups = new Map<string, number>();
    for (const secret of candidates) {
      const k = key(wordleFeedback(guess, secret));
      groups.set(k, (groups.get(k) ?? 0) + 1);
    }
    let score = 0;
    for (const size of groups.values()) score += size * size;
    if (score < bestScore) {
      bestScore = score;
      best = guess;
    }
  }
  return best;
}

/**
 * The G/Y/X marks for `guess` in a guess tool result, e.g.
 * `[GAME] You submitted [slate].\nFeedback:\nS L A T E\nX G X X Y\nYou have 5 guesses left.`
 */
export function parseWordleFeedback(observation: string, guess: string): WordleMark[] {
  const at = observation.indexOf(`You submitted [${guess}].`);
  if (at < 0) throw new Error(`wordle solver: no feedback for '${guess}' in the env's reply: ${JSON.stringify(observation)}`);
  const letters = [...guess.toUpperCase()].join(' ');
  const m = new RegExp(`Feedback:\\n${letters}\\n([GYX](?: [GYX]){4})\\n`).exec(observation.slice(at));
  if (!m) throw new Error(`wordle solver: unreadable feedback for '${guess}' in the env's reply: ${JSON.stringify(observation)}`);
  return m[1]!.split(' ') as WordleMark[];
}

/** One game's state: the answers still possible and the guesses made. */
export class WordleSolver {
  private candidates: readonly string[];
  readonly guesses: string[] = [];

  constructor(answers: readonly string[] = WORDLE_ANSWERS) {
    this.candidates = answers;
  }

  /** Answers consistent with all feedback so far. */
  get remaining(): readonly string[] {
    return this.candidates;
  }

  /** The next word to guess (bare, lower-case); records it as guessed. */
  next(): string {
    const guess = this.guesses.length === 0 && this.candidates.includes(WORDLE_OPENER) ? WORDLE_OPENER : bestGuess(this.candidates);
    this.guesses.push(guess);
    return guess;
  }

  /** Keeps the candidates that would have produced `marks` for `guess`. */
  observe(guess: string, marks: readonly WordleMark[]): void {
    const want = key(marks);
    const kept = this.candidates.filter((secret) => key(wordleFeedback(guess, secret)) === want);
    if (kept.length === 0) {
      throw new Error(`wordle solver: feedback ${want} for '${guess}' fits no answer in the list (is the env using a different word list?)`);
    }
    this.candidates = kept;
  }
}
