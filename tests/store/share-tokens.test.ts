// Sharing a run store with a team: a run's id opens nothing, its share token opens it read-only, the
// runs list shows a browser only its own runs, and no write token ever leaves the owner (not in a
// list, an export or an exported page). Browser requests are told from local tools by the
// Sec-Fetch-Site every browser sends (run-access.ts); these tests send it as the app's page would.
import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunStore } from '../../env-server/runs.ts';
import { runsHandler, SHARE_TOKEN_HEADER, WRITE_TOKEN_HEADER } from '../../env-server/runs-http.ts';

const tmpdirs: string[] = [];
afterEach(() => { for (const d of tmpdirs.splice(0)) fs.rmSync(d, { recursive: true, force: true }); });

/** What the app's page sends with every request (a same-origin fetch). */
const PAGE = { 'sec-fetch-site': 'same-origin' };

async function serve(store: RunStore) {
  const handle = runsHandler(store);
  const server = http.createServer(async (req, res) => {
    if (!(await handle(req, res))) { res.writeHead(404); res.end(); }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const call = async (method: string, p: string, headers: Record<string, string> = {}, body?: unknown) => {
    const r = await fetch(base + p, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, text, body: r.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : null };
  };
  return { call, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const spec = (name: string) => ({ name, config: { max_steps: 2 }, model: { name: 'tiny' }, env: { name: 'echo', task: 'echo' } });

/** One run with a step, rollouts and an adapter file, as a finished run keeps them. */
function seeded(store: RunStore, name: string) {
  const run = store.create(spec(name));
  store.appendStep(run.id, run.writeToken, { step: 0, metrics: { reward: 0.5 }, rollouts: [{ completion: 'hi' }] });
  store.putArtifacts(run.id, run.writeToken, 'adapter', [{ name: 'adapter_config.json', data: Buffer.from('{"r":4}') }]);
  store.setStatus(run.id, run.writeToken, 'finished');
  return run;
}

const readRoutes = (id: string) => [`/api/runs/${id}`, `/api/runs/${id}/rollouts?step=0`, `/api/runs/${id}/artifacts`, `/api/runs/${id}/artifacts/adapter/adapter_config.json`, `/api/runs/${id}/export`, `/api/runs/${id}/page`];

describe('share tokens', () => {
  it('opens a run to a browser only with its share token (header or ?share=) or its write token', async () => {
    const store = new RunStore(':memory:');
    const run = seeded(store, 'mine');
    const api = await serve(store);
    try {
      for (const route of readRoutes(run.id)) {
        const bare = await api.call('GET', route, PAGE);
        expect(bare.status, route).toBe(403);
        expect(bare.body.detail, route).toMatch(/only through its share link \(no share token was given\)/);
        expect((await api.call('GET', route, { ...PAGE, [SHARE_TOKEN_HEADER]: run.writeToken.slice(1) + 'x' })).body.detail, route).toMatch(/share token given does not match/);
        expect((await api.call('GET', route, { ...PAGE, [SHARE_TOKEN_HEADER]: run.shareToken })).status, route).toBe(200);
        expect((await api.call('GET', `${route}${route.includes('?') ? '&' : '?'}share=${run.shareToken}`, PAGE)).status, route).toBe(200);
        expect((await api.call('GET', route, { ...PAGE, [WRITE_TOKEN_HEADER]: run.writeToken })).status, route).toBe(200);
        // A share token opens its own run only, and never writes.
        const other = seeded(store, 'other');
        expect((await api.call('GET', route.replace(run.id, other.id), { ...PAGE, [SHARE_TOKEN_HEADER]: run.shareToken })).status, route).toBe(403);
        store.delete(other.id, other.writeToken);
      }
      expect((await api.call('POST', `/api/runs/${run.id}/status`, { ...PAGE, [WRITE_TOKEN_HEADER]: run.shareToken }, { status: 'failed' })).status).toBe(403);
      expect((await api.call('GET', `/api/runs/${run.id}`, { ...PAGE, [SHARE_TOKEN_HEADER]: run.shareToken })).body.shareToken).toBe(run.shareToken);
      expect((await api.call('GET', '/api/runs/AAAAAAAAAAAAAAAAAAAAAA', PAGE)).status).toBe(404);
      // A program on this machine (no browser headers, loopback) reads everything, as before.
      for (const route of readRoutes(run.id)) expect((await api.call('GET', route)).status, route).toBe(200);
    } finally {
      await api.close();
    }
  });

  it('lists to a browser only the runs whose write tokens it shows, and never a write token', async () => {
    const store = new RunStore(':memory:');
    const mine = [seeded(store, 'mine 1'), seeded(store, 'mine 2')];
    const theirs = seeded(store, 'theirs');
    const api = await serve(store);
    try {
      const everything = await api.call('GET', '/api/runs', PAGE);
      expect(everything.status).toBe(403);
      expect(everything.body.detail).toMatch(/POST \/api\/runs\/list/);
      expect(everything.text).not.toContain(theirs.id);
      const list = await api.call('POST', '/api/runs/list', PAGE, { writeTokens: mine.map((r) => r.writeToken) });
      expect(list.status).toBe(200);
      expect(list.body.total).toBe(2);
      const pairs = (runs: { id: string; shareToken: string }[]) => runs.map((r) => `${r.id} ${r.shareToken}`).sort();
      expect(pairs(list.body.runs)).toEqual(pairs(mine));
      expect(list.text).not.toContain(theirs.id);
      expect(list.text).not.toContain(theirs.shareToken);
      for (const r of mine) expect(list.text).not.toContain(r.writeToken);
      expect((await api.call('POST', '/api/runs/list', PAGE, { writeTokens: [mine[0].shareToken, 'guess'] })).body).toEqual({ runs: [], total: 0 });
      expect((await api.call('POST', '/api/runs/list', PAGE, { writeTokens: [mine[0].writeToken], limit: 1, offset: 1 })).body.runs).toEqual([]);
      expect((await api.call('POST', '/api/runs/list', PAGE, { writeTokens: 'all' })).body.detail).toMatch(/"writeTokens" must be an array/);
      expect((await api.call('POST', '/api/runs/list', PAGE, { writeTokens: [], limit: 0 })).body.detail).toMatch(/"limit" must be an integer from 1 to 200/);
      // The local CLI still lists every run.
      expect((await api.call('GET', '/api/runs')).body.total).toBe(3);
    } finally {
      await api.close();
    }
  });

  it('keeps write tokens (and their digests) out of the exported page and JSON', async () => {
    const store = new RunStore(':memory:');
    const run = seeded(store, 'shared');
    const api = await serve(store);
    try {
      const digest = createHash('sha256').update(run.writeToken).digest('hex');
      for (const route of [`/api/runs/${run.id}/page`, `/api/runs/${run.id}/export`]) {
        const got = await api.call('GET', route, { ...PAGE, [WRITE_TOKEN_HEADER]: run.writeToken });
        expect(got.status).toBe(200);
        expect(got.text).toContain('shared');
        for (const secret of [run.writeToken, digest, run.shareToken]) expect(got.text, route).not.toContain(secret);
      }
    } finally {
      await api.close();
    }
  });

  it('gives the runs of an older store share tokens, once, and keeps their write tokens', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-share-'));
    tmpdirs.push(dir);
    const file = path.join(dir, 'runs.db');
    // A store as the last release wrote it: schema v1, no share_token column.
    const old = new Database(file);
    old.exec(`CREATE TABLE runs (id TEXT PRIMARY KEY, write_token TEXT NOT NULL, name TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL, config TEXT NOT NULL, model TEXT NOT NULL, env TEXT NOT NULL, error TEXT)`);
    const digest = createHash('sha256').update('old-write-token').digest('hex');
    for (const id of ['oldrun1', 'oldrun2']) old.prepare("INSERT INTO runs VALUES (?, ?, 'old', 'finished', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', '{}', '{}', '{}', NULL)").run(id, digest);
    old.pragma('user_version = 1');
    old.close();
    const store = new RunStore(file);
    const tokens = ['oldrun1', 'oldrun2'].map((id) => store.authorizeRead(id, { writeToken: 'old-write-token' }));
    expect(tokens[0]).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(tokens[1]).not.toBe(tokens[0]);
    expect(store.authorizeRead('oldrun1', { shareToken: tokens[0] })).toBe(tokens[0]);
    expect(() => store.authorizeRead('oldrun1', {})).toThrow(/only through its share link/);
    store.close();
    const reopened = new RunStore(file);
    expect(reopened.shareTokenOf('oldrun1')).toBe(tokens[0]);
    expect(reopened.list({ limit: 10, offset: 0, writeTokens: ['old-write-token'] }).total).toBe(2);
    reopened.close();
  });
});
