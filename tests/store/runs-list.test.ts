// The run store's list route, its interrupted runs, fork parents and the files kept with a run
// (adapter, full model, trainer checkpoint): what the app's home page and download links read.
import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunStore, type RunStoreOptions } from '../../env-server/runs.ts';
import { runsHandler, WRITE_TOKEN_HEADER } from '../../env-server/runs-http.ts';

const tmpdirs: string[] = [];
afterEach(() => { for (const d of tmpdirs.splice(0)) fs.rmSync(d, { recursive: true, force: true }); });

function store(options?: RunStoreOptions): RunStore {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-list-'));
  tmpdirs.push(dir);
  return new RunStore(path.join(dir, 'runs.db'), options);
}

async function serve(s: RunStore) {
  const handle = runsHandler(s);
  const server = http.createServer(async (req, res) => {
    if (!(await handle(req, res))) { res.writeHead(404); res.end(); }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const call = async (method: string, p: string, body?: unknown, token?: string) => {
    const r = await fetch(base + p, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { [WRITE_TOKEN_HEADER]: token } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = Buffer.from(await r.arrayBuffer());
    return { status: r.status, headers: r.headers, raw: text, body: r.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text.toString('utf8')) : null };
  };
  return { call, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const spec = (task: string) => ({ name: `${task} run`, config: { max_steps: 3, sft_steps: 1 }, model: { name: 'built-in tiny' }, env: { name: task, task } });

describe('runs list', () => {
  it('lists runs newest first with task, model, steps, recent mean reward and the latest held-out success, paginated', async () => {
    const s = store();
    const a = s.create(spec('catch'));
    s.appendStep(a.id, a.writeToken, { step: 0, metrics: { loss: 2, reward: 99, phase_sft: 1 } }); // SFT steps have no reward to rank by
    s.appendStep(a.id, a.writeToken, { step: 1, metrics: { reward: 0.25, success_rate: 0.5, phase_sft: 0 } });
    s.appendStep(a.id, a.writeToken, { step: 2, metrics: { reward: 0.75, success_rate: 0.25, phase_sft: 0, eval_success_rate: 0.5, eval_success_ci95_low: 0.2, eval_success_ci95_high: 0.8, eval_episodes: 8 } });
    // The app's Evaluate, kept with step 1 after the fact: the trainer's later eval at step 2 is the latest.
    s.mergeStepMetrics(a.id, a.writeToken, { step: 1, metrics: { 'evaluate/success_rate': 0.9, 'evaluate/success_ci95_low': 0.6, 'evaluate/success_ci95_high': 1, 'evaluate/episodes': 10 } });
    expect(s.steps(a.id)[1]!.metrics).toMatchObject({ reward: 0.25, 'evaluate/success_rate': 0.9 });
    expect(() => s.mergeStepMetrics(a.id, a.writeToken, { step: 7, metrics: { x: 1 } })).toThrow(/no step 7/);
    expect(() => s.mergeStepMetrics(a.id, 'wrong', { step: 1, metrics: { x: 1 } })).toThrow();
    s.setStatus(a.id, a.writeToken, 'finished');
    await new Promise((r) => setTimeout(r, 5));
    const b = s.create(spec('echo'));
    const { call, close } = await serve(s);
    try {
      const all = await call('GET', '/api/runs');
      expect(all.status).toBe(200);
      expect(all.body.total).toBe(2);
      expect(all.body.runs.map((r: { id: string }) => r.id)).toEqual([b.id, a.id]);
      const first = all.body.runs[1];
      expect(first).toMatchObject({ task: 'catch', model: 'built-in tiny', status: 'finished', interrupted: false, steps: 3, totalSteps: 4, recentReward: 0.5, recentSteps: 2, heldOut: { step: 2, successRate: 0.5, ci95: [0.2, 0.8], episodes: 8 }, parent: null, artifacts: [] });
      const page2 = await call('GET', '/api/runs?limit=1&offset=1');
      expect(page2.body.runs.map((r: { id: string }) => r.id)).toEqual([a.id]);
      expect(page2.body.total).toBe(2);
      for (const bad of ['limit=0', 'limit=abc', 'limit=201', 'offset=-1', 'offset=1.5']) {
        const r = await call('GET', `/api/runs?${bad}`);
        expect(r.status, bad).toBe(400);
        expect(r.body.detail, bad).toMatch(/must be an integer/);
      }
    } finally {
      await close();
    }
  });

  it('marks a running or paused run whose writer went silent as interrupted; a fresh write clears it', async () => {
    const s = store({ staleAfterMs: 50 });
    const r = s.create(spec('catch'));
    s.appendStep(r.id, r.writeToken, { step: 0, metrics: { reward: 0 } });
    expect(s.get(r.id).interrupted).toBe(false);
    await new Promise((res) => setTimeout(res, 80));
    expect(s.get(r.id)).toMatchObject({ status: 'running', interrupted: true });
    expect(s.list({ limit: 10, offset: 0 }).runs[0]!.interrupted).toBe(true);
    s.setStatus(r.id, r.writeToken, 'paused'); // the live tab's heartbeat
    expect(s.get(r.id).interrupted).toBe(false);
    s.setStatus(r.id, r.writeToken, 'finished');
    await new Promise((res) => setTimeout(res, 80));
    expect(s.get(r.id).interrupted).toBe(false); // a finished run is never interrupted
  });

  it('after a restart, a run left running reads as interrupted until its writer writes again (a lease, not a flag)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-list-'));
    tmpdirs.push(dir);
    const first = new RunStore(path.join(dir, 'runs.db'));
    const r = first.create(spec('echo'));
    first.appendStep(r.id, r.writeToken, { step: 0, metrics: { reward: 0 } });
    first.close();
    await new Promise((res) => setTimeout(res, 5)); // the restarted store opens on a later clock tick
    const again = new RunStore(path.join(dir, 'runs.db'));
    expect(again.get(r.id)).toMatchObject({ status: 'running', interrupted: true });
    expect(again.list({ limit: 10, offset: 0 }).runs[0]!.interrupted).toBe(true);
    again.appendStep(r.id, r.writeToken, { step: 1, metrics: { reward: 1 } }); // the tab's queued step arrives
    expect(again.get(r.id).interrupted).toBe(false);
    again.close();
  });

  it('records the parent of a fork and rejects an unknown parent', async () => {
    const s = store();
    const parent = s.create(spec('catch'));
    const { call, close } = await serve(s);
    try {
      const fork = await call('POST', '/api/runs', { ...spec('catch'), parent: parent.id });
      expect(fork.status).toBe(201);
      expect((await call('GET', `/api/runs/${fork.body.id}`)).body.run.parent).toBe(parent.id);
      expect((await call('GET', '/api/runs')).body.runs[0].parent).toBe(parent.id);
      const bad = await call('POST', '/api/runs', { ...spec('catch'), parent: 'no-such-run' });
      expect(bad.status).toBe(400);
      expect(bad.body.detail).toMatch(/"parent" must be the id of a stored run/);
    } finally {
      await close();
    }
  });
});

describe('files kept with a run', () => {
  it('uploads a bundle with the write token, lists it, serves each file as a download, and replaces it whole', async () => {
    const s = store();
    const r = s.create(spec('catch'));
    const { call, close } = await serve(s);
    const weights = Buffer.from([0, 1, 2, 250, 251, 252, 253, 254, 255]);
    const files = [{ name: 'adapter_config.json', base64: Buffer.from('{"r":4}').toString('base64') }, { name: 'adapter_model.safetensors', base64: weights.toString('base64') }];
    try {
      expect((await call('POST', `/api/runs/${r.id}/artifacts/adapter`, { files })).status).toBe(403);
      expect((await call('POST', `/api/runs/${r.id}/artifacts/adapter`, { files }, r.writeToken)).status).toBe(200);
      const listed = await call('GET', `/api/runs/${r.id}/artifacts`);
      expect(listed.body.artifacts.map((a: { bundle: string; name: string; bytes: number }) => [a.bundle, a.name, a.bytes])).toEqual([['adapter', 'adapter_config.json', 7], ['adapter', 'adapter_model.safetensors', 9]]);
      const file = await call('GET', `/api/runs/${r.id}/artifacts/adapter/adapter_model.safetensors`);
      expect(file.status).toBe(200);
      expect(file.headers.get('content-disposition')).toBe('attachment; filename="adapter_model.safetensors"');
      expect([...file.raw]).toEqual([...weights]);
      expect((await call('GET', '/api/runs')).body.runs[0].artifacts).toEqual(['adapter/adapter_config.json', 'adapter/adapter_model.safetensors']);
      // A new upload of the bundle replaces it: no stale file from the previous one stays behind.
      expect((await call('POST', `/api/runs/${r.id}/artifacts/adapter`, { files: [files[1]] }, r.writeToken)).status).toBe(200);
      expect((await call('GET', `/api/runs/${r.id}/artifacts`)).body.artifacts).toHaveLength(1);
      expect((await call('GET', `/api/runs/${r.id}/artifacts/adapter/adapter_config.json`)).status).toBe(404);
    } finally {
      await close();
    }
  });

  it('rejects bad bundles, file names, base64, and uploads over the size limit with the reason', async () => {
    const s = store({ maxArtifactBytes: 16 });
    const r = s.create(spec('catch'));
    const { call, close } = await serve(s);
    const up = (bundle: string, files: unknown) => call('POST', `/api/runs/${r.id}/artifacts/${bundle}`, { files }, r.writeToken);
    try {
      expect((await up('weights', [{ name: 'a.bin', base64: 'AAAA' }])).body.detail).toMatch(/Unknown artifact bundle "weights"/);
      expect((await up('adapter', [{ name: '../etc/passwd', base64: 'AAAA' }])).body.detail).toMatch(/not allowed/);
      expect((await up('adapter', [{ name: 'a.bin', base64: 'not base64!' }])).status).toBe(400);
      expect((await up('adapter', [])).status).toBe(400);
      expect((await up('checkpoint', [{ name: 'state.bin', base64: Buffer.alloc(10).toString('base64') }])).status).toBe(200);
      const tooBig = await up('adapter', [{ name: 'a.bin', base64: Buffer.alloc(10).toString('base64') }]);
      expect(tooBig.status).toBe(413);
      expect(tooBig.body.detail).toMatch(/limit of 16 bytes per run \(10 bytes already kept\)/);
    } finally {
      await close();
    }
  });
});
