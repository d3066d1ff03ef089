// A latency-injecting relay in front of an OpenEnv server, for the rollout benchmark and its test: it
// forwards every WebSocket session to the upstream server and holds every upstream reply back by a
// seeded delay (default: uniform 100–400 ms, and 1 reply in 20 by 2 s instead) — what training against
// a Space over the network looks like. Replies keep their order per session. Plain HTTP requests
// (/health, /metadata, /schema) are forwarded without delay. Binds 127.0.0.1.
//
// Delays are a pure function of (seed, the session's first client message, reply number), so the same
// episodes get the same latencies whichever scheduler plays them and in whatever order they connect.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer, type RawData } from 'ws';
import { hashInts } from '../../src/rl/seeds.ts';

export interface LatencyProfile {
  minMs: number;
  maxMs: number;
  /** One reply in `slowEvery` is delayed by `slowMs` instead (0 = never). */
  slowEvery: number;
  slowMs: number;
  seed: number;
}

export const DEFAULT_LATENCY: LatencyProfile = { minMs: 100, maxMs: 400, slowEvery: 20, slowMs: 2000, seed: 1 };

/** The delay of reply `k` of a session whose first client message hashed to `sessionKey`. */
export function replyDelayMs(p: LatencyProfile, sessionKey: number, k: number): number {
  const h = hashInts(p.seed, sessionKey, k);
  if (p.slowEvery > 0 && h % p.slowEvery === 0) return p.slowMs;
  return p.minMs + (hashInts(h, 1) % (p.maxMs - p.minMs + 1));
}

function textHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = hashInts(h, s.charCodeAt(i));
  return h;
}

export interface LatencyRelay {
  /** Base URL to give clients instead of the upstream's, e.g. http://127.0.0.1:PORT/envs/catch. */
  url: string;
  /** Every delay applied so far (ms), in send order. */
  delays: number[];
  close(): Promise<void>;
}

/** Starts a relay for `upstream` (an http(s) base URL, path included); clients use `relay.url`. */
export async function startLatencyRelay(upstream: string, profile: LatencyProfile = DEFAULT_LATENCY): Promise<LatencyRelay> {
  const base = new URL(upstream);
  const delays: number[] = [];
  const sockets = new Set<WebSocket>();
  const server = http.createServer((req, res) => {
    // Plain HTTP: forwarded as is (same path), no delay.
    const target = new URL(req.url ?? '/', base.origin);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      fetch(target, { method: req.method, headers: { 'content-type': req.headers['content-type'] ?? 'application/json' }, body: chunks.length > 0 ? Buffer.concat(chunks) : undefined })
        .then(async (r) => {
          res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
          res.end(Buffer.from(await r.arrayBuffer()));
        })
        .catch((err: unknown) => {
          res.writeHead(502, { 'content-type': 'text/plain' });
          res.end(`relay: upstream failed: ${err instanceof Error ? err.message : String(err)}`);
        });
    });
  });
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  wss.on('connection', (client, req) => {
    const wsOrigin = base.origin.replace(/^http/, 'ws');
    const up = new WebSocket(new URL(req.url ?? '/', wsOrigin), { perMessageDeflate: false });
    sockets.add(client).add(up);
    const toUpstream: { data: RawData; isBinary: boolean }[] = [];
    let sessionKey: number | null = null;
    let replies = 0;
    let lastSendAt = 0;
    /** The last held-back reply's delivery: a close goes after it (a timer of its own could fire first, Date.now() having ticked). */
    let delivered: Promise<void> = Promise.resolve();
    client.on('message', (data, isBinary) => {
      if (sessionKey === null) sessionKey = textHash(data.toString());
      if (up.readyState === WebSocket.OPEN) up.send(data, { binary: isBinary });
      else toUpstream.push({ data, isBinary });
    });
    up.on('open', () => {
      for (const m of toUpstream.splice(0)) up.send(m.data, { binary: m.isBinary });
    });
    up.on('message', (data, isBinary) => {
      const delay = replyDelayMs(profile, sessionKey ?? 0, replies++);
      delays.push(delay);
      // In order per session: a reply never overtakes an earlier, slower one.
      const sendAt = Math.max(lastSendAt, Date.now() + delay);
      lastSendAt = sendAt;
      delivered = new Promise<void>((resolve) => setTimeout(() => {
        if (client.readyState === WebSocket.OPEN) client.send(data, { binary: isBinary });
        resolve();
      }, sendAt - Date.now()));
    });
    const closeBoth = (code?: number) => {
      const c = code && code >= 1000 && code < 5000 && code !== 1005 && code !== 1006 ? code : 1000;
      for (const s of [client, up]) if (s.readyState === WebSocket.OPEN || s.readyState === WebSocket.CONNECTING) s.close(c);
      sockets.delete(client);
      sockets.delete(up);
    };
    // A close waits behind the replies still held back, so the client sees them first.
    up.on('close', (code) => void delivered.then(() => closeBoth(code)));
    client.on('close', (code) => closeBoth(code));
    up.on('error', () => closeBoth(1011));
    client.on('error', () => closeBoth(1011));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${base.pathname.replace(/\/$/, '')}`,
    delays,
    close: async () => {
      for (const s of sockets) s.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
