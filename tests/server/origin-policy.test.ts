// Who may use the env-server (issue 18): Host allowlist and Origin policy on every route and upgrade,
// the sandbox on everything that is not the app, JSON-only bodies, scarce envs' HTTP calls under the
// cap, and static paths that cannot be decoded. In-process servers; the browser's view of the same
// rules is tests/hostile/browser-origin.test.ts.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { echoEnv } from '../../env-server/envs/echo.ts';
import type { AnyEnvInstance, EnvDefinition } from '../../env-server/envs/types.ts';
import { createRequestPolicy } from '../../env-server/origin-policy.ts';
import { RunStore } from '../../env-server/runs.ts';
import { runsHandler } from '../../env-server/runs-http.ts';
import type { EnvServer } from '../../env-server/server.ts';
import { staticHandler } from '../../env-server/static.ts';
import { parseEnvServerArgs } from '../../src/cli/env-server.ts';
import { expectNoLeaks, RawClient, Servers, wsBase } from './helpers.ts';

const servers = new Servers();
afterEach(() => servers.closeAll());

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request with exactly these headers (fetch would not let a test set Host). */
function request(url: string, method: string, headers: Record<string, string>, body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A raw WebSocket handshake; resolves with the status line of the reply. */
function upgrade(server: EnvServer, target: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${server.url}${target}`, {
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13', ...headers },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode!, body: '' });
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the request policy', () => {
  const policy = createRequestPolicy({ boundHost: '127.0.0.1', allowHosts: ['lab.example', '[fd00::1]'], allowOrigins: ['http://localhost:5173'] });
  const host = (value: string) => policy.hostRefusal({ host: value })?.status ?? 'ok';
  const origin = (headers: Record<string, string>) => policy.originRefusal({ host: '127.0.0.1:8000', ...headers });

  it('serves loopback names and addresses, the bound host and --allow-host; refuses any other Host with 421', () => {
    for (const ok of ['127.0.0.1:8000', '127.1.2.3', 'localhost:8000', 'LOCALHOST', 'app.localhost:8000', '[::1]:8000', 'lab.example:8000', '[fd00::1]:80', 'localhost.:8000']) expect(host(ok), ok).toBe('ok');
    for (const bad of ['evil.example:8000', '128.0.0.1', 'localhost.evil.example', '127.0.0.1.evil.example', '[::2]', 'a@127.0.0.1', '127.0.0.1/x', '']) expect(host(bad), bad).toBe(421);
    expect(policy.hostRefusal({ host: 'evil.example:8000' })?.detail).toMatch(/^Host "evil\.example:8000" is not served here/);
    // Bound to a name: that name is served; bound to every interface: only loopback unless allowed.
    expect(createRequestPolicy({ boundHost: 'box.lan' }).hostRefusal({ host: 'box.lan:8000' })).toBeNull();
    expect(createRequestPolicy({ boundHost: '0.0.0.0' }).hostRefusal({ host: '192.168.1.9:8000' })?.status).toBe(421);
  });

  it('accepts no Origin and the own origin; refuses foreign, null and cross-site requests naming them', () => {
    expect(origin({})).toBeNull(); // curl, OpenEnv's Python clients, TRL
    expect(origin({ origin: 'http://127.0.0.1:8000', 'sec-fetch-site': 'same-origin' })).toBeNull();
    expect(origin({ 'sec-fetch-site': 'none' })).toBeNull(); // a URL typed in the address bar
    expect(origin({ origin: 'http://localhost:5173', 'sec-fetch-site': 'same-site' })).toBeNull(); // --allow-origin
    expect(origin({ origin: 'http://attacker.example' })).toEqual({
      status: 403,
      detail: "Refused a request from the web page origin http://attacker.example: only the app's own origin and clients that are not web pages may use this server (--allow-origin trusts another origin)",
    });
    expect(origin({ origin: 'null' })?.detail).toMatch(/origin null \(a sandboxed page/);
    expect(origin({ origin: 'http://127.0.0.1:9999' })?.status).toBe(403); // another port is another origin
    expect(origin({ origin: 'https://127.0.0.1:8000' })).toBeNull();
    expect(origin({ origin: 'http://127.0.0.1:8000/' })?.status).toBe(403); // not a serialized origin
    expect(origin({ 'sec-fetch-site': 'cross-site' })?.detail).toMatch(/^Refused a cross-site request:/);
    expect(origin({ origin: 'http://127.0.0.1:8000', 'sec-fetch-site': 'same-site' })?.status).toBe(403);
  });

  it('--allow-host and --allow-origin: both commands take them, bad values are named', () => {
    expect(parseEnvServerArgs(['--allow-host', 'lab.example', '--allow-host', '::1', '--allow-origin', 'http://localhost:5173'])).toEqual({
      options: { port: 8000, upstreams: {}, allowHosts: ['lab.example', '::1'], allowOrigins: ['http://localhost:5173'] },
    });
    expect(() => parseEnvServerArgs(['--allow-host', 'lab.example:8000'])).toThrow("--allow-host: expected a host name or address without scheme, port or path, got 'lab.example:8000'");
    expect(() => parseEnvServerArgs(['--allow-host', 'http://lab.example'])).toThrow(/--allow-host: .*got 'http:\/\/lab\.example'/);
    expect(() => parseEnvServerArgs(['--allow-origin', 'localhost:5173'])).toThrow("--allow-origin: expected an origin such as http://localhost:5173 (scheme, host, optional port; no path), got 'localhost:5173'");
    expect(() => parseEnvServerArgs(['--allow-origin', 'http://a.example/app'])).toThrow(/--allow-origin: .*got 'http:\/\/a\.example\/app'/);
    expect(() => parseEnvServerArgs(['--allow-origin', 'null'])).toThrow(/--allow-origin/);
  });
});

describe('every entry point of the server', () => {
  let work: string;
  let store: RunStore;
  let upstream: http.Server;
  let upstreamUrl = '';
  let runId = '';

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-policy-'));
    fs.mkdirSync(path.join(work, 'dist'));
    fs.writeFileSync(path.join(work, 'dist', 'index.html'), '<!doctype html><title>app</title>');
    store = new RunStore(path.join(work, 'runs.db'));
    const run = store.create({ config: {}, model: {}, env: {} });
    store.putArtifacts(run.id, run.writeToken, 'adapter', [{ name: 'adapter_config.json', data: Buffer.from('{}') }]);
    runId = run.id;
    // An upstream whose pages are HTML and which tries to set its own, weaker policy.
    upstream = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-security-policy': "default-src *" });
      res.end('<script>parent.postMessage(localStorage.length, "*")</script>');
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;
  });

  afterAll(async () => {
    store.close();
    await new Promise<void>((r) => upstream.close(() => r()));
    fs.rmSync(work, { recursive: true, force: true });
  });

  const start = () =>
    servers.start({ upstreams: { remote: [upstreamUrl] }, extraHandlers: [runsHandler(store), staticHandler(path.join(work, 'dist'))] });

  it('a WebSocket upgrade from another origin gets an HTTP 403 naming it, never a 101', async () => {
    const server = await start();
    for (const target of ['/envs/echo/ws', '/envs/echo/mcp', '/envs/browsergym/ws', '/envs/remote/ws']) {
      const refused = await upgrade(server, target, { origin: 'http://attacker.example' });
      expect(refused.status, target).toBe(403);
      expect(JSON.parse(refused.body).detail).toContain('http://attacker.example');
      expect((await upgrade(server, target, { origin: 'null' })).status).toBe(403);
      expect((await upgrade(server, target, { origin: 'http://127.0.0.1:1' })).status).toBe(403);
    }
    expect((await upgrade(server, '/envs/echo/ws', { origin: server.url })).status).toBe(101);
    expect((await upgrade(server, '/envs/echo/ws', {})).status).toBe(101);
    await RawClient.open(wsBase(server, 'echo')).then((c) => c.ws.close());
    await expectNoLeaks(server);
  });

  it('HTTP routes that act refuse foreign origins: env reset/step/mcp, proxied routes, run store writes and reads', async () => {
    const server = await start();
    const json = { 'content-type': 'application/json' };
    const attempts: Array<[string, string, string?]> = [
      ['POST', '/envs/echo/reset', '{}'],
      ['POST', '/envs/echo/step', '{"action":{"message":"x"}}'],
      ['POST', '/envs/browsergym/reset', '{}'],
      ['POST', '/envs/echo/mcp', '{"jsonrpc":"2.0","method":"openenv/session/create","id":1}'],
      ['GET', '/envs/echo/state'],
      ['GET', '/envs/remote/docs'],
      ['POST', '/envs/remote/reset', '{}'],
      ['POST', '/api/runs', '{"config":{},"model":{},"env":{}}'],
      ['POST', `/api/runs/${runId}/status`, '{"status":"failed"}'],
      ['GET', '/api/runs'],
      ['GET', `/api/runs/${runId}/export`],
    ];
    for (const [method, target, body] of attempts) {
      for (const headers of [{ origin: 'http://attacker.example' }, { origin: 'null' }, { 'sec-fetch-site': 'cross-site' }] as Record<string, string>[]) {
        const reply = await request(`${server.url}${target}`, method, { ...json, ...headers }, body);
        expect(reply.status, `${method} ${target} ${JSON.stringify(headers)}`).toBe(403);
      }
    }
    expect(store.list({ limit: 10, offset: 0 }).total).toBe(1);
    expect(store.get(runId).status).not.toBe('failed');
    // Non-browser clients and the app's own page still pass.
    expect((await request(`${server.url}/envs/echo/reset`, 'POST', json, '{}')).status).toBe(200);
    expect((await request(`${server.url}/envs/echo/reset`, 'POST', { ...json, origin: server.url, 'sec-fetch-site': 'same-origin' }, '{}')).status).toBe(200);
    // The app's page lists its own runs (the whole list is for local tools only: run-access.ts).
    expect((await request(`${server.url}/api/runs/list`, 'POST', { ...json, origin: server.url, 'sec-fetch-site': 'same-origin' }, '{"writeTokens":[]}')).status).toBe(200);
    expect((await request(`${server.url}/api/runs`, 'GET', { 'sec-fetch-site': 'same-origin' })).status).toBe(403);
    // The app itself is reached by navigations from anywhere (a shared link).
    expect((await request(`${server.url}/`, 'GET', { 'sec-fetch-site': 'cross-site' })).status).toBe(200);
    await expectNoLeaks(server);
  });

  it('a foreign Host gets 421 before any route: run store, artifacts, static files, env routes, upgrades', async () => {
    const server = await start();
    const evil = { host: `evil.example:${server.port}` };
    for (const target of ['/api/runs', `/api/runs/${runId}`, `/api/runs/${runId}/artifacts`, `/api/runs/${runId}/artifacts/adapter/adapter_config.json`, '/', '/index.html', '/envs', '/health', '/envs/echo/health', '/envs/remote/docs', '/nope']) {
      const reply = await request(`${server.url}${target}`, 'GET', evil);
      expect(reply.status, target).toBe(421);
      expect(JSON.parse(reply.body).detail).toContain('evil.example');
    }
    expect((await request(`${server.url}/envs/echo/reset`, 'POST', { ...evil, 'content-type': 'application/json' }, '{}')).status).toBe(421);
    expect((await upgrade(server, '/envs/echo/ws', evil)).status).toBe(421);
    expect((await request(`${server.url}/api/runs`, 'GET', { host: `localhost:${server.port}` })).status).toBe(200);
    await expectNoLeaks(server);
  });

  it('everything but the app is sandboxed and not sniffed; the app may be framed only by itself', async () => {
    const server = await start();
    for (const target of ['/envs/remote/docs', '/envs/remote/anything', '/envs/echo/docs', '/api/runs', '/envs', '/nope']) {
      const reply = await request(`${server.url}${target}`, 'GET', {});
      expect([target, reply.headers['content-security-policy'], reply.headers['x-content-type-options']]).toEqual([target, 'sandbox', 'nosniff']);
    }
    const app = await request(`${server.url}/`, 'GET', {});
    expect(app.headers).toMatchObject({ 'content-security-policy': "frame-ancestors 'self'", 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' });
    await expectNoLeaks(server);
  });

  it('bodies that are not JSON get 415 (what a page sends without a preflight); JSON and no content type still work', async () => {
    const server = await start();
    for (const target of ['/envs/echo/reset', '/envs/echo/step', '/envs/echo/mcp', '/api/runs']) {
      for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
        const reply = await request(`${server.url}${target}`, 'POST', { 'content-type': type }, '{}');
        expect(reply.status, `${target} ${type}`).toBe(415);
        expect(JSON.parse(reply.body).detail).toContain(type);
      }
    }
    expect((await request(`${server.url}/envs/echo/reset`, 'POST', {}, '{}')).status).toBe(200); // FastAPI reads an untyped body as JSON
    expect((await request(`${server.url}/envs/echo/reset`, 'POST', { 'content-type': 'application/json; charset=utf-8' }, '{}')).status).toBe(200);
    await expectNoLeaks(server);
  });

  it('static paths with a NUL or a bad escape are 404, never 500', async () => {
    const server = await start();
    for (const target of ['/index.html%00.png', '/%00', '/index.html%00', '/%E0%A4%A', '/%', '/%zz', '/assets/%C0%AF']) {
      expect((await request(`${server.url}${target}`, 'GET', {})).status, target).toBe(404);
    }
    await expectNoLeaks(server);
  });
});

describe('an env with scarce instances (its own cap, like browsergym)', () => {
  /** Echo behind a gate: reset waits until `open()`; cap 2. */
  function gatedEcho() {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const def: EnvDefinition<AnyEnvInstance> = {
      ...echoEnv,
      maxConcurrentEnvs: 2,
      create: () => {
        const env = echoEnv.create();
        return {
          reset: async (kwargs: Record<string, unknown>) => {
            await gate;
            return env.reset(kwargs);
          },
          step: (action: Record<string, unknown>) => env.step(action),
          state: () => env.state(),
          close: () => env.close(),
        };
      },
    };
    return { def, open: () => open() };
  }
  const json = { 'content-type': 'application/json' };

  it('stateless HTTP calls hold a slot while they run: a burst past the cap gets 503, and /envs counts them', async () => {
    const { def, open } = gatedEcho();
    const server = await servers.start({ envs: { gym: def } });
    const burst = Array.from({ length: 6 }, () => request(`${server.url}/envs/gym/reset`, 'POST', json, '{}'));
    await new Promise((r) => setTimeout(r, 200));
    expect(server.stats().envs.gym.active).toBe(2);
    const refusedSocket = await RawClient.open(wsBase(server, 'gym'));
    expect((await refusedSocket.nextJson()).data.code).toBe('CAPACITY_REACHED');
    open();
    const statuses = (await Promise.all(burst)).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 503, 503, 503, 503]);
    const refused = (await Promise.all(burst)).find((r) => r.status === 503)!;
    expect(JSON.parse(refused.body)).toEqual({ detail: 'Server at capacity: 2/2 sessions active. Cannot accept new connections.' });
    expect((await request(`${server.url}/envs/gym/reset`, 'POST', json, '{}')).status).toBe(200);
    await expectNoLeaks(server);
  });

  it('a web page may not open an HTTP /mcp session (it would outlive the page); other clients may', async () => {
    const { def } = gatedEcho();
    const server = await servers.start({ envs: { gym: def } });
    const create = '{"jsonrpc":"2.0","method":"openenv/session/create","id":1}';
    const fromPage = JSON.parse((await request(`${server.url}/envs/gym/mcp`, 'POST', { ...json, origin: server.url, 'sec-fetch-site': 'same-origin' }, create)).body);
    expect(fromPage.error).toMatchObject({ code: -32000, message: expect.stringContaining('refused from a web page for echo') });
    expect(server.stats().envs.gym.active).toBe(0);
    const fromClient = JSON.parse((await request(`${server.url}/envs/gym/mcp`, 'POST', json, create)).body);
    expect(typeof fromClient.result.session_id).toBe('string');
    expect(server.stats().envs.gym.active).toBe(1);
    const closed = JSON.parse((await request(`${server.url}/envs/gym/mcp`, 'POST', json, JSON.stringify({ jsonrpc: '2.0', method: 'openenv/session/close', params: { session_id: fromClient.result.session_id }, id: 2 }))).body);
    expect(closed.result.closed).toBe(true);
    await expectNoLeaks(server);
  });
});
