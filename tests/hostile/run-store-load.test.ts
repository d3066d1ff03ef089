// Run store work that can be large, against `webgrpo start` processes: a 300,000-step import while
// three clients read a 200,000-rollout step (the server must keep answering: the issue's own time
// bound), SIGTERM in the middle of a 50 MiB import, the rollout caps, the in-flight body budget,
// run names on import, the runs list behind an --allow-host name, and HTTP /mcp sessions.
import Database from 'better-sqlite3';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStore } from '../../env-server/runs.ts';
import { fakeDist, normalEchoSession, settles, startServerProcess, tempDir, type ServerProcess } from './server-process.ts';

const MiB = 1024 * 1024;
let work: ReturnType<typeof tempDir>;

beforeAll(() => {
  work = tempDir('webgrpo-store-load-');
  fakeDist(`${work.dir}/dist`, 0, 0);
});
afterAll(() => work.cleanup());

const startArgs = (tag: string) => ['--data', path.join(work.dir, tag), '--dist', path.join(work.dir, 'dist')];
const json = { 'content-type': 'application/json' };

/** An export of `steps` empty steps (about 30 bytes each). */
function exportOf(steps: number, extra: { name?: unknown; rollouts?: unknown[] } = {}): string {
  return JSON.stringify({
    format: 'webgrpo-run',
    version: 1,
    run: { name: extra.name ?? 'imported', config: {}, model: {}, env: {}, status: 'finished' },
    steps: Array.from({ length: steps }, (_, step) => ({ step, metrics: {} })),
    rollouts: extra.rollouts ?? [],
  });
}

/** Milliseconds a request took (a failure counts as forever). */
async function timed(request: () => Promise<Response>): Promise<{ ms: number; status: number }> {
  const t = performance.now();
  try {
    const r = await request();
    await r.arrayBuffer();
    return { ms: performance.now() - t, status: r.status };
  } catch {
    return { ms: Infinity, status: 0 };
  }
}

describe('a big import and big reads at once', () => {
  let server: ServerProcess;
  let big: { id: string; shareToken: string };
  let live: { id: string; writeToken: string };

  beforeAll(async () => {
    // The 200,000-rollout step is written straight into the file, as a store from before the caps kept it.
    const file = path.join(work.dir, 'load', 'runs.db');
    const seed = new RunStore(file);
    big = seed.create({ name: 'big step', config: {}, model: {}, env: {} });
    live = seed.create({ name: 'live', config: {}, model: {}, env: {} });
    seed.close();
    const db = new Database(file);
    const ins = db.prepare("INSERT INTO rollouts (run_id, step, idx, data) VALUES (?, 0, ?, '{\"reward\":1}')");
    db.transaction(() => {
      db.prepare("INSERT INTO steps (run_id, step, metrics) VALUES (?, 0, '{}')").run(big.id);
      for (let i = 0; i < 200_000; i++) ins.run(big.id, i);
    })();
    db.close();
    server = await startServerProcess('start', startArgs('load'));
  }, 120_000);
  afterAll(() => server.stop());

  it('keeps /health under 2 s and a live run writing while one client imports 300,000 steps and three read the step', async () => {
    // Built before the clock starts: the test's own thread must not stall its probes.
    const body = exportOf(300_000);
    let done = false;
    const health: number[] = [];
    const writes: number[] = [];
    const probes = [
      (async () => {
        while (!done) {
          health.push((await timed(() => fetch(`${server.url}/health`))).ms);
          await new Promise((r) => setTimeout(r, 100));
        }
      })(),
      (async () => {
        for (let step = 0; !done; step++) {
          const record = JSON.stringify({ step, metrics: { reward: 1 } });
          writes.push((await timed(() => fetch(`${server.url}/api/runs/${live.id}/steps`, { method: 'POST', headers: { ...json, 'x-webgrpo-write-token': live.writeToken }, body: record }))).status);
          await new Promise((r) => setTimeout(r, 200));
        }
      })(),
      ...['rollouts?step=0', 'page', 'export'].map(async (route) => {
        while (!done) await timed(() => fetch(`${server.url}/api/runs/${big.id}/${route}${route.includes('?') ? '&' : '?'}share=${big.shareToken}`));
      }),
    ];
    const imported = await timed(() => fetch(`${server.url}/api/runs/import`, { method: 'POST', headers: json, body }));
    done = true;
    await Promise.all(probes);
    expect(imported.status).toBe(201);
    expect(Math.max(...health)).toBeLessThan(2000);
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.every((s) => s === 200)).toBe(true);
    expect(server.exited()).toBeNull();
  }, 600_000);

  it('pages the rollouts of a big step and keeps the exported page small', async () => {
    const first = (await (await fetch(`${server.url}/api/runs/${big.id}/rollouts?step=0`)).json()) as { rollouts: unknown[]; next: number | null };
    expect(first.rollouts).toHaveLength(1000);
    expect(first.next).toBe(1000);
    const last = (await (await fetch(`${server.url}/api/runs/${big.id}/rollouts?step=0&offset=199500`)).json()) as { rollouts: { index: number }[]; next: number | null };
    expect(last.rollouts.map((r) => r.index)).toEqual(Array.from({ length: 500 }, (_, i) => 199_500 + i));
    expect(last.next).toBeNull();
    const page = await (await fetch(`${server.url}/api/runs/${big.id}/page`)).text();
    expect(page.length).toBeLessThan(100_000);
    expect(page).toContain('step 1 kept 200000 rollouts; the first 64 are shown');
    const exported = (await (await fetch(`${server.url}/api/runs/${big.id}/export`)).json()) as { rollouts: { index: number }[] };
    expect(exported.rollouts).toHaveLength(200_000);
    expect(exported.rollouts[199_999].index).toBe(199_999);
  }, 120_000);
});

