// "Did you mean …?": the known name closest to a mistyped one by edit distance (Levenshtein: one
// insertion, deletion or substitution each). Used for unknown CLI flags and mistyped model folders.

/** Edit distance between `a` and `b`, stopping early once it exceeds `max` (then returns max + 1). */
export function editDistance(a: string, b: string, max = Infinity): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      best = Math.min(best, row[j]!);
    }
    if (best > max) return max + 1;
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * Most typos are one or two edits; a short name allows fewer, so that unrelated short names
 * (`src` for `dst`, a Hub owner for a local folder) are not offered.
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
    const d = editDistance(name, c, max);
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}
