// Regression tests for the inputs that used to kill `webgrpo start` (issue 9), each run against the
// real command in its own process under `--unhandled-rejections=strict`; after each one the same
// process must still serve a normal echo session. Also the run store's origin rules.
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { fakeDist, normalEchoSession, rawExchange, sessionCounts, settles, startServerProcess, tempDir, upgradeRequest, type ServerProcess } from './server-process.ts';

const DEEP = '['.repeat(10_000) + ']'.repeat(10_000); // ~20 KB, 10,000 levels

let work: ReturnType<typeof tempDir>;
let dist: string;
let server: ServerProcess;

beforeAll(async () => {
  work = tempDir('webgrpo-hostile-');
  dist = path.join(work.dir, 'dist');
  fakeDist(dist, 4, 2048); // four 2 MiB assets: a download takes more than one read
  server = await startServerProcess('start', ['--data', path.join(work.dir, 'data'), '--dist', dist, '--max-body-bytes', String(1024 * 1024)]);
}, 90_000);

afterAll(async () => {
  await server?.stop();
  work?.cleanup();
});

/** The process lives and a normal session works. */
async function stillServing(): Promise<void> {
  expect(server.exited(), server.stderr()).toBeNull();
  await normalEchoSession(server.url);
}

/** Opens a socket to `path`, sends `frame`, returns every frame received and the close code. */
async function oneFrameExchange(route: string, frame: string, expectClose: boolean): Promise<{ frames: string[]; code: number | null }> {
  const ws = new WebSocket(`${server.url.replace(/^http/, 'ws')}${route}`);
  const frames: string[] = [];
  ws.on('message', (d) => frames.push(d.toString()));
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  ws.send(frame);
  if (expectClose) return { frames, code: await closed };
  await settles(() => frames.length > 0, 5000);
  ws.close();
  await closed;
  return { frames, code: null };
}

