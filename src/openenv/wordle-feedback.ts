// Wordle's per-letter feedback, kept free of Node imports so the env (env-server/envs/wordle.ts) and
// the browser-side scripted solver (src/rl/tasks/wordle-solver.ts) compute it with the same code. It
// is part of the built-in wordle env's rules (specs/openenv-protocol.md §5.3), so it lives with the
// OpenEnv layer that both sides import: src/rl never imports the env-server, nor the env-server src/rl.

export type WordleMark = 'G' | 'Y' | 'X';

/** Two-pass Wordle feedback: greens consume their secret letter first, then yellows left to right. */
export function wordleFeedback(guess: string, secret: string): WordleMark[] {
  const guessLetters = [...guess];
  const unconsumed: (string | null)[] = [...secret];
  const feedback: (WordleMark | null)[] = guessLetters.map((letter, i) => {
    if (letter !== unconsumed[i]) return null;
    unconsumed[i] = null;
    return 'G';
  });
  return feedback.map((mark, i) => {
    if (mark !== null) return mark;
    const at = unconsumed.indexOf(guessLetters[i]!);
    if (at < 0) return 'X';
    unconsumed[at] = null;
    return 'Y';
  });
}
