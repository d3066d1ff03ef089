// "Did you mean …?": the known name closest to a mistyped one by edit distance (Levenshtein: one
// insertion, deletion or substitution each). Used for unknown CLI flags and mistyped model folders.
import { distance } from 'fastest-levenshtein';

/**
 * Most typos are one or two edits; a short name allows fewer, so that an unrelated short name (`lr`
 * for `xy`, a Hub owner for a local folder) is not offered.
 */
export function typoBudget(name: string): number {
  return name.length <= 4 ? 1 : name.length <= 8 ? 2 : 3;
}

/** The candidate nearest to `name` within its typo budget (the first one on a tie), or null. */
export function closestName(name: string, candidates: Iterable<string>): string | null {
  const max = typoBudget(name);
  let best: string | null = null;
  let bestDistance = max + 1;
  for (const c of candidates) {
    // Names are short (flags, folder names): the full distance costs nothing next to the CLI's start.
    const d = distance(name, c);
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}
