// A run's environment class in the run store (env.envClass, env-server/run-env-class.ts): kept with the
// run, carried through export and import, bounded as the trainer bounds a class's text, and anything
// else refused with the reason.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RunStore } from '../../env-server/runs.ts';
import { envClassProblem, MAX_STORED_CLASS_TEXT } from '../../env-server/run-env-class.ts';
import { MAX_CLASS_TEXT } from '../../src/rl/tasks/env-class.ts';

const ECHO = fs.readFileSync(new URL('../../examples/echo.mjs', import.meta.url), 'utf8');
const SOURCE = 'your environment';
const tmpdirs: string[] = [];
afterEach(() => { for (const d of tmpdirs.splice(0)) fs.rmSync(d, { recursive: true, force: true }); });
function store(): RunStore {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-store-'));
  tmpdirs.push(dir);
  return new RunStore(path.join(dir, 'runs.db'));
}

describe('the run store keeps a run’s environment class', () => {
  it('keeps it with the run, and an export imported elsewhere carries it', () => {
    const a = store();
    const b = store();
    try {
      const env = { name: 'EchoToolEnv', task: 'env-class', envClass: { source: SOURCE, text: ECHO } };
      const { id } = a.create({ config: {}, model: { name: 'demo' }, env });
      expect(a.get(id).env).toEqual(env);
      const imported = b.import(a.export(id));
      expect(b.get(imported.id).env).toEqual(env);
    } finally {
      a.close();
      b.close();
    }
  });

  it('refuses more text than a run keeps, on create and on import', () => {
    const s = store();
    try {
      const env = { name: 'Big', task: 'env-class', envClass: { source: SOURCE, text: 'x'.repeat(MAX_CLASS_TEXT + 1) } };
      expect(() => s.create({ config: {}, model: {}, env })).toThrow(/65537 characters long; a run keeps at most 65536/);
      const { id } = s.create({ config: {}, model: {}, env: { name: 'Small', task: 'env-class', envClass: { source: SOURCE, text: ECHO } } });
      const exported = s.export(id);
      (exported.run.env as { envClass: { text: string } }).envClass.text = 'x'.repeat(MAX_CLASS_TEXT + 1);
      expect(() => s.import(exported)).toThrow(/a run keeps at most 65536/);
    } finally {
      s.close();
    }
  });
  it('bounds it as the trainer does', () => {
    expect(MAX_STORED_CLASS_TEXT).toBe(MAX_CLASS_TEXT);
  });

  it('takes {source, text} and refuses anything else with a reason', () => {
    expect(envClassProblem({ name: 'catch' })).toBeNull();
    expect(envClassProblem({ envClass: { source: SOURCE, text: ECHO } })).toBeNull();
    expect(envClassProblem({ envClass: 'x' })).toMatch(/must be an object/);
    expect(envClassProblem({ envClass: { source: SOURCE } })).toMatch(/text" must be the module's text/);
    expect(envClassProblem({ envClass: { source: SOURCE, text: 'x'.repeat(MAX_CLASS_TEXT + 1) } })).toMatch(/65537 characters long; a run keeps at most 65536/);
    expect(envClassProblem({ envClass: { source: 5, text: '' } })).toMatch(/source" must be a string/);
    expect(envClassProblem({ envClass: { source: SOURCE, text: '', run: true } })).toMatch(/not run/);
  });
});
