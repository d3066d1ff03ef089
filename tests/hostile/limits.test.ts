// Bounded memory and total upstream handling, against `webgrpo start` processes (the env-server
// options are the same): a client that
// never reads, frames from queued clients and from clients whose upstream is still dialing, a huge
// proxied HTTP body, redirects, bad and dead upstream URLs, and MCP sessions nobody closes.
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { fakeDist, normalEchoSession, sessionCounts, settles, startServerProcess, tempDir, type ServerProcess } from './server-process.ts';

const MiB = 1024 * 1024;

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as net.AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

let blackHole: net.Server; // accepts TCP, never answers: an upstream stuck in the handshake
const blackHoleSockets = new Set<net.Socket>();
let upstreamHttp: http.Server;
let secretHits = 0;
let proxy: ServerProcess;
let queued: ServerProcess;
let work: ReturnType<typeof tempDir>;
/** `webgrpo start` with its own data and (tiny) dist folders. */
const startArgs = (tag: string) => ['--data', `${work.dir}/${tag}-data`, '--dist', `${work.dir}/dist`];

beforeAll(async () => {
  work = tempDir('webgrpo-limits-');
  fakeDist(`${work.dir}/dist`, 0, 0);
  blackHole = net.createServer((s) => {
    blackHoleSockets.add(s);
    s.on('error', () => {});
    s.on('close', () => blackHoleSockets.delete(s));
  });
  await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', () => r()));
  upstreamHttp = http.createServer((req, res) => {
    if (req.url === '/big') {
      // 128 MiB, produced as it is read.
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(128 * MiB) });
      const chunk = Buffer.alloc(MiB, 'z');
      let sent = 0;
      const pump = () => {
        while (sent < 128) {
          sent++;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    } else if (req.url === '/metadata') {
      res.writeHead(302, { location: `http://127.0.0.1:${(upstreamHttp.address() as net.AddressInfo).port}/secret` });
      res.end();
    } else if (req.url === '/secret') {
      secretHits++;
      res.end('secret');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => upstreamHttp.listen(0, '127.0.0.1', () => r()));
  const holePort = (blackHole.address() as net.AddressInfo).port;
  const httpPort = (upstreamHttp.address() as net.AddressInfo).port;
  proxy = await startServerProcess('start', [
    ...startArgs('proxy'),
    '--upstream', `hole=http://127.0.0.1:${holePort}`,
    '--upstream', `web=http://127.0.0.1:${httpPort}`,
    '--upstream', `dead=http://127.0.0.1:${await closedPort()}`,
    '--mcp-session-timeout', '1',
    '--max-concurrent-envs', '4',
    '--verbose', // session close lines, which name a dropped slow reader
  ]);
  queued = await startServerProcess('start', [...startArgs('queued'), '--max-concurrent-envs', '1', '--queue', '--queue-timeout', '20']);
}, 90_000);

afterAll(async () => {
  await Promise.all([proxy?.stop(), queued?.stop()]);
  for (const s of blackHoleSockets) s.destroy();
  await new Promise<void>((r) => blackHole.close(() => r()));
  await new Promise<void>((r) => upstreamHttp.close(() => r()));
  work?.cleanup();
});

/** Opens `url`, recording every frame (from the first: one may come with the handshake) and the close code. */
async function connect(url: string): Promise<{ ws: WebSocket; frames: any[]; closed: Promise<number> }> {
  const ws = new WebSocket(url);
  const frames: any[] = [];
  ws.on('error', () => {});
  ws.on('message', (d) => frames.push(JSON.parse(d.toString())));
  const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, frames, closed };
}

describe('memory per connection is bounded', () => {
  it('drops a client that sends 64 MiB of steps and never reads the replies; RSS stays bounded', async () => {
    const base = proxy.rssMiB();
    const { ws, closed } = await connect(`${proxy.url.replace(/^http/, 'ws')}/envs/echo/ws`);
    (ws as unknown as { _socket: net.Socket })._socket.pause(); // never read a byte
    // Half a MiB each: echo echoes at most 512 Ki characters.
    const step = JSON.stringify({ type: 'step', data: { message: 'm'.repeat(MiB / 2) } });
    let peak = base;
    for (let i = 0; i < 128 && ws.readyState === WebSocket.OPEN; i++) {
      await new Promise<void>((r) => ws.send(step, () => r()));
      peak = Math.max(peak, proxy.rssMiB());
    }
    (ws as unknown as { _socket: net.Socket })._socket.resume();
    ws.terminate();
    await closed;
    expect(await settles(() => proxy.stderr().includes('slow reader'))).toBe(true);
    console.log(JSON.stringify({ slowReader: { sentMiB: 64, rssBaseMiB: Math.round(base), rssPeakMiB: Math.round(peak) } }));
    // 16 MiB of unsent replies is the default cap; the old server grew by ~300 MiB here.
    expect(peak - base).toBeLessThan(120);
    await normalEchoSession(proxy.url);
  }, 60_000);

  it('ends a queued client that piles up frames while it waits, with SESSION_ERROR', async () => {
    const { ws: holder } = await connect(`${queued.url.replace(/^http/, 'ws')}/envs/echo/ws`);
    const { ws: waiting, frames, closed } = await connect(`${queued.url.replace(/^http/, 'ws')}/envs/echo/ws`);
    const frame = JSON.stringify({ type: 'step', data: { message: 'q'.repeat(64 * 1024) } });
    for (let i = 0; i < 40 && waiting.readyState === WebSocket.OPEN; i++) waiting.send(frame);
    expect(await closed).toBe(1000);
    expect(frames).toEqual([{ type: 'error', data: { code: 'SESSION_ERROR', message: expect.stringMatching(/--max-pending-bytes/) } }]);
    holder.close();
    await normalEchoSession(queued.url);
    expect(await settles(async () => (await sessionCounts(queued.url)).active === 0)).toBe(true);
  });

  it('ends a client that piles up frames while its upstream is still dialing', async () => {
    const { ws, frames, closed } = await connect(`${proxy.url.replace(/^http/, 'ws')}/envs/hole/ws`);
    const frame = JSON.stringify({ type: 'reset', data: { pad: 'p'.repeat(64 * 1024) } });
    for (let i = 0; i < 40 && ws.readyState === WebSocket.OPEN; i++) ws.send(frame);
    expect(await closed).toBe(1000);
    expect(frames).toEqual([{ type: 'error', data: { code: 'SESSION_ERROR', message: expect.stringMatching(/--max-pending-bytes/) } }]);
  });

  it('refuses a proxied body that says it is 128 MiB (over --max-message-bytes) with a 502, holding none of it', async () => {
    const base = proxy.rssMiB();
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, proxy.rssMiB())), 20);
    const reply = await fetch(`${proxy.url}/envs/web/big`);
    const body = (await reply.json()) as { detail: string };
    clearInterval(sampler);
    console.log(JSON.stringify({ proxiedBody: { status: reply.status, rssBaseMiB: Math.round(base), rssPeakMiB: Math.round(peak) } }));
    expect(reply.status).toBe(502);
    expect(body.detail).toMatch(/replied with 134217728 bytes; this server relays at most 16777216 bytes per reply \(--max-message-bytes\)$/);
    // Held whole, the body alone would add 128 MiB (the old proxy copied it twice).
    expect(peak - base).toBeLessThan(100);
  }, 60_000);
});

