// Soak with injected faults: a fixed number of sessions through a `webgrpo env-server` process, to
// its built-in echo and through its proxy to an upstream that misbehaves on purpose. Clients reset
// mid-session, vanish while the upstream is dialing, or close without a word; the upstream dies mid-
// session, refuses handshakes, sends garbage, stalls, and is shut down for a while. At the end
// nothing may be left: no session, no queued socket, no upstream socket, no extra descriptor.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { normalEchoSession, sessionCounts, settles, startServerProcess, type ServerProcess } from './server-process.ts';

const SESSIONS = Number(process.env.SOAK_SESSIONS ?? 400);
const CONCURRENCY = 16;

/** Seeded PRNG (mulberry32), so a failing soak replays. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type UpstreamFault = 'none' | 'die-mid' | 'garbage' | 'stall' | 'refuse';
const upstreamFaults: UpstreamFault[] = [];

let upstream: WebSocketServer | null = null;
let upstreamPort = 0;
let server: ServerProcess;

/** A tiny OpenEnv-ish upstream: answers reset/step like echo unless told to fail this connection. */
async function startUpstream(port: number): Promise<void> {
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port,
    verifyClient: (_info, done) => {
      const fault = upstreamFaults.shift() ?? 'none';
      if (fault === 'refuse') return done(false, 503, 'refused on purpose');
      pendingFault = fault;
      done(true);
    },
  });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  upstreamPort = (wss.address() as net.AddressInfo).port;
  wss.on('connection', (ws) => {
    const fault = pendingFault;
    let seen = 0;
    ws.on('error', () => {});
    ws.on('message', (data) => {
      seen++;
      const msg = JSON.parse(data.toString()) as { type: string; data?: { message?: string } };
      if (fault === 'die-mid' && seen === 2) return void ws.terminate();
      if (fault === 'garbage' && seen === 2) {
        ws.send(Buffer.from([0xff, 0x00, 0x13]), { binary: true });
        return void ws.close(1011, 'garbage and gone');
      }
      if (fault === 'stall' && seen === 2) return; // never answers: the proxy's timeout must end it
      if (msg.type === 'close') return void ws.close(1000);
      const text = msg.data?.message ?? 'ready';
      ws.send(JSON.stringify({ type: 'observation', data: { observation: { echoed_message: text }, reward: 0, done: false } }));
    });
  });
  upstream = wss;
}
let pendingFault: UpstreamFault = 'none';

async function stopUpstream(): Promise<void> {
  const wss = upstream;
  upstream = null;
  if (!wss) return;
  for (const c of wss.clients) c.terminate();
  await new Promise<void>((r) => wss.close(() => r()));
}

beforeAll(async () => {
  await startUpstream(0);
  server = await startServerProcess('env-server', ['--upstream', `up=http://127.0.0.1:${upstreamPort}`, '--proxy-session-timeout', '1', '--max-concurrent-envs', '8', '--queue', '--queue-timeout', '30']);
}, 90_000);

afterAll(async () => {
  await server?.stop();
  await stopUpstream();
});

type ClientFault = 'none' | 'reset-mid' | 'reset-at-once' | 'silent-close';
type Outcome = 'completed' | 'server-ended' | 'client-fault';

