import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunStore } from '../../env-server/runs.ts';
import { runsHandler, WRITE_TOKEN_HEADER } from '../../env-server/runs-http.ts';

const tmpdirs: string[] = [];
function tmpDb(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-store-'));
  tmpdirs.push(dir);
  return path.join(dir, 'runs.db');
}
afterEach(() => { for (const d of tmpdirs.splice(0)) fs.rmSync(d, { recursive: true, force: true }); });

async function serve(store: RunStore) {
  const handle = runsHandler(store);
  const server = http.createServer(async (req, res) => {
    if (!(await handle(req, res))) { res.writeHead(404); res.end(); }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  const base = `http://127.0.0.1:${port}`;
  const call = async (method: string, p: string, body?: unknown, token?: string) => {
    const r = await fetch(base + p, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { [WRITE_TOKEN_HEADER]: token } : {}) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() as any };
  };
  return { call, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const run = { name: 'catch', config: { num_generations: 4, learning_rate: 1e-5 }, model: { id: 'tiny' }, env: { name: 'catch' } };

describe('run store', () => {
  it('creates a run with an unguessable id and keeps metrics and rollouts in order', () => {
    const store = new RunStore(tmpDb());
    const { id, writeToken } = store.create(run);
    expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(writeToken).not.toBe(id);
    store.appendStep(id, writeToken, { step: 1, metrics: { reward: 0.5, kl: NaN }, rollouts: [{ text: 'a', advantage: 1 }] });
    store.appendStep(id, writeToken, { step: 0, metrics: { reward: 0.25 } });
    expect(store.steps(id)).toEqual([{ step: 0, metrics: { reward: 0.25 } }, { step: 1, metrics: { reward: 0.5, kl: null } }]);
    expect(store.rollouts(id, { step: 1 })).toEqual([{ step: 1, index: 0, data: { text: 'a', advantage: 1 } }]);
    expect(store.get(id).status).toBe('running');
    expect(store.get(id).lastStep).toBe(1);
    store.close();
  });

  it('refuses writes without the write token and names unknown runs', () => {
    const store = new RunStore(':memory:');
    const { id } = store.create(run);
    expect(() => store.appendStep(id, 'nope', { step: 0, metrics: {} })).toThrow(/write token/);
    expect(() => store.get('does-not-exist')).toThrow(/Run not found: does-not-exist/);
    expect(() => store.appendStep(id, undefined, { step: 0, metrics: {} })).toThrow(/read-only/);
  });

  it('survives a reload mid-run: a second store on the same file sees the steps and continues', () => {
    const file = tmpDb();
    const a = new RunStore(file);
    const { id, writeToken } = a.create(run);
    a.appendStep(id, writeToken, { step: 0, metrics: { reward: 0 } });
    a.close();
    const b = new RunStore(file);
    b.appendStep(id, writeToken, { step: 1, metrics: { reward: 1 } });
    // A resumed tab re-sends its last step: it replaces, never duplicates.
    b.appendStep(id, writeToken, { step: 1, metrics: { reward: 0.9 } });
    expect(b.steps(id).map((s) => s.metrics.reward)).toEqual([0, 0.9]);
    b.close();
  });

  it('serializes concurrent writers from two processes-worth of connections on one file', async () => {
    const file = tmpDb();
    const stores = [new RunStore(file), new RunStore(file)];
    const { id, writeToken } = stores[0].create(run);
    await Promise.all(Array.from({ length: 200 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i % 7));
      stores[i % 2].appendStep(id, writeToken, { step: i, metrics: { reward: i / 200 }, rollouts: [{ i }] });
    }));
    expect(stores[1].steps(id).map((s) => s.step)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(stores[0].rollouts(id, { lastSteps: 3 }).map((r) => r.step)).toEqual([197, 198, 199]);
    stores.forEach((s) => s.close());
  });

  it('exports and imports a run; malformed imports are rejected with the reason', () => {
    const store = new RunStore(':memory:');
    const { id, writeToken } = store.create(run);
    store.appendStep(id, writeToken, { step: 0, metrics: { reward: 0.1 }, rollouts: [{ c: 1 }, { c: 2 }] });
    store.setStatus(id, writeToken, 'finished');
    const exported = JSON.parse(JSON.stringify(store.export(id)));
    const copy = store.import(exported);
    expect(copy.id).not.toBe(id);
    expect(store.steps(copy.id)).toEqual(store.steps(id));
    expect(store.rollouts(copy.id, { step: 0 }).map((r) => r.data)).toEqual([{ c: 1 }, { c: 2 }]);
    expect(store.get(copy.id).status).toBe('finished');
    expect(() => store.import({ format: 'other' })).toThrow(/"format" must be "webgrpo-run"/);
    expect(() => store.import({ ...exported, steps: [{ step: 'x', metrics: {} }] })).toThrow(/steps\[0\]/);
    expect(() => store.import([1, 2])).toThrow(/expected a JSON object/);
    expect(() => store.setStatus(id, writeToken, 'exploded' as never)).toThrow(/Unknown status 'exploded'/);
  });
});

describe('run store HTTP API', () => {
  it('creates, appends, reads as a local tool, exports, imports, and 404s unknown ids', async () => {
    const store = new RunStore(':memory:');
    const api = await serve(store);
    try {
      const created = await api.call('POST', '/api/runs', run);
      expect(created.status).toBe(201);
      const { id, writeToken, shareToken, shareUrl } = created.body;
      expect(shareUrl).toBe(`/#/runs/${id}?share=${shareToken}`);
      expect(shareToken).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(shareToken).not.toBe(writeToken);
      expect((await api.call('POST', `/api/runs/${id}/steps`, { step: 0, metrics: { reward: 1 } })).status).toBe(403);
      expect((await api.call('POST', `/api/runs/${id}/steps`, { step: 0, metrics: { reward: 1 }, rollouts: [{ t: 'x' }] }, writeToken)).status).toBe(200);
      expect((await api.call('POST', `/api/runs/${id}/steps`, { step: 1, metrics: { reward: 'high' } }, writeToken)).body.detail).toMatch(/metric 'reward' must be a number/);
      const read = await api.call('GET', `/api/runs/${id}`);
      expect(read.body.run.config).toEqual(run.config);
      expect(read.body.steps).toEqual([{ step: 0, metrics: { reward: 1 } }]);
      expect((await api.call('GET', `/api/runs/${id}?after=0`)).body.steps).toEqual([]);
      expect((await api.call('GET', `/api/runs/${id}/rollouts?step=0`)).body.rollouts[0].data).toEqual({ t: 'x' });
      const exported = await api.call('GET', `/api/runs/${id}/export`);
      expect(exported.body.format).toBe('webgrpo-run');
      const imported = await api.call('POST', '/api/runs/import', exported.body);
      expect(imported.status).toBe(201);
      const bad = await api.call('POST', '/api/runs/import', '{"format": "webgrpo-run", "version": 2}');
      expect(bad.status).toBe(400);
      expect(bad.body.detail).toMatch(/unsupported "version" 2/);
      expect((await api.call('POST', '/api/runs/import', 'not json')).body.detail).toMatch(/not valid JSON/);
      const missing = await api.call('GET', '/api/runs/AAAAAAAAAAAAAAAAAAAAAA');
      expect(missing.status).toBe(404);
      expect(missing.body.detail).toMatch(/Run not found/);
    } finally {
      await api.close();
    }
  });
});
