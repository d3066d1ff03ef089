// Keeps the import graph honest: every relative import between our TypeScript modules — static,
// type-only, re-exports and dynamic `import()` alike — must form an acyclic graph (a circle, even a
// type-only one, means two modules that cannot be understood or moved one without the other), and
// must respect the layers: the engine knows nothing of RL, src/rl nothing of the env-server, the UI or
// the CLI, and so on up (LAYERS below).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOTS = ['src', 'workers', 'env-server', 'bench', 'tests'];
const REPO = path.resolve(import.meta.dirname, '../..');

function sourceFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sourceFiles(p);
    return /\.(ts|tsx)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** Module → the modules it imports (relative specifiers resolved to files of the graph). */
export function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
    const deps = info.importedFiles
      .map((f) => f.fileName)
      .filter((spec) => spec.startsWith('./') || spec.startsWith('../'))
      .map((spec) => path.resolve(path.dirname(file), spec))
      .filter((target) => known.has(target));
    graph.set(file, [...new Set(deps)]);
  }
  return graph;
}

/** The strongly connected components with more than one module (or a self-import): the circles. */
export function circles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** What each layer may import besides itself; src/cli, bench and tests may import any layer. */
export const LAYERS: Readonly<Record<string, readonly string[]>> = {
  'src/random.ts': [],
  'src/model': ['src/random.ts'],
  'src/engine': ['src/model', 'src/random.ts'],
  'src/openenv': [],
  // The image processor: pure functions over pixels and ids (the engine's input types only).
  'src/vision': ['src/engine'],
  'src/rl': ['src/engine', 'src/model', 'src/openenv', 'src/random.ts', 'src/vision'],
  'src/export': ['src/engine', 'src/model', 'src/rl'],
  'env-server': ['src/openenv', 'src/rl'],
  // The page takes the run store's and the worker API's types, never their code paths.
  'src/app': ['src/engine', 'src/model', 'src/openenv', 'src/rl', 'env-server'],
  workers: ['src/app', 'src/engine', 'src/export', 'src/model', 'src/openenv', 'src/rl', 'src/random.ts'],
};

/** A file's layer: `src/<folder>` (or `src/<file>`) under src, else its top folder. */
function layerOf(file: string, root: string): string {
  const [top, next] = path.relative(root, file).split(path.sep);
  return top === 'src' ? `src/${next}` : top!;
}

/** Imports that reach a layer their own layer may not import: `from → to` with the importing file. */
export function layerViolations(graph: Map<string, string[]>, root: string, layers: Readonly<Record<string, readonly string[]>> = LAYERS): string[] {
  const out: string[] = [];
  for (const [file, deps] of graph) {
    const from = layerOf(file, root);
    const allowed = layers[from];
    if (!allowed) continue;
    for (const dep of deps) {
      const to = layerOf(dep, root);
      if (to !== from && !allowed.includes(to)) out.push(`${path.relative(root, file)}: ${from} → ${to} (${path.relative(root, dep)})`);
    }
  }
  return out.sort();
}

describe('import graph', () => {
  it('finds a circle through a type-only import and a dynamic import (the detector works)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'import-cycles-'));
    try {
      fs.writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b.ts';\nexport type A = B;\n");
      fs.writeFileSync(path.join(dir, 'b.ts'), "export type B = number;\nexport async function load() { return import('./a.ts'); }\n");
      fs.writeFileSync(path.join(dir, 'c.ts'), "import { load } from './b.ts';\nexport const c = load;\n");
      const files = ['a.ts', 'b.ts', 'c.ts'].map((f) => path.join(dir, f));
      expect(circles(importGraph(files))).toEqual([[files[0], files[1]]]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has no import circles', () => {
    const files = ROOTS.flatMap((r) => sourceFiles(path.join(REPO, r)));
    expect(files.length).toBeGreaterThan(100);
    const found = circles(importGraph(files)).map((c) => c.map((f) => path.relative(REPO, f)));
    expect(found).toEqual([]);
  });

  it('finds an import that reaches up a layer (the layer check works)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'import-layers-'));
    try {
      for (const sub of ['src/rl', 'src/engine', 'env-server']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
      fs.writeFileSync(path.join(dir, 'env-server/words.ts'), 'export const w = 1;\n');
      fs.writeFileSync(path.join(dir, 'src/engine/e.ts'), 'export const e = 1;\n');
      fs.writeFileSync(path.join(dir, 'src/rl/solver.ts'), "import type { w } from '../../env-server/words.ts';\nimport { e } from '../engine/e.ts';\nexport const s = e;\n");
      const files = ['env-server/words.ts', 'src/engine/e.ts', 'src/rl/solver.ts'].map((f) => path.join(dir, f));
      expect(layerViolations(importGraph(files), dir)).toEqual(['src/rl/solver.ts: src/rl → env-server (env-server/words.ts)']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps to the layers', () => {
    const files = ROOTS.flatMap((r) => sourceFiles(path.join(REPO, r)));
    expect(layerViolations(importGraph(files), REPO)).toEqual([]);
  });
});
