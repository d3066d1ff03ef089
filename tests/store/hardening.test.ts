// The run store's defences: tokens kept only as digests (including stores written before that), the
// database file's mode, duplicate imported steps, and imports through the worker thread. Who may
// write at all (Host, Origin): tests/server/origin-policy.test.ts.
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runsHandler } from '../../env-server/runs-http.ts';
import { MAX_METRIC_NAME, MAX_METRICS_PER_STEP, RunStore } from '../../env-server/runs.ts';

const tmpdirs: string[] = [];
function tmpDb(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-store-'));
  tmpdirs.push(dir);
  return path.join(dir, 'runs.db');
}
afterEach(() => {
  for (const d of tmpdirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const run = { name: 'r', config: {}, model: {}, env: {} };

describe('tokens and the database file', () => {
  it('keeps only a SHA-256 of the write token and still accepts the token', () => {
    const file = tmpDb();
    const store = new RunStore(file);
    const { id, writeToken } = store.create(run);
    store.appendStep(id, writeToken, { step: 0, metrics: { reward: 1 } });
    expect(() => store.appendStep(id, writeToken.slice(0, -1) + (writeToken.endsWith('A') ? 'B' : 'A'), { step: 1, metrics: {} })).toThrow(/write token/);
    expect(() => store.appendStep(id, '', { step: 1, metrics: {} })).toThrow(/write token/);
    store.close();
    const db = new Database(file, { readonly: true });
    const kept = (db.prepare('SELECT write_token FROM runs WHERE id = ?').get(id) as { write_token: string }).write_token;
    db.close();
    expect(kept).toBe(createHash('sha256').update(writeToken).digest('hex'));
  });

  it('hashes the plain tokens of a store written by an older version, once', () => {
    const file = tmpDb();
    const old = new RunStore(file);
    const { id } = old.create(run);
    old.close();
    // What an older version wrote: the token itself, user_version 0.
    const db = new Database(file);
    db.prepare('UPDATE runs SET write_token = ? WHERE id = ?').run('plain-old-token-abcdefg', id);
    db.pragma('user_version = 0');
    db.close();
    const store = new RunStore(file);
    store.appendStep(id, 'plain-old-token-abcdefg', { step: 0, metrics: {} });
    expect(() => store.appendStep(id, createHash('sha256').update('plain-old-token-abcdefg').digest('hex'), { step: 1, metrics: {} })).toThrow(/write token/);
    store.close();
  });

  it('creates runs.db (and its folder) for its owner only, and tightens an existing one', () => {
    const file = path.join(tmpDb().replace(/runs\.db$/, ''), 'nested', 'runs.db');
    new RunStore(file).close();
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    fs.chmodSync(file, 0o644);
    new RunStore(file).close();
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });
});

describe('imports', () => {
  it('refuse a file whose steps repeat an id (it would drop that step\'s rollouts)', () => {
    const store = new RunStore(':memory:');
    const { id, writeToken } = store.create(run);
    store.appendStep(id, writeToken, { step: 0, metrics: {}, rollouts: [{ a: 1 }] });
    const exported = store.export(id);
    expect(() => store.import({ ...exported, steps: [...exported.steps, { step: 0, metrics: { reward: 2 } }] })).toThrow('Not a webgrpo run export: steps[1] repeats step 0');
    store.close();
  });

  it('run in a worker for a file-backed store, with the same answers', async () => {
    const store = new RunStore(tmpDb());
    const handle = runsHandler(store, { maxImportBytes: 4096 });
    const server = http.createServer((rq, rs) => void handle(rq, rs));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const post = (body: string) =>
      fetch(`${base}/api/runs/import`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    try {
      const { id, writeToken } = store.create(run);
      store.appendStep(id, writeToken, { step: 0, metrics: { reward: 0.5 }, rollouts: [{ text: 'hi' }] });
      const ok = await post(JSON.stringify(store.export(id)));
      expect(ok.status).toBe(201);
      expect(store.rollouts(ok.body.id, { step: 0 }).map((r) => r.data)).toEqual([{ text: 'hi' }]);
      expect(await post('{"format":"webgrpo-run","version":7}')).toEqual({ status: 400, body: { detail: 'Not a webgrpo run export: unsupported "version" 7 (this server reads version 1)' } });
      expect((await post('{"format":')).body.detail).toMatch(/^Request body is not valid JSON/);
      expect(await post(JSON.stringify({ pad: 'x'.repeat(5000) }))).toEqual({ status: 413, body: { detail: 'Request body larger than 4096 bytes (--max-import-bytes)' } });
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
      store.close();
    }
  }, 30_000);
});

describe('metrics per step', () => {
  it('are capped in count and name length, also across merges (a step cannot grow without bound)', () => {
    const store = new RunStore(tmpDb());
    const { id, writeToken } = store.create(run);
    const many = (n: number, prefix: string) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i]));
    expect(() => store.appendStep(id, writeToken, { step: 0, metrics: many(MAX_METRICS_PER_STEP + 1, 'm') })).toThrow(/1025 metrics, over the run store's limit of 1024/);
    expect(() => store.appendStep(id, writeToken, { step: 0, metrics: { ['x'.repeat(MAX_METRIC_NAME + 1)]: 1 } })).toThrow(/metric name of 201 characters/);
    store.appendStep(id, writeToken, { step: 0, metrics: many(MAX_METRICS_PER_STEP - 10, 'm') });
    // Merging keys the step already has replaces them; new keys count against the cap.
    store.mergeStepMetrics(id, writeToken, { step: 0, metrics: many(MAX_METRICS_PER_STEP - 10, 'm') });
    store.mergeStepMetrics(id, writeToken, { step: 0, metrics: many(10, 'e') });
    expect(() => store.mergeStepMetrics(id, writeToken, { step: 0, metrics: { one_more: 1 } })).toThrow(/1025 metrics/);
    expect(Object.keys(store.steps(id)[0]!.metrics)).toHaveLength(MAX_METRICS_PER_STEP);
    store.close();
  });
});
