// docs/design.md describes the code as it is. Every repository path it names must exist, and the
// statements a reader acts on are checked against the code itself, so a change that makes one false
// fails here instead of misleading the next reader:
//  - the engine seam table lists exactly the calls of `Engine` (src/engine/types.ts);
//  - the layer table is the import check's rules (LAYERS in tests/unit/import-cycles.test.ts);
//  - each config key has one default and one check (src/rl/config.ts), none restated elsewhere;
//  - flags are split by src/cli/args.ts, and the only other argv readers are the scripts the page names;
//  - the CLI's command list is src/cli/main.ts's.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { CONFIG_KEYS } from '../../src/rl/config.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const TOP = ['src', 'workers', 'env-server', 'tests', 'bench', 'models', 'docs'];
const read = (rel: string) => fs.readFileSync(path.join(REPO, rel), 'utf8');
const DOC = read('docs/design.md');

/** The repository paths a text names: tokens under a top folder, trailing punctuation dropped. */
export function namedPaths(text: string): string[] {
  const re = new RegExp(`(?<![\\w./-])((?:${TOP.join('|')})/[A-Za-z0-9_./-]*)`, 'g');
  const out = new Set<string>();
  for (const m of text.matchAll(re)) out.add(m[1]!.replace(/[.,;:]+$/, ''));
  return [...out].sort();
}

/** The text of the section under `## title`, up to the next `## `. */
function section(doc: string, title: string): string {
  const start = doc.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`docs/design.md has no section '## ${title}'`);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

/** The rows of the first markdown table in `text` after its header, as cells. */
function tableRows(text: string): string[][] {
  const lines = text.split('\n').filter((l) => l.startsWith('|'));
  return lines.slice(2).map((l) => l.replace(/\\\|/g, '\u0000').split('|').slice(1, -1).map((c) => c.replace(/\u0000/g, '|').trim()));
}

const ticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** The method names of an exported interface, read from its source by the TypeScript parser. */
export function interfaceMethods(source: string, name: string): string[] {
  const file = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, true);
  const decl = file.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name);
  if (!decl) throw new Error(`no interface ${name}`);
  return decl.members.filter(ts.isMethodSignature).map((m) => m.name.getText(file)).sort();
}

/** LAYERS of the import check, evaluated from its source (importing the test file would run its tests here). */
function importCheckLayers(): Record<string, string[]> {
  const src = read('tests/unit/import-cycles.test.ts');
  const start = src.indexOf('const PRODUCTION');
  const declared = src.indexOf('export const LAYERS');
  if (start < 0 || declared < 0) throw new Error('tests/unit/import-cycles.test.ts: PRODUCTION and LAYERS not found');
  const end = src.indexOf('\n};', declared) + 3;
  const js = ts.transpileModule(src.slice(start, end), { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } }).outputText;
  const exports: { LAYERS?: Record<string, string[]> } = {};
  new Function('exports', js)(exports);
  return exports.LAYERS!;
}