describe('the six crash inputs leave webgrpo start serving', () => {
  it('1. upgrades to targets that do not parse get 400/404, not a crash', async () => {
    for (const target of ['/envs/%/ws', '//', '/envs/%E0%A4%A/ws', '/envs/echo%/ws', 'http://[/ws']) {
      const reply = await rawExchange(server.port, upgradeRequest(target));
      expect(reply, target).toMatch(/^HTTP\/1\.1 (400|404) /);
    }
    // The same targets as plain HTTP requests: 400 or 404, never a 500.
    for (const target of ['//', '/envs/%/health', '/api/runs/%', 'http://[/']) {
      const reply = await rawExchange(server.port, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      expect(reply, target).toMatch(/^HTTP\/1\.1 (400|404) /);
    }
    await stillServing();
  }, 60_000);

  it('2. 10,000-level JSON as step data, type, an extra key, an MCP session_id or jsonrpc is refused', async () => {
    const wsFrames = [
      `{"type":"step","data":{"message":${DEEP}}}`,
      `{"type":${DEEP}}`,
      `{"type":"state","extra":${DEEP}}`,
      `{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/list","params":{"session_id":${DEEP}},"id":1}}`,
      `{"type":"mcp","data":{"jsonrpc":${DEEP},"method":"tools/list","id":1}}`,
      `{"type":"step","data":${'['.repeat(10_000)}`, // truncated
    ];
    for (const frame of wsFrames) {
      const { frames, code } = await oneFrameExchange('/envs/echo/ws', frame, true);
      expect(frames.map((f) => JSON.parse(f))).toEqual([
        { type: 'error', data: { message: 'JSON nested deeper than 256 levels (--max-json-depth)', code: 'SESSION_ERROR' } },
      ]);
      expect(code).toBe(1000);
    }
    for (const frame of [`{"jsonrpc":${DEEP},"method":"tools/list","id":1}`, `{"jsonrpc":"2.0","method":"openenv/session/close","params":{"session_id":${DEEP}},"id":2}`]) {
      const { frames } = await oneFrameExchange('/envs/echo/mcp', frame, false);
      expect(JSON.parse(frames[0])).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
    }
    const post = (route: string, body: string) =>
      fetch(`${server.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(async (r) => ({ status: r.status, body: await r.json() }));
    expect(await post('/envs/echo/mcp', `{"jsonrpc":"2.0","method":"tools/call","params":{"session_id":${DEEP}},"id":1}`)).toEqual({
      status: 200,
      body: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error', data: null } },
    });
    expect((await post('/envs/echo/step', `{"action":{"message":${DEEP}}}`)).status).toBe(422);
    expect((await post('/envs/echo/reset', DEEP)).status).toBe(422);
    expect(await post('/api/runs', `{"config":${DEEP}}`)).toMatchObject({ status: 400, body: { detail: expect.stringMatching(/nested deeper than 256/) } });
    await stillServing();
  }, 60_000);

  it('3. upgrades to a non-WebSocket path followed by a TCP reset, 300 times', async () => {
    const before = server.fdCount();
    for (let i = 0; i < 300; i++) {
      await new Promise<void>((resolve) => {
        const socket = net.connect(server.port, '127.0.0.1', () => {
          socket.write(upgradeRequest(i % 2 ? '/nope' : '/envs/nope/ws'));
          // Half of them reset at once, half once the 404 is on its way.
          setImmediate(() => socket.resetAndDestroy());
        });
        socket.on('error', () => {});
        socket.on('close', () => resolve());
      });
    }
    await stillServing();
    expect(await settles(() => server.fdCount() <= before + 2)).toBe(true);
  }, 60_000);

  it('4. 300 aborted downloads leave no file of dist/ open; a file removed while served is a 404 after', async () => {
    const abortOne = (file: string) =>
      new Promise<void>((resolve) => {
        const req = http.get(`${server.url}/${file}`, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', () => resolve());
      });
    for (let i = 0; i < 300; i += 10) await Promise.all(Array.from({ length: 10 }, (_, k) => abortOne(`assets/chunk-${(i + k) % 4}.js`)));
    expect(await settles(() => server.fdsUnder(dist).length === 0)).toBe(true);
    expect(server.fdsUnder(dist)).toEqual([]);

    // A rebuild removes a file while it is being downloaded, and it is asked for again afterwards.
    const victim = path.join(dist, 'assets', 'chunk-3.js');
    const partial = new Promise<void>((resolve) => {
      const req = http.get(`${server.url}/assets/chunk-3.js`, (res) => {
        res.once('data', () => {
          fs.rmSync(victim);
          res.resume();
          res.on('end', () => resolve());
          res.on('error', () => resolve());
        });
      });
      req.on('error', () => resolve());
    });
    await partial;
    expect((await fetch(`${server.url}/assets/chunk-3.js`)).status).toBe(404);
    expect((await fetch(`${server.url}/`)).status).toBe(200);
    expect(await settles(() => server.fdsUnder(dist).length === 0)).toBe(true);
    await stillServing();
  }, 60_000);
});

describe('the run store accepts writes only from the app itself', () => {
  const run = { name: 'r', config: { num_generations: 2 }, model: { id: 'tiny' }, env: { name: 'echo' } };
  const write = (route: string, body: string, headers: Record<string, string>) =>
    fetch(`${server.url}${route}`, { method: 'POST', headers, body }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
  const own = () => ({ 'content-type': 'application/json', origin: server.url, 'sec-fetch-site': 'same-origin' });

  it('refuses a cross-origin text/plain write, a rebinding host, and non-JSON bodies; the app itself writes', async () => {
    const crossSite = await write('/api/runs', JSON.stringify(run), { 'content-type': 'text/plain', origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' });
    expect(crossSite.status).toBe(403);
    expect((await write('/api/runs/import', '{}', { 'content-type': 'text/plain', origin: 'http://evil.example' })).status).toBe(403);
    // DNS rebinding: the page's origin and the Host header agree, but name a domain.
    expect((await write('/api/runs', JSON.stringify(run), { 'content-type': 'application/json', origin: 'http://evil.example:1234', host: 'evil.example:1234' })).status).toBe(403);
    expect((await write('/api/runs', JSON.stringify(run), { 'content-type': 'text/plain' })).status).toBe(415);
    const created = await write('/api/runs', JSON.stringify(run), own());
    expect(created.status).toBe(201);
    // Nothing but the app's own run reached the store.
    expect((await write(`/api/runs/${created.body.id}/steps`, '{"step":0,"metrics":{}}', { 'content-type': 'text/plain', origin: 'http://evil.example', 'x-webgrpo-write-token': created.body.writeToken })).status).toBe(403);
    expect((await write(`/api/runs/${created.body.id}/steps`, '{"step":0,"metrics":{"reward":1}}', { ...own(), 'x-webgrpo-write-token': created.body.writeToken })).status).toBe(200);
  });

  it('keeps write tokens hashed in a 0600 runs.db', async () => {
    const created = await write('/api/runs', JSON.stringify(run), own());
    const db = path.join(work.dir, 'data', 'runs.db');
    expect(fs.statSync(db).mode & 0o777).toBe(0o600);
    const bytes = Buffer.concat([db, `${db}-wal`].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f)));
    expect(bytes.includes(created.body.writeToken)).toBe(false);
  });

  it('answers bad query values, bad encodings and duplicate imported steps with 400, big bodies with a 413 the client reads', async () => {
    const created = await write('/api/runs', JSON.stringify(run), own());
    for (const q of ['rollouts?last=abc', 'rollouts?step=-1', 'rollouts?last=1e400', '?after=x']) {
      expect((await fetch(`${server.url}/api/runs/${created.body.id}/${q}`)).status, q).toBe(400);
    }
    expect((await fetch(`${server.url}/api/runs/%`)).status).toBe(400);
    const exported = (await (await fetch(`${server.url}/api/runs/${created.body.id}/export`)).json()) as any;
    exported.steps = [{ step: 0, metrics: {} }, { step: 0, metrics: {} }];
    const dup = await write('/api/runs/import', JSON.stringify(exported), own());
    expect(dup).toMatchObject({ status: 400, body: { detail: expect.stringMatching(/steps\[1\] repeats step 0/) } });
    // 3 MiB against --max-body-bytes 1 MiB: the 413 arrives instead of a reset.
    const big = await write('/api/runs', JSON.stringify({ ...run, name: 'x'.repeat(3 * 1024 * 1024) }), own());
    expect(big).toMatchObject({ status: 413, body: { detail: expect.stringMatching(/--max-body-bytes/) } });
    await stillServing();
  });

  it('imports off the event loop: a request sent after a large upload is answered before the import', async () => {
    const created = await write('/api/runs', JSON.stringify(run), own());
    const exported = (await (await fetch(`${server.url}/api/runs/${created.body.id}/export`)).json()) as any;
    exported.steps = Array.from({ length: 100 }, (_, step) => ({ step, metrics: { reward: step / 100 } }));
    exported.rollouts = Array.from({ length: 3000 }, (_, i) => ({ step: i % 100, index: i, data: { text: 'y'.repeat(6000) } }));
    const body = Buffer.from(JSON.stringify(exported)); // ~18 MB
    const order: string[] = [];
    const imported = new Promise<number>((resolve, reject) => {
      const req = http.request(`${server.url}/api/runs/import`, { method: 'POST', headers: { ...own(), 'content-length': body.length } }, (res) => {
        res.resume();
        res.on('end', () => {
          order.push('import');
          resolve(res.statusCode!);
        });
      });
      req.on('error', reject);
      req.end(body, async () => {
        // The upload is in the server's hands: it now parses and stores 18 MB.
        await new Promise((r) => setTimeout(r, 50));
        await fetch(`${server.url}/health`);
        order.push('health');
      });
    });
    expect(await imported).toBe(201);
    await settles(() => order.length === 2);
    expect(order).toEqual(['health', 'import']);
  }, 60_000);

  it('leaves no session behind', async () => {
    expect(await sessionCounts(server.url)).toEqual({ active: 0, queued: 0 });
  });
});
