// The owner renames and deletes a run; nobody else can (no token, another run's token, another
// origin); the rollouts of any step range are readable, with the list of steps that have them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RunStore } from '../../env-server/runs.ts';
import { runsHandler, WRITE_TOKEN_HEADER } from '../../env-server/runs-http.ts';
import { createEnvServer } from '../../env-server/server.ts';

const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true }); });

async function serve() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-admin-'));
  dirs.push(dir);
  const store = new RunStore(path.join(dir, 'runs.db'));
  // The whole server: who may write at all (Origin, Host) it decides before the run store's routes.
  const server = await createEnvServer({ host: '127.0.0.1', port: 0, envs: {}, extraHandlers: [runsHandler(store)] });
  const base = server.url;
  const call = async (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(base + p, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: r.status, body: (await r.json()) as Record<string, any> };
  };
  const close = async () => {
    await server.close();
    store.close();
  };
  return { call, close };
}

const RUN = { name: 'catch · demo', config: {}, model: { name: 'demo' }, env: { name: 'catch' } };

describe('run administration', () => {
  it('renames and deletes a run with its write token only', async () => {
    const { call, close } = await serve();
    try {
      const a = (await call('POST', '/api/runs', RUN)).body as { id: string; writeToken: string };
      const b = (await call('POST', '/api/runs', RUN)).body as { id: string; writeToken: string };
      await call('POST', `/api/runs/${a.id}/steps`, { step: 0, metrics: { reward: 1 }, rollouts: [{ group: 0 }] }, { [WRITE_TOKEN_HEADER]: a.writeToken });
      // Refused: no token, another run's token, the right token from another origin.
      for (const headers of [{}, { [WRITE_TOKEN_HEADER]: b.writeToken }] as Record<string, string>[]) {
        expect((await call('POST', `/api/runs/${a.id}/name`, { name: 'mine now' }, headers)).status).toBe(403);
        expect((await call('DELETE', `/api/runs/${a.id}`, undefined, headers)).status).toBe(403);
      }
      const foreign = { [WRITE_TOKEN_HEADER]: a.writeToken, origin: 'http://attacker.example' };
      expect((await call('POST', `/api/runs/${a.id}/name`, { name: 'x' }, foreign)).status).toBe(403);
      expect((await call('DELETE', `/api/runs/${a.id}`, undefined, foreign)).status).toBe(403);
      expect((await call('GET', `/api/runs/${a.id}`)).body.run.name).toBe('catch · demo');
      // A bad name is a 400 naming the field.
      const bad = await call('POST', `/api/runs/${a.id}/name`, { name: '  ' }, { [WRITE_TOKEN_HEADER]: a.writeToken });
      expect(bad.status).toBe(400);
      expect(bad.body.detail).toMatch(/"name" must be a string of 1 to 200 characters/);
      // The owner renames, then deletes: the run, its steps and rollouts are gone; the other run stays.
      expect((await call('POST', `/api/runs/${a.id}/name`, { name: '  first catch  ' }, { [WRITE_TOKEN_HEADER]: a.writeToken })).status).toBe(200);
      expect((await call('GET', `/api/runs/${a.id}`)).body.run.name).toBe('first catch');
      expect((await call('DELETE', `/api/runs/${a.id}`, undefined, { [WRITE_TOKEN_HEADER]: a.writeToken })).status).toBe(200);
      expect((await call('GET', `/api/runs/${a.id}`)).status).toBe(404);
      expect((await call('GET', `/api/runs/${a.id}/rollouts?last=5`)).status).toBe(404);
      expect((await call('DELETE', `/api/runs/${a.id}`, undefined, { [WRITE_TOKEN_HEADER]: a.writeToken })).status).toBe(404);
      expect((await call('GET', '/api/runs')).body.runs.map((r: { id: string }) => r.id)).toEqual([b.id]);
    } finally {
      await close();
    }
  });

  it('serves the rollouts of any step range, and names every step that has some', async () => {
    const { call, close } = await serve();
    try {
      const a = (await call('POST', '/api/runs', RUN)).body as { id: string; writeToken: string };
      for (let step = 0; step < 12; step++) {
        await call('POST', `/api/runs/${a.id}/steps`, { step, metrics: {}, rollouts: [{ group: 0, index: step }] }, { [WRITE_TOKEN_HEADER]: a.writeToken });
      }
      const early = (await call('GET', `/api/runs/${a.id}/rollouts?from=1&to=2`)).body;
      expect(early.rollouts.map((r: { step: number }) => r.step)).toEqual([1, 2]);
      expect(early.steps).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      expect((await call('GET', `/api/runs/${a.id}/rollouts?from=0&to=500`)).status).toBe(400);
    } finally {
      await close();
    }
  });
});