describe('HTTP bodies over --max-message-bytes', () => {
  it('get a 413 the client reads, on a built-in route and through the proxy', async () => {
    const big = JSON.stringify({ action: { message: 'b'.repeat(17 * MiB) } });
    for (const route of ['/envs/echo/step', '/envs/web/step']) {
      const reply = await fetch(`${proxy.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
      expect(reply.status, route).toBe(413);
      expect(await reply.json()).toEqual({ detail: 'Request body larger than 16777216 bytes (--max-message-bytes)' });
    }
    await normalEchoSession(proxy.url);
  }, 60_000);
});

describe('upstreams', () => {
  it('refuses an upstream URL that does not parse at startup, naming it', async () => {
    await expect(startServerProcess('start', [...startArgs('bad'), '--upstream', 'x=http://127.0.0.1:99999'])).rejects.toThrow(
      /exited \(1\).*webgrpo start: --upstream x=http:\/\/127\.0\.0\.1:99999: replica URL does not parse/s,
    );
  });

  it('turns a dial error into a SESSION_ERROR frame, and the server serves on', async () => {
    const { ws, frames, closed } = await connect(`${proxy.url.replace(/^http/, 'ws')}/envs/dead/ws`);
    if (ws.readyState === WebSocket.OPEN) ws.send('{"type":"reset","data":{}}');
    expect(await closed).toBe(1000);
    expect(frames).toEqual([{ type: 'error', data: { code: 'SESSION_ERROR', message: expect.stringMatching(/^Upstream connect failed: ws:\/\/127\.0\.0\.1:\d+\/ws: .*ECONNREFUSED/), upstream: expect.any(String) } }]);
    await normalEchoSession(proxy.url);
  });

  it('passes a redirect back instead of following it', async () => {
    const reply = await fetch(`${proxy.url}/envs/web/metadata`, { redirect: 'manual' });
    expect(reply.status).toBe(302);
    expect(reply.headers.get('location')).toMatch(/\/secret$/);
    expect(secretHits).toBe(0);
  });
});

describe('MCP sessions made over HTTP', () => {
  it('expire when idle, so forgotten ones do not hold every slot', async () => {
    const rpc = (method: string, id: number) =>
      fetch(`${proxy.url}/envs/echo/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', method, params: {}, id }) }).then(
        (r) => r.json() as Promise<any>,
      );
    // --max-concurrent-envs 4: HTTP-made sessions may hold half of the slots.
    for (let i = 0; i < 2; i++) expect((await rpc('openenv/session/create', i)).result.session_id).toEqual(expect.any(String));
    expect((await rpc('openenv/session/create', 9)).error).toMatchObject({ code: -32000, data: { active_sessions: 2, max_sessions: 4, http_sessions: 2, max_http_sessions: 2 } });
    // --mcp-session-timeout 1: both are reaped and the slots come back.
    expect(await settles(async () => (await sessionCounts(proxy.url)).active === 0, 10_000)).toBe(true);
    expect((await rpc('openenv/session/create', 10)).result.session_id).toEqual(expect.any(String));
    expect(proxy.exited()).toBeNull();
  });
});
