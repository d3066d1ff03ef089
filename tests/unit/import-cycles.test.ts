// Keeps the import graph honest: every relative import between our modules — static, type-only,
// re-exports and dynamic `import()` alike — must form an acyclic graph (a circle, even a type-only
// one, means two modules that cannot be understood or moved one without the other), and must respect
// the layers: the engine knows nothing of RL, src/rl nothing of the env-server, the UI or the CLI,
// the production code nothing of bench/, and nothing outside tests/ anything of tests/ (LAYERS below).
// Every top-level folder with code has a rule; a new one fails here until it gets one.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const REPO = path.resolve(import.meta.dirname, '../..');
/** Top-level folders that hold no code of ours: dependencies, build and test output, checkpoints, prose. */
const NOT_CODE = new Set(['node_modules', 'dist', 'test-results', 'tmp', 'models', 'docs']);
/** Every other top-level folder (dot folders aside) is scanned, so a new one cannot slip past the rules. */
const ROOTS = fs.readdirSync(REPO, { withFileTypes: true })
  .filter((e) => e.isDirectory() && !e.name.startsWith('.') && !NOT_CODE.has(e.name))
  .map((e) => e.name);

function sourceFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sourceFiles(p);
    return /\.(ts|tsx|js|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
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

/** The code that ships: everything but the benchmarks and the tests. */
const PRODUCTION = [
  'src/random.ts', 'src/pyrepr.ts', 'src/model', 'src/engine', 'src/vision', 'src/openenv', 'src/rl', 'src/export',
  'env-server/runs-wire.ts', 'env-server', 'workers/api.ts', 'workers', 'src/app', 'src/cli', 'bin',
] as const;

/**
 * What each layer may import besides itself, bottom to top. A key is a folder (`src/<folder>` under
 * src, else a top-level folder), a file of src/, or a contract module: a file that is its own layer
 * so both sides of a boundary can import it without importing each other.
 */
export const LAYERS: Readonly<Record<string, readonly string[]>> = {
  // Leaves: pure functions any layer may use (seeded randomness; Python's str/repr, for tool messages and axtree text).
  'src/random.ts': [],
  'src/pyrepr.ts': [],
  'src/model': ['src/random.ts'],
  'src/engine': ['src/model', 'src/random.ts'],
  // The image processor: pure functions over pixels and ids (the engine's input types only).
  'src/vision': ['src/engine'],
  // The OpenEnv wire and the built-in envs' shared rules: what the trainer and the env-server both speak.
  'src/openenv': [],
  'src/rl': ['src/engine', 'src/model', 'src/openenv', 'src/pyrepr.ts', 'src/random.ts', 'src/vision'],
  // The exporter takes a trainer checkpoint's shape, not src/rl's type (trained-weights.ts).
  'src/export': ['src/engine', 'src/model'],
  // The run store's wire types: the store and the page both import them, the page never the store.
  'env-server/runs-wire.ts': [],
  'env-server': ['env-server/runs-wire.ts', 'src/openenv', 'src/pyrepr.ts'],
  // The comlink contract between the page and the trainer worker (types only).
  'workers/api.ts': ['src/engine', 'src/model', 'src/rl'],
  workers: ['workers/api.ts', 'src/engine', 'src/export', 'src/model', 'src/openenv', 'src/pyrepr.ts', 'src/random.ts', 'src/rl', 'src/vision'],
  // The page takes the run store's and the worker API's types, never their code paths.
  'src/app': ['env-server/runs-wire.ts', 'workers/api.ts', 'src/engine', 'src/model', 'src/openenv', 'src/rl'],
  // The production CLI: every layer below it but the browser's (the page, the worker); `bench` loads bench/ by path.
  'src/cli': ['env-server', 'env-server/runs-wire.ts', 'src/engine', 'src/export', 'src/model', 'src/openenv', 'src/pyrepr.ts', 'src/random.ts', 'src/rl', 'src/vision'],
  // The `webgrpo` launcher: it loads src/cli/main.ts (by path, through tsx).
  bin: ['src/cli'],
  // The example environment classes: user code, which reaches the trainer only through `webgrpo/openenv`.
  examples: ['src/openenv'],
  // The benchmarks (and the browser harness the tests share with them) may use any production code.
  bench: PRODUCTION.filter((l) => l !== 'bin'),
  // Fixture makers (scripts/openenv-capture/): as the benchmarks, they drive production code from outside.
  scripts: PRODUCTION.filter((l) => l !== 'bin'),
  // The tests may import anything; nothing imports them.
  tests: [...PRODUCTION, 'bench'],
};

/** A file's layer: a LAYERS key naming the file itself, else `src/<folder>` (or `src/<file>`) under src, else its top folder. */
function layerOf(file: string, root: string, layers: Readonly<Record<string, readonly string[]>>): string {
  const rel = path.relative(root, file).split(path.sep).join('/');
  if (Object.hasOwn(layers, rel)) return rel;
  const [top, next] = rel.split('/');
  return top === 'src' ? `src/${next}` : top!;
}

/** Imports that reach a layer their own layer may not import (`from → to` with the importing file), and files of a layer with no rule. */
export function layerViolations(graph: Map<string, string[]>, root: string, layers: Readonly<Record<string, readonly string[]>> = LAYERS): string[] {
  const out: string[] = [];
  for (const [file, deps] of graph) {
    const from = layerOf(file, root, layers);
    const allowed = layers[from];
    if (!allowed) {
      out.push(`${path.relative(root, file)}: no rule for layer ${from}`);
      continue;
    }
    for (const dep of deps) {
      const to = layerOf(dep, root, layers);
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

  it('tells a contract module from the rest of its folder, and flags a folder with no rule (the check works)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'import-contracts-'));
    try {
      for (const sub of ['src/app', 'workers', 'scratch']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
      fs.writeFileSync(path.join(dir, 'workers/api.ts'), 'export type Api = number;\n');
      fs.writeFileSync(path.join(dir, 'workers/service.ts'), 'export const service = 1;\n');
      fs.writeFileSync(path.join(dir, 'src/app/client.ts'), "import type { Api } from '../../workers/api.ts';\nimport { service } from '../../workers/service.ts';\nexport const c: Api = service;\n");
      fs.writeFileSync(path.join(dir, 'scratch/run.ts'), "import { service } from '../workers/service.ts';\nexport const r = service;\n");
      const files = ['workers/api.ts', 'workers/service.ts', 'src/app/client.ts', 'scratch/run.ts'].map((f) => path.join(dir, f));
      expect(layerViolations(importGraph(files), dir)).toEqual([
        'scratch/run.ts: no rule for layer scratch',
        'src/app/client.ts: src/app → workers (workers/service.ts)',
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps to the layers', () => {
    const files = ROOTS.flatMap((r) => sourceFiles(path.join(REPO, r)));
    expect(ROOTS).toEqual(expect.arrayContaining(['bench', 'bin', 'env-server', 'src', 'tests', 'workers']));
    expect(layerViolations(importGraph(files), REPO)).toEqual([]);
  });

  it('lets nothing outside tests/ import tests/', () => {
    expect(Object.entries(LAYERS).filter(([layer, allowed]) => layer !== 'tests' && allowed.includes('tests'))).toEqual([]);
    const files = ROOTS.flatMap((r) => sourceFiles(path.join(REPO, r)));
    const inTests = (f: string) => path.relative(REPO, f).startsWith(`tests${path.sep}`);
    const intoTests = [...importGraph(files)].flatMap(([file, deps]) =>
      inTests(file) ? [] : deps.filter(inTests).map((dep) => `${path.relative(REPO, file)} → ${path.relative(REPO, dep)}`));
    expect(intoTests).toEqual([]);
  });
});
