// docs/design.md describes the code as it is: every repository path it names must exist, so a move or
// a deletion that leaves the page behind fails here instead of misleading the next reader.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = path.resolve(import.meta.dirname, '../..');
const TOP = ['src', 'workers', 'env-server', 'tests', 'bench', 'models', 'docs'];

/** The repository paths a text names: tokens under a top folder, trailing punctuation dropped. */
export function namedPaths(text: string): string[] {
  const re = new RegExp(`(?<![\\w./-])((?:${TOP.join('|')})/[A-Za-z0-9_./-]*)`, 'g');
  const out = new Set<string>();
  for (const m of text.matchAll(re)) out.add(m[1]!.replace(/[.,;:]+$/, ''));
  return [...out].sort();
}

describe('docs/design.md', () => {
  it('finds the paths a text names (the check works)', () => {
    expect(namedPaths('see src/rl/run.ts, workers/ and (src/rl/envs/); not foo/src/x.ts')).toEqual(['src/rl/envs/', 'src/rl/run.ts', 'workers/']);
  });

  it('names only paths that exist', () => {
    const named = namedPaths(fs.readFileSync(path.join(REPO, 'docs/design.md'), 'utf8'));
    expect(named.length).toBeGreaterThan(50);
    expect(named.filter((p) => !fs.existsSync(path.join(REPO, p)))).toEqual([]);
  });
});