/** Whether an import has written steps into the store at `file` (read through a read-only connection of its own). */
function importWriting(file: string): boolean {
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      return (db.prepare('SELECT EXISTS (SELECT 1 FROM steps) AS any').get() as { any: number }).any === 1;
    } finally {
      db.close();
    }
  } catch {
    return false; // not created yet, or busy: asked again
  }
}

describe('SIGTERM in the middle of a 50 MiB import', () => {
  it('stops the server within seconds, and the import leaves nothing behind', async () => {
    // Over 50 MiB: steps with a few metrics each (about 80 bytes a step).
    const metrics = { reward: 0.5, loss: 0.25, kl: 0.125, entropy: 1.5 };
    const body = JSON.stringify({ format: 'webgrpo-run', version: 1, run: { name: 'big', config: {}, model: {}, env: {} }, steps: Array.from({ length: 700_000 }, (_, step) => ({ step, metrics })), rollouts: [] });
    expect(body.length).toBeGreaterThan(50 * MiB);
    const server = await startServerProcess('start', startArgs('sigterm'));
    let stoppedAfter = Infinity;
    const importing = fetch(`${server.url}/api/runs/import`, { method: 'POST', headers: json, body }).catch(() => null);
    try {
      // Until the worker is writing (its first rows are in the store): the body is in, then parsing and
      // checking take a few seconds, and the writing seconds more (~10 s here). Not a fixed wait: on a
      // faster machine the import could be over before it, and there would be nothing to stop.
      await expect.poll(() => importWriting(path.join(work.dir, 'sigterm', 'runs.db')), { timeout: 120_000, interval: 50 }).toBe(true);
      const gone = new Promise<number>((resolve) => server.proc.once('exit', () => resolve(performance.now())));
      const signalled = performance.now();
      server.proc.kill('SIGTERM');
      stoppedAfter = await Promise.race([gone.then((t) => t - signalled), new Promise<number>((r) => setTimeout(() => r(Infinity), 30_000))]);
    } finally {
      if (server.exited() === null) server.proc.kill('SIGKILL');
    }
    await importing;
    expect(stoppedAfter).toBeLessThan(10_000);
    // Started again on the same file: no run, whole or partial, from the stopped import.
    const again = await startServerProcess('start', startArgs('sigterm'));
    try {
      expect(((await (await fetch(`${again.url}/api/runs`)).json()) as { total: number }).total).toBe(0);
      const db = new Database(path.join(work.dir, 'sigterm', 'runs.db'), { readonly: true });
      const hidden = (db.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n;
      db.close();
      // A staged import whose worker was ended goes when the store next opens after its lease (60 s).
      expect(hidden).toBeLessThanOrEqual(1);
    } finally {
      await again.stop();
    }
  }, 180_000);
});

describe('limits named in their errors', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess('start', [
      ...startArgs('limits'),
      '--max-rollouts-per-step', '3',
      '--max-rollouts-per-run', '5',
      '--max-import-bytes', String(MiB),
      '--max-inflight-body-bytes', String(2 * MiB),
      '--allow-host', 'lab.test',
      '--max-concurrent-envs', '4',
    ]);
  }, 90_000);
  afterAll(() => server.stop());

  const post = (route: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${route}`, { method: 'POST', headers: { ...json, ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });

  it('refuses a step or an import over the rollout caps, naming the flag', async () => {
    const run = (await (await post('/api/runs', { config: {}, model: {}, env: {} })).json()) as { id: string; writeToken: string };
    const step = (n: number, rollouts: number) => post(`/api/runs/${run.id}/steps`, { step: n, metrics: {}, rollouts: Array.from({ length: rollouts }, () => ({})) }, { 'x-webgrpo-write-token': run.writeToken });
    const perStep = await step(0, 4);
    expect(perStep.status).toBe(413);
    expect(((await perStep.json()) as { detail: string }).detail).toMatch(/step 0 has 4 rollouts, over .* 3 rollouts per step \(--max-rollouts-per-step\)/);
    expect((await step(0, 3)).status).toBe(200);
    const perRun = await step(1, 3);
    expect(perRun.status).toBe(413);
    expect(((await perRun.json()) as { detail: string }).detail).toMatch(/6 rollouts, over .* 5 rollouts per run \(--max-rollouts-per-run\)/);
    const imported = await post('/api/runs/import', exportOf(1, { rollouts: Array.from({ length: 4 }, () => ({ step: 0, data: {} })) }));
    expect(imported.status).toBe(413);
    expect(((await imported.json()) as { detail: string }).detail).toMatch(/--max-rollouts-per-step/);
  }, 60_000);

  it('refuses run names with NUL, a right-to-left override or 201 characters, on import as on create', async () => {
    for (const name of ['a\u0000b', 'evil\u202etxt.exe', 'x'.repeat(201), 'isolate\u2066x\u2069']) {
      const imported = await post('/api/runs/import', exportOf(1, { name }));
      expect(imported.status).toBe(400);
      expect(((await imported.json()) as { detail: string }).detail).toMatch(/"run\.name" must be a string of 1 to 200 characters without control characters or bidi overrides/);
      const created = await post('/api/runs', { name, config: {}, model: {}, env: {} });
      expect(created.status).toBe(400);
    }
    expect((await post('/api/runs/import', exportOf(1, { name: 'fine — ünïcode' }))).status).toBe(201);
  }, 180_000);

  it('answers 503, naming the budget, to a body that would pass the in-flight bytes', async () => {
    // Two bodies of (nearly) 1 MiB held open take the 2 MiB budget; a third is turned away while it arrives.
    const holders = [0, 1].map(() => {
      const req = http.request(`${server.url}/api/runs/import`, { method: 'POST', headers: { ...json, 'content-length': String(MiB - 16) } });
      req.on('error', () => {});
      req.write(Buffer.alloc(MiB - 4096, ' '));
      return req;
    });
    await new Promise((r) => setTimeout(r, 1000));
    const third = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      // Chunked, no declared length: counted as its bytes arrive.
      const req = http.request(`${server.url}/api/runs/import`, { method: 'POST', headers: json }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      });
      req.on('error', reject);
      req.write(Buffer.alloc(MiB / 2, ' '));
    });
    expect(third.status).toBe(503);
    expect(JSON.parse(third.body).detail).toMatch(/limit of 2097152 bytes \(--max-inflight-body-bytes\)/);
    for (const req of holders) req.destroy();
    // The held bytes are given back when their requests end.
    expect(await settles(async () => (await post('/api/runs/import', exportOf(1))).status === 201, 30_000)).toBe(true);
  }, 60_000);

  it('answers GET /api/runs only to a loopback Host, never to an --allow-host name', async () => {
    const list = (host: string) =>
      new Promise<number>((resolve, reject) => {
        http.get({ host: '127.0.0.1', port: server.port, path: '/api/runs', headers: { host } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        }).on('error', reject);
      });
    expect(await list(`lab.test:${server.port}`)).toBe(403);
    expect(await list('lab.test')).toBe(403);
    expect(await list(`127.0.0.1:${server.port}`)).toBe(200);
    expect(await list(`localhost:${server.port}`)).toBe(200);
    expect(await list(`[::1]:${server.port}`)).toBe(200);
  });

  it('lets HTTP /mcp session/create hold only half of the slots, so a socket session still starts', async () => {
    const created: string[] = [];
    const refusals: string[] = [];
    for (let i = 0; i < 4; i++) {
      const reply = (await (await post('/envs/echo/mcp', { jsonrpc: '2.0', method: 'openenv/session/create', id: i })).json()) as { result?: { session_id: string }; error?: { message: string } };
      if (reply.result) created.push(reply.result.session_id);
      else refusals.push(reply.error!.message);
    }
    expect(created).toHaveLength(2);
    expect(refusals[0]).toMatch(/may hold at most 2 of the 4 slots of echo/);
    await normalEchoSession(server.url);
    expect(server.exited()).toBeNull();
  });
});