/** One session; resolves how it ended, rejects if it hangs. */
const stages = new Map<number, string>();
async function session(n: number, env: 'echo' | 'up', fault: ClientFault): Promise<Outcome> {
  const stage = (s: string) => stages.set(n, s);
  stage('connecting');
  const ws = new WebSocket(`${server.url.replace(/^http/, 'ws')}/envs/${env}/ws`);
  const frames: any[] = [];
  let wake: () => void = () => {};
  ws.on('message', (d, binary) => {
    frames.push(binary ? { binary: true } : JSON.parse(d.toString()));
    wake();
  });
  ws.on('error', () => {});
  const closed = new Promise<number>((r) => ws.once('close', (code) => {
    r(code);
    wake();
  }));
  const opened = await new Promise<boolean>((r) => {
    ws.once('open', () => r(true));
    ws.once('error', () => r(false));
  });
  if (!opened) throw new Error('handshake failed');
  stage('open');
  const socket = (ws as unknown as { _socket: net.Socket })._socket;
  // After a reset the client's own 'close' can lag (ws drains its parser first); only the server matters.
  const clientGone = () => Promise.race([closed, new Promise((r) => setTimeout(r, 1000))]).then(() => ws.terminate());
  if (fault === 'reset-at-once') {
    ws.send('{"type":"reset","data":{}}');
    socket.resetAndDestroy();
    stage('reset sent');
    await clientGone();
    return 'client-fault';
  }
  const reply = async (): Promise<any | null> => {
    const deadline = Date.now() + 15_000;
    while (frames.length === 0) {
      if (ws.readyState === WebSocket.CLOSED) return null;
      if (Date.now() > deadline) throw new Error(`session to ${env} hung`);
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 100);
      });
    }
    return frames.shift();
  };
  for (const [i, frame] of ['{"type":"reset","data":{}}', '{"type":"step","data":{"message":"soak"}}', '{"type":"step","data":{"message":"again"}}'].entries()) {
    if (ws.readyState !== WebSocket.OPEN) break;
    ws.send(frame);
    if (i === 1 && fault === 'reset-mid') {
      socket.resetAndDestroy();
      await clientGone();
      return 'client-fault';
    }
    const got = await reply();
    if (got === null || got.type === 'error' || got.binary) {
      // The server (or the upstream through it) ended the session: it must say so and close.
      await Promise.race([closed, new Promise((_, rej) => setTimeout(() => rej(new Error('ended session not closed')), 15_000))]);
      return 'server-ended';
    }
    if (got.type !== 'observation') throw new Error(`unexpected frame ${JSON.stringify(got)}`);
  }
  if (fault === 'silent-close') ws.terminate();
  else ws.send('{"type":"close"}');
  await Promise.race([closed, new Promise((_, rej) => setTimeout(() => rej(new Error('close not answered')), 15_000))]);
  return fault === 'silent-close' ? 'client-fault' : 'completed';
}

describe('soak with injected faults', () => {
  it(`runs ${SESSIONS} sessions through faults and leaks nothing`, async () => {
    await normalEchoSession(server.url);
    const baselineFds = server.fdCount();
    const random = prng(9);
    const tally = { sessions: 0, completed: 0, serverEnded: 0, clientFaults: 0, upstreamFaults: 0, upstreamOutages: 0 };
    let next = 0;
    const worker = async () => {
      while (next < SESSIONS) {
        const n = next++;
        // An upstream outage: down for sessions 150..189, every dial refused meanwhile.
        if (n === 150) {
          tally.upstreamOutages++;
          await stopUpstream();
        }
        if (n === 190) await startUpstream(upstreamPort);
        const env = random() < 0.6 ? 'up' : 'echo';
        const r = random();
        const clientFault: ClientFault = r < 0.15 ? 'reset-mid' : r < 0.25 ? 'reset-at-once' : r < 0.32 ? 'silent-close' : 'none';
        if (env === 'up') {
          const u = random();
          const fault: UpstreamFault = u < 0.1 ? 'die-mid' : u < 0.18 ? 'garbage' : u < 0.22 ? 'stall' : u < 0.3 ? 'refuse' : 'none';
          if (fault !== 'none') tally.upstreamFaults++;
          upstreamFaults.push(fault);
        }
        tally.sessions++;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const outcome = await Promise.race([
          session(n, env, clientFault),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`session ${n} (${env}, client ${clientFault}) hung at ${stages.get(n)}; server: ${JSON.stringify(server.stderr().split('\n').filter((l) => l.includes(`#`)).slice(-5))}`)), 40_000);
          }),
        ]).finally(() => clearTimeout(timer));
        if (outcome === 'completed') tally.completed++;
        else if (outcome === 'server-ended') tally.serverEnded++;
        else tally.clientFaults++;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));

    expect(server.exited(), server.stderr().slice(-2000)).toBeNull();
    await normalEchoSession(server.url);
    const drained = await settles(async () => {
      const s = await sessionCounts(server.url);
      return s.active === 0 && s.queued === 0 && (upstream?.clients.size ?? 0) === 0;
    }, 15_000);
    const s = await sessionCounts(server.url);
    const leaks = s.active + s.queued + (upstream?.clients.size ?? 0);
    expect(await settles(() => server.fdCount() <= baselineFds + 4)).toBe(true);
    console.log(JSON.stringify({ soak: { ...tally, leaks, fds: { baseline: baselineFds, end: server.fdCount() } } }));
    expect(drained).toBe(true);
    expect(leaks).toBe(0);
    expect(tally.completed).toBeGreaterThan(SESSIONS / 4);
    expect(tally.serverEnded).toBeGreaterThan(0);
  }, 240_000);
});
