// Replies are bounded as requests are: a hostile upstream on 127.0.0.1 that answers each frame with a
// frame of the size it was asked for (100 MiB by default), or streams a huge HTTP body; echo asked to
// repeat a 15 MiB message (its reply was ~3× that); and clients that stop reading while replies pile
// up across sessions. Against a `webgrpo env-server` process, whose RSS is read from /proc.

import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { startServerProcess, type ServerProcess } from './server-process.ts';

const MiB = 1024 * 1024;
/** Just under ws's old 100 MiB limit for upstream frames, so today's proxy took it. */
const HUGE = 100 * MiB - 64;
const huge = Buffer.alloc(HUGE, 'x');

let upstream: http.Server;
let server: ServerProcess;
let budgeted: ServerProcess;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    if (req.url === '/chunked') {
      // 64 MiB with no content-length, produced as it is read.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = huge.subarray(0, MiB);
      let sent = 0;
      const pump = () => {
        while (sent < 64) {
          sent++;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      return pump();
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.url === '/health' ? '{"status":"healthy"}' : '{"name":"hostile"}');
  });
  const wss = new WebSocketServer({ server: upstream });
  wss.on('connection', (ws) => {
    ws.on('error', () => {});
    // Each frame asks for a reply size ({"size": N}); anything else gets the huge one.
    ws.on('message', (data) => {
      const size = Number((JSON.parse(String(data)) as { size?: number }).size ?? HUGE);
      ws.send(huge.subarray(0, size));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(upstream.address() as net.AddressInfo).port}`;
  server = await startServerProcess('env-server', ['--upstream', `hostile=${url}`, '--max-concurrent-envs', '32']);
  budgeted = await startServerProcess('env-server', ['--upstream', `hostile=${url}`, '--max-reply-backlog-bytes', String(32 * MiB)]);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await budgeted?.stop();
  upstream?.close();
});

/** The latest close a client saw (for failure messages). */
let lastClose = '';

interface Client {
  ws: WebSocket;
  frames: string[];
  closed: Promise<number>;
}

/** A session on `/envs/<env>/ws` whose client takes frames up to 1 MiB (a bigger one ends it with 1009 on the client side). */
async function open(target: ServerProcess, env: string, maxPayload = MiB): Promise<Client> {
  const ws = new WebSocket(`${target.url.replace(/^http/, 'ws')}/envs/${env}/ws`, { maxPayload });
  const frames: string[] = [];
  ws.on('message', (d) => frames.push(String(d)));
  ws.on('error', () => {});
  const closed = new Promise<number>((resolve) => ws.on('close', (code, reason) => {
    lastClose = `${code} ${String(reason)}`;
    resolve(code);
  }));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, frames, closed };
}

/** GET /health's time, ms (and that it answers 200), on a fresh connection each time (a busy server may drop idle ones). */
async function healthMs(target: ServerProcess): Promise<number> {
  const start = Date.now();
  const status = await new Promise<number | undefined>((resolve, reject) => {
    http.get(`${target.url}/health`, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    }).on('error', reject);
  });
  expect(status).toBe(200);
  return Date.now() - start;
}

/** Polls RSS (and /health) until `done` resolves; returns the peaks. */
async function watch(target: ServerProcess, done: Promise<unknown>): Promise<{ peakRss: number; slowestHealth: number }> {
  let finished = false;
  void done.finally(() => (finished = true));
  let peakRss = target.rssMiB();
  let slowestHealth = 0;
  while (!finished) {
    peakRss = Math.max(peakRss, target.rssMiB());
    slowestHealth = Math.max(slowestHealth, await healthMs(target));
    await new Promise((r) => setTimeout(r, 100));
  }
  await done;
  return { peakRss: Math.max(peakRss, target.rssMiB()), slowestHealth };
}

describe('a hostile upstream', () => {
  it('100 MiB frames to 8 sessions are refused (1009, a clear error); RSS stays bounded and /health answers', async () => {
    const before = server.rssMiB();
    const clients = await Promise.all(Array.from({ length: 8 }, () => open(server, 'hostile')));
    for (const c of clients) c.ws.send('{"type":"step","data":{}}');
    const { peakRss, slowestHealth } = await watch(server, Promise.all(clients.map((c) => c.closed)));
    const after = server.rssMiB();
    console.log(`8 sessions × a 100 MiB upstream frame: server RSS ${before.toFixed(0)} → peak ${peakRss.toFixed(0)} → ${after.toFixed(0)} MiB; slowest /health ${slowestHealth} ms`);
    for (const c of clients) {
      expect(await c.closed).toBe(1009);
      expect(JSON.parse(c.frames[0]!)).toMatchObject({
        type: 'error',
        data: { code: 'SESSION_ERROR', message: expect.stringMatching(/^Upstream sent a message over 16777216 bytes \(--max-message-bytes/) },
      });
    }
    expect(peakRss - before).toBeLessThan(100);
    expect(slowestHealth).toBeLessThan(2000);
  }, 120_000);

  it('an HTTP reply over the limit is cut while streaming', async () => {
    const before = server.rssMiB();
    const res = await fetch(`${server.url}/envs/hostile/chunked`);
    let got = 0;
    const cut = await (async () => {
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) got += chunk.length;
        return false;
      } catch {
        return true;
      }
    })();
    console.log(`64 MiB chunked upstream reply: ${got} bytes relayed, then cut; RSS ${before.toFixed(0)} → ${server.rssMiB().toFixed(0)} MiB`);
    expect(cut).toBe(true);
    expect(got).toBeLessThanOrEqual(17 * MiB);
    expect(server.stderr()).toMatch(/body cut: upstream reply passed 16777216 bytes \(--max-message-bytes\)/);
  }, 60_000);

  it('replies piling up for clients that stop reading are refused past --max-reply-backlog-bytes, with a clear error', async () => {
    const clients = await Promise.all(Array.from({ length: 8 }, () => open(budgeted, 'hostile', 16 * MiB)));
    // They ask for 12 MiB each, then stop reading: what is not in the kernel's buffers waits in the server.
    for (const c of clients) {
      c.ws.send(JSON.stringify({ size: 12 * MiB }));
      (c.ws as unknown as { _socket: net.Socket })._socket.pause();
    }
    await new Promise((r) => setTimeout(r, 2000));
    const peak = budgeted.rssMiB();
    for (const c of clients) (c.ws as unknown as { _socket: net.Socket })._socket.resume();
    const replied = async (c: Client) => {
      while (c.frames.length === 0) await new Promise((r) => setTimeout(r, 50));
      return c.frames[0]!;
    };
    const replies = await Promise.all(clients.map(replied));
    const busy = replies.filter((r) => r.startsWith('{"type":"error"'));
    console.log(`8 clients × 12 MiB replies, none read, backlog budget 32 MiB: ${replies.length - busy.length} sent, ${busy.length} refused; server RSS ${peak.toFixed(0)} MiB while they waited`);
    expect(busy.length).toBeGreaterThan(0);
    expect(replies.length - busy.length).toBeGreaterThan(0);
    expect(JSON.parse(busy[0]!).data.message).toMatch(/^Server busy: a 12582912-byte reply would pass the 33554432 bytes of replies this server queues for all its clients .*--max-reply-backlog-bytes/);
    for (const c of clients) c.ws.close();
  }, 60_000);
});

describe('echo of a huge message', () => {
  it('8 sessions echoing a 15 MiB message: each is refused with a clear error, RSS bounded', async () => {
    const message = JSON.stringify({ type: 'step', data: { type: 'call_tool', tool_name: 'echo_message', arguments: { message: 'y'.repeat(15 * MiB) } } });
    const payload = Buffer.from(message);
    const before = server.rssMiB();
    const clients = await Promise.all(Array.from({ length: 8 }, () => open(server, 'echo', 64 * MiB)));
    const frames = async (c: Client, n: number) => {
      while (c.frames.length < n) {
        if (c.ws.readyState !== WebSocket.OPEN) throw new Error(`closed (${lastClose}) after ${c.frames.length} frames: ${c.frames.join(' ').slice(0, 300)}; server log: ${server.stderr().slice(-500)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    // A session started first: frames sent before it are held only up to --max-pending-bytes.
    for (const c of clients) c.ws.send('{"type":"reset","data":{}}');
    await Promise.all(clients.map((c) => frames(c, 1)));
    for (const c of clients) c.ws.send(payload, { binary: false });
    const waited = Promise.all(clients.map((c) => frames(c, 2)));
    const { peakRss, slowestHealth } = await watch(server, waited);
    console.log(`8 sessions × echo of a 15 MiB message: server RSS ${before.toFixed(0)} → peak ${peakRss.toFixed(0)} MiB; slowest /health ${slowestHealth} ms; reply ${clients[0]!.frames[1]!.length} bytes`);
    for (const c of clients) {
      const reply = JSON.parse(c.frames[1]!);
      expect(reply.data?.observation?.error?.message, c.frames[1]!.slice(0, 300)).toMatch(/message is 15728640 characters; the echo env echoes at most 524288/);
    }
    // The requests themselves (8 × 15 MiB, each within the clients' limit) are what remains; the
    // replies (~45 MB each, a string and its bytes) were what the old server added on top.
    expect(peakRss - before).toBeLessThan(500);
    for (const c of clients) c.ws.close();
  }, 120_000);
});

describe('a reply over the per-message limit', () => {
  it('is refused with an EXECUTION_ERROR naming its size; the session goes on', async () => {
    const { createEnvServer } = await import('../../env-server/server.ts');
    const small = await createEnvServer({ port: 0, maxMessageBytes: 1000 });
    try {
      const c = await open({ url: small.url } as ServerProcess, 'echo');
      // 800 characters in (under 1000 bytes with the envelope), the message at least twice out (text and structured result).
      c.ws.send(JSON.stringify({ type: 'step', data: { type: 'call_tool', tool_name: 'echo_with_length', arguments: { message: 'z'.repeat(800) } } }));
      c.ws.send('{"type":"state"}');
      while (c.frames.length < 2) await new Promise((r) => setTimeout(r, 20));
      expect(JSON.parse(c.frames[0]!)).toEqual({
        type: 'error',
        data: { code: 'EXECUTION_ERROR', message: expect.stringMatching(/^Reply too large: \d{4} bytes; this server sends at most 1000 bytes per message \(--max-message-bytes\)\.$/) },
      });
      expect(JSON.parse(c.frames[1]!)).toMatchObject({ type: 'state', data: { step_count: 1 } });
      c.ws.close();
    } finally {
      await small.close();
    }
  });
});