function sourceFiles(dir: string): string[] {
  const abs = path.join(REPO, dir);
  if (!fs.existsSync(abs)) return [];
  return fs.readdirSync(abs, { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sourceFiles(rel);
    return /\.(ts|tsx|js|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** `config.KEY ?? <literal>` outside config.ts: a second default for a config key. */
export function restatedDefaults(files: Record<string, string>, keys: readonly string[]): string[] {
  const re = new RegExp(`\\b(${keys.join('|')})\\s*\\?\\?\\s*(-?\\d|'|"|\\[|true\\b|false\\b)`, 'g');
  return Object.entries(files).flatMap(([file, text]) => [...text.matchAll(re)].map((m) => `${file}: ${m[1]} ?? ${m[2]}…`));
}

/** Thrown range checks naming a config key (`KEY must be …`) outside config.ts: a second validation. */
export function restatedChecks(files: Record<string, string>, keys: readonly string[]): string[] {
  const re = new RegExp(`[\`'"](${keys.join('|')}):? must be`, 'g');
  return Object.entries(files).flatMap(([file, text]) => [...text.matchAll(re)].map((m) => `${file}: ${m[1]} must be…`));
}

/** Files that read argv themselves: util.parseArgs imported, or process.argv indexed, sliced or searched. */
export function argvReaders(files: Record<string, string>): string[] {
  const re = /import\s*\{[^}]*\bparseArgs\b[^}]*\}\s*from\s*'(node:)?util'|process\.argv\.(slice|indexOf)\(|process\.argv\[(?!1\])/;
  return Object.entries(files).filter(([, text]) => re.test(text)).map(([file]) => file).sort();
}

const texts = (dirs: string[], except: (f: string) => boolean = () => false) =>
  Object.fromEntries(dirs.flatMap(sourceFiles).filter((f) => !except(f)).map((f) => [f, read(f)]));

describe('docs/design.md', () => {
  it('finds the paths a text names (the check works)', () => {
    expect(namedPaths('see src/rl/run.ts, workers/ and (src/rl/envs/); not foo/src/x.ts')).toEqual(['src/rl/envs/', 'src/rl/run.ts', 'workers/']);
  });

  it('names only paths that exist', () => {
    const named = namedPaths(DOC);
    expect(named.length).toBeGreaterThan(50);
    expect(named.filter((p) => !fs.existsSync(path.join(REPO, p)))).toEqual([]);
  });

  it('the engine seam table lists every call of Engine, and nothing else', () => {
    expect(interfaceMethods('export interface Engine { readonly config: number; generate(): void; openDecode(o: number): void }', 'Engine')).toEqual(['generate', 'openDecode']);
    const listed = tableRows(section(DOC, 'The engine seam')).flatMap((row) => ticked(row[0]!)).sort();
    expect(listed).toEqual(interfaceMethods(read('src/engine/types.ts'), 'Engine'));
  });

  it('the layer table is the import check\'s rules', () => {
    const rows = tableRows(section(DOC, 'Layers'));
    const documented = Object.fromEntries(rows.map((row) => [ticked(row[0]!)[0]!, ticked(row[1]!).sort()]));
    const rules = Object.fromEntries(Object.entries(importCheckLayers()).map(([layer, allowed]) => [layer, [...allowed].sort()]));
    expect(Object.keys(rules).length).toBeGreaterThan(10);
    expect(documented).toEqual(rules);
  });

  it('each config key has one default and one check, in src/rl/config.ts', () => {
    const keys = Object.keys(CONFIG_KEYS);
    // The checks work.
    expect(restatedDefaults({ 'x.ts': 'const t = config.stubborn_threshold ?? 2; const e = c.epsilon_high ?? c.epsilon;' }, keys)).toEqual(['x.ts: stubborn_threshold ?? 2…']);
    expect(restatedChecks({ 'x.ts': 'throw new Error(`max_concurrent_envs must be an integer ≥ 1`)' }, keys)).toEqual(['x.ts: max_concurrent_envs must be…']);
    // PEFT's adapter_config.json has its own lora_alpha, with PEFT's default.
    const code = texts(['src', 'workers'], (f) => f === 'src/rl/config.ts' || f === 'src/engine/peft-adapter.ts');
    expect(restatedDefaults(code, keys)).toEqual([]);
    expect(restatedChecks(texts(['src/rl', 'src/app', 'workers'], (f) => f === 'src/rl/config.ts'), keys)).toEqual([]);
    expect(section(DOC, 'Presets and defaults')).toMatch(/one default, in src\/rl\/config\.ts/);
  });

  it('flags are split in src/cli/args.ts; the only other argv readers are the scripts it names', () => {
    expect(argvReaders({ 'a.ts': "import { parseArgs } from 'node:util';", 'b.ts': 'const i = process.argv.indexOf("--out");', 'c.ts': 'if (x === process.argv[1]) {}' })).toEqual(['a.ts', 'b.ts']);
    const sentence = /splits its flags[^]*?\.\s/.exec(section(DOC, 'Modules (one job each)'))?.[0] ?? '';
    const named = namedPaths(sentence).filter((p) => p.startsWith('bench/') || p.startsWith('src/'));
    expect(named).toContain('src/cli/args.ts');
    expect(argvReaders(texts(['src', 'bench', 'workers', 'env-server']))).toEqual(named.sort());
  });

  it('lists the commands of src/cli/main.ts', () => {
    const main = read('src/cli/main.ts');
    const table = main.slice(main.indexOf('const COMMANDS'), main.indexOf('\n};', main.indexOf('const COMMANDS')));
    const commands = [...table.matchAll(/^\s+'?([a-z-]+)'?: \{ module:/gm)].map((m) => m[1]!).sort();
    expect(commands.length).toBeGreaterThan(5);
    const bullet = /\n- \*\*src\/cli\*\* —[^]*?commands: ([^]*?)\.\s/.exec(section(DOC, 'Modules (one job each)'))?.[1] ?? '';
    expect(ticked(bullet).map((c) => c.split(' ')[0]).sort()).toEqual(commands);
  });
});
