// Property-based fuzzing (fast-check) of a real `webgrpo start` process: random, deep, huge and
// truncated frames and requests at /ws, /mcp, the env HTTP routes, the run store and the raw TCP
// port, with random Origin, Host and Sec-Fetch-Site headers. The property is "the process is still
// alive" after every input, and "only the own origin or none passes the origin policy, only a
// served Host gets past the allowlist" after every request; after every batch the same
// process must also run a normal session, and its descriptors, sessions and RSS must be back within
// bounds. Seeded, so a failure replays; fast-check shrinks it to the smallest input that kills.
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { fakeDist, normalEchoSession, sessionCounts, settles, startServerProcess, tempDir, type ServerProcess } from './server-process.ts';

const SEED = 20261130;
const BATCHES = 10;
const PER_BATCH = 50;
const MiB = 1024 * 1024;

let work: ReturnType<typeof tempDir>;
let server: ServerProcess;
let runId = '';
let runToken = '';

beforeAll(async () => {
  work = tempDir('webgrpo-fuzz-');
  fakeDist(path.join(work.dir, 'dist'), 2, 256);
  server = await startServerProcess('start', ['--data', path.join(work.dir, 'data'), '--dist', path.join(work.dir, 'dist'), '--max-message-bytes', String(2 * MiB), '--mcp-session-timeout', '0.5']);
  const created = (await (
    await fetch(`${server.url}/api/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"config":{},"model":{},"env":{}}' })
  ).json()) as { id: string; writeToken: string };
  runId = created.id;
  runToken = created.writeToken;
}, 90_000);

afterAll(async () => {
  await server?.stop();
  work?.cleanup();
});

// ---- what is thrown -------------------------------------------------------------------------

const deep = fc.tuple(fc.integer({ min: 1, max: 5000 }), fc.constantFrom('[', '{"a":'), fc.boolean()).map(([n, open, truncated]) => {
  const close = open === '[' ? ']' : '}';
  return open.repeat(n) + (open === '[' ? '' : '1') + (truncated ? '' : close.repeat(n));
});
const huge = fc.constantFrom(64 * 1024, MiB, 3 * MiB).map((n) => `{"type":"step","data":{"message":"${'h'.repeat(n)}"}}`);
/** BrowserGym action text: its calls with hostile arguments, unbalanced or deep nesting, garbage. */
const browserGymAction = fc.oneof(
  fc.constantFrom(
    "click('13')", "fill('13', 'x')", "goto('file:///etc/passwd')", "goto('chrome://version')", "goto('http://127.0.0.1:1/')",
    "upload_file('13', '/etc/passwd')", 'new_tab()', 'tab_close()', 'tab_focus(99)', "send_msg_to_user('hi')", 'noop(1e9)', 'scroll(0, 1e308)',
    "press('13', 'Control+W')", "click('13', button='middle')", 'click(', "click('13'", 'click(((((((', '"""',
  ),
  fc.integer({ min: 1, max: 3000 }).map((n) => `click(${'['.repeat(n)}`),
  fc.tuple(fc.constantFrom('click', 'fill', 'goto', 'hover', 'select_option', 'x'), fc.array(fc.oneof(fc.string({ maxLength: 30 }).map((t) => JSON.stringify(t)), fc.double().map(String)), { maxLength: 3 })).map(([name, args]) => `${name}(${args.join(', ')})`),
  fc.string({ unit: 'binary', maxLength: 100 }),
);
const validFrame = fc.oneof(
  fc.constant('{"type":"reset","data":{}}'),
  fc.constant('{"type":"state"}'),
  fc.constant('{"type":"close"}'),
  fc.jsonValue({ maxDepth: 4 }).map((data) => JSON.stringify({ type: 'step', data })),
  fc.jsonValue({ maxDepth: 4 }).map((data) => JSON.stringify({ type: 'reset', data })),
  fc.record({ message: fc.string({ unit: 'grapheme', maxLength: 50 }) }).map((data) => JSON.stringify({ type: 'step', data })),
  fc.integer({ min: -2, max: 5 }).map((a) => JSON.stringify({ type: 'step', data: { action_id: a } })),
  fc.jsonValue({ maxDepth: 3 }).map((x) => JSON.stringify({ type: 'mcp', data: { jsonrpc: '2.0', method: 'openenv/session/close', params: { session_id: x }, id: 1 } })),
  fc.oneof(fc.constantFrom('click-test', 'enter-text', 'nope', ''), fc.string({ maxLength: 20 })).map((task_name) => JSON.stringify({ type: 'reset', data: { task_name, seed: 1 } })),
  browserGymAction.map((action_str) => JSON.stringify({ type: 'step', data: { action_str } })),
);
/** Any text a client could send: JSON-ish, garbage, truncated valid frames, deep, now and then huge. */
const textFrame = fc.oneof(
  { arbitrary: validFrame, weight: 6 },
  { arbitrary: validFrame.chain((f) => fc.integer({ min: 0, max: f.length }).map((n) => f.slice(0, n))), weight: 2 },
  { arbitrary: fc.jsonValue({ maxDepth: 5 }).map((v) => JSON.stringify(v)), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 200 }), weight: 2 },
  { arbitrary: deep.map((d) => `{"type":"step","data":{"message":${d}}}`), weight: 2 },
  { arbitrary: deep, weight: 1 },
  { arbitrary: huge, weight: 1 },
);
const wsFrame = fc.oneof({ arbitrary: textFrame.map((text) => ({ text, binary: false })), weight: 9 }, { arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => ({ text: Buffer.from(b).toString('latin1'), binary: true })), weight: 1 });

const wsInput = fc.record({
  kind: fc.constant('ws' as const),
  // A browsergym session opens a browser context: one route in ten, so the run stays short.
  route: fc.oneof({ arbitrary: fc.constantFrom('/envs/echo/ws', '/envs/catch/ws', '/envs/wordle/ws', '/envs/echo/mcp', '/envs/catch/mcp'), weight: 9 }, { arbitrary: fc.constant('/envs/browsergym/ws'), weight: 1 }),
  frames: fc.array(wsFrame, { minLength: 1, maxLength: 8 }),
  /** How the client leaves: close handshake, TCP reset, or wait for the server. */
  exit: fc.constantFrom('close', 'reset', 'linger'),
  readReplies: fc.boolean(),
  origin: fc.constantFrom(undefined, undefined, undefined, 'http://evil.example', 'null', 'SELF', 'http://127.0.0.1:1'),
});

const body = fc.oneof(
  fc.constant(undefined),
  textFrame,
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ action: v })),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ jsonrpc: '2.0', method: 'openenv/session/create', params: v, id: 1 })),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ format: 'webgrpo-run', version: 1, run: { config: {}, model: {}, env: {} }, steps: [{ step: 0, metrics: v }], rollouts: [] })),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ step: v, metrics: { reward: 1 }, rollouts: [v] })),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ files: [{ name: v, base64: v }] })),
  fc.tuple(fc.constantFrom('adapter_model.safetensors', '../x', '', '.', 'a/b', 'x'.repeat(300)), fc.constantFrom('AAAA', '!!!', '', '='.repeat(9))).map(([name, base64]) => JSON.stringify({ files: [{ name, base64 }, { name, base64 }] })),
);
const segment = fc.oneof(fc.constantFrom('%', '%zz', '%E0%A4%A', '..', '%2e%2e', '', 'import', 'steps', 'status', 'rollouts', 'export', 'artifacts', 'adapter', 'model', 'checkpoint', 'RUN'), fc.string({ maxLength: 12 }).map(encodeURIComponent));
const httpInput = fc.record({
  kind: fc.constant('http' as const),
  method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'HEAD'),
  path: fc.oneof(
    fc.constantFrom('/envs/echo/reset', '/envs/echo/step', '/envs/catch/step', '/envs/wordle/reset', '/envs/echo/mcp', '/envs/echo/state', '/envs/echo/schema', '/health', '/envs', '/', '/index.html', '/assets/chunk-0.js', '/api/runs', '/api/runs/list', '/api/runs/import', '/api/runs/RUN', '/api/runs/RUN/page', '/api/runs/RUN?share=x', '/api/runs/RUN/steps', '/api/runs/RUN/status', '/api/runs/RUN/export',
      '/api/runs/RUN/artifacts', '/api/runs/RUN/artifacts/adapter', '/api/runs/RUN/artifacts/adapter/adapter_config.json', '/api/runs/RUN/artifacts/..%2F..%2Fetc/passwd',
      '/envs/browsergym/reset', '/envs/browsergym/step', '/envs/browsergym/schema'),
    fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => `/${parts.join('/')}`),
    fc.array(segment, { minLength: 1, maxLength: 3 }).map((parts) => `/api/runs/${parts.join('/')}`),
  ),
  query: fc.oneof(fc.constant(''), fc.constantFrom('?last=abc', '?step=-1', '?after=1e999', '?last=3', '?step=0', '?after=%', '?limit=0', '?limit=-1', '?limit=1e9', '?limit=2&offset=1', '?offset=abc', '?offset=99999999999999999999', '?limit=1&limit=2'), fc.string({ maxLength: 20 }).map((q) => `?${q}`)),
  body,
  contentType: fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8', ''),
  origin: fc.constantFrom(undefined, 'http://evil.example', 'null', 'SELF', 'http://127.0.0.1:1', 'http://localhost'),
  /** A Host header (sent with node:http, as fetch keeps its own); PORT is the server's. */
  host: fc.constantFrom(undefined, undefined, undefined, 'evil.example:PORT', 'localhost:PORT', '[::1]:PORT', '127.9.9.9', 'evil.example', '127.0.0.1.nip.io:PORT', 'x@127.0.0.1'),
  fetchSite: fc.constantFrom(undefined, undefined, 'same-origin', 'same-site', 'cross-site', 'none'),
  token: fc.boolean(),
  abortAfterHeaders: fc.boolean(),
});

const rawInput = fc.record({
  kind: fc.constant('raw' as const),
  bytes: fc.oneof(
    fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
    fc.constantFrom('GET /envs/echo/ws HTTP/1.1\r\nUpgrade: websocket\r\n', 'GET // HTTP/1.1\r\n\r\n', 'POST /api/runs HTTP/1.1\r\nContent-Length: 99999\r\n\r\n{"a":', 'GET /envs/%/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n').map((s) => Buffer.from(s)),
  ),
  reset: fc.boolean(),
});

type Input = typeof wsInput extends fc.Arbitrary<infer T> ? T : never;
type HttpInput = typeof httpInput extends fc.Arbitrary<infer T> ? T : never;
type RawInput = typeof rawInput extends fc.Arbitrary<infer T> ? T : never;

// ---- how it is thrown -----------------------------------------------------------------------

const counts = { inputs: 0, wsFrames: 0, httpRequests: 0, rawConnections: 0, sessions: 0, browserGymSessions: 0, browserGymPages: 0 };

/** What the policy must do with these headers: 421 for a Host not served, 403 for a foreign page, else nothing. */
function expectedRefusal(headers: { origin?: string; host?: string; fetchSite?: string }): 421 | 403 | null {
  if (headers.host !== undefined && !/^(localhost|\[::1\]|127\.\d+\.\d+\.\d+)(:\d+)?$/.test(headers.host)) return 421;
  if (headers.fetchSite !== undefined && headers.fetchSite !== 'same-origin' && headers.fetchSite !== 'none') return 403;
  if (headers.origin === undefined) return null;
  // Own origin: http://<the Host it was sent to>.
  return headers.origin === `http://${headers.host ?? `127.0.0.1:${server.port}`}` ? null : 403;
}

async function fireWs(input: Input): Promise<void> {
  counts.sessions++;
  const origin = input.origin === 'SELF' ? server.url : input.origin;
  const ws = new WebSocket(`${server.url.replace(/^http/, 'ws')}${input.route}`, origin === undefined ? {} : { origin });
  ws.on('error', () => {});
  const closed = new Promise<void>((r) => ws.once('close', () => r()));
  const opened = await new Promise<boolean>((r) => {
    ws.once('open', () => r(true));
    ws.once('error', () => r(false));
  });
  // A page on another origin never gets a socket.
  if (expectedRefusal({ origin }) !== null) expect(opened, `${input.route} from ${origin}`).toBe(false);
  if (!opened) return;
  if (input.route.includes('browsergym')) {
    // A real page first (the browser may still be starting), so the fuzzed actions reach one.
    counts.browserGymSessions++;
    const first = new Promise<void>((r) => {
      ws.once('message', () => r());
      setTimeout(r, 20_000);
    });
    ws.on('message', (data) => void (String(data).includes('RootWebArea') && counts.browserGymPages++));
    ws.send('{"type":"reset","data":{"task_name":"click-test"}}');
    await first;
  }
  const socket = (ws as unknown as { _socket: net.Socket })._socket;
  if (!input.readReplies) socket.pause();
  for (const f of input.frames) {
    if (ws.readyState !== WebSocket.OPEN) break;
    counts.wsFrames++;
    ws.send(f.binary ? Buffer.from(f.text, 'latin1') : f.text, { binary: f.binary });
  }
  await new Promise((r) => setTimeout(r, 20));
  socket.resume();
  if (input.exit === 'reset') socket.resetAndDestroy();
  else if (input.exit === 'close') ws.close();
  else setTimeout(() => ws.terminate(), 300);
  await Promise.race([closed, new Promise((r) => setTimeout(r, 2000))]);
  ws.terminate();
}

async function fireHttp(input: HttpInput): Promise<void> {
  counts.httpRequests++;
  const target = `${server.url}${input.path.replace(/RUN/g, runId)}${input.query}`;
  const headers: Record<string, string> = {};
  if (input.contentType) headers['content-type'] = input.contentType;
  if (input.origin) headers.origin = input.origin === 'SELF' ? server.url : input.origin;
  if (input.fetchSite) headers['sec-fetch-site'] = input.fetchSite;
  if (input.token) headers['x-webgrpo-write-token'] = runToken;
  const hasBody = input.body !== undefined && input.method !== 'GET' && input.method !== 'HEAD';
  const host = input.host?.replace('PORT', String(server.port));
  const guarded = input.method !== 'GET' && input.method !== 'HEAD' ? true : /^\/(envs|api)\//.test(new URL(target).pathname);
  const refusal = expectedRefusal({ origin: headers.origin, host, fetchSite: input.fetchSite });
  const checkPolicy = (status: number, text: string, what: string) => {
    if (status === 0) return; // the connection failed (a request Node itself refuses)
    // The policy's 403 (a HEAD reply has no body to say so; no other HEAD is a 403).
    const refusedByPolicy = status === 403 && (input.method === 'HEAD' || text.startsWith('{"detail":"Refused a'));
    if (refusal === 421) expect(status, what).toBe(421);
    else if (refusal === 403 && guarded) expect(refusedByPolicy, what).toBe(true);
    else expect(status === 421 || refusedByPolicy, what).toBe(false);
  };
  if (host !== undefined) {
    const reply = await requestWithHost(target, input.method, { ...headers, host }, hasBody ? input.body : undefined);
    checkPolicy(reply.status, reply.text, `${input.method} ${target} Host: ${host} ${JSON.stringify(headers)}`);
    return;
  }
  const abort = new AbortController();
  try {
    const reply = await fetch(target, { method: input.method, headers, body: hasBody ? input.body : undefined, signal: abort.signal });
    if (input.abortAfterHeaders) abort.abort();
    // Only the own origin or none passes; nothing else is refused by the policy.
    else checkPolicy(reply.status, await reply.text(), `${input.method} ${target} ${JSON.stringify(headers)}`);
    // The server's own failures are bugs too: nothing a client sends may give a 5xx, except an
    // env raising in an HTTP reset/step, which OpenEnv answers with a 500 (spec §2).
    if (!/^\/envs\/\w+\/(reset|step)$/.test(input.path)) expect(reply.status, `${input.method} ${target}`).toBeLessThan(500);
  } catch (err) {
    if ((err as Error).name !== 'AbortError' && !String((err as Error).message).includes('fetch failed')) throw err;
  }
}

/** One request with this exact Host header (fetch would send its own); status 0 when the connection failed. */
function requestWithHost(target: string, method: string, headers: Record<string, string>, body: string | undefined): Promise<{ status: number; text: string }> {
  const url = new URL(target);
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: server.port, method, path: url.pathname + url.search, headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', () => resolve({ status: 0, text }));
    });
    req.on('error', () => resolve({ status: 0, text: '' }));
    req.setTimeout(10_000, () => req.destroy());
    req.end(body);
  });
}

async function fireRaw(input: RawInput): Promise<void> {
  counts.rawConnections++;
  await new Promise<void>((resolve) => {
    const socket = net.connect(server.port, '127.0.0.1', () => {
      socket.write(input.bytes);
      setTimeout(() => (input.reset ? socket.resetAndDestroy() : socket.end()), 10);
    });
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.on('close', () => resolve());
    setTimeout(() => socket.destroy(), 3000);
  });
}

const anyInput = fc.oneof({ arbitrary: wsInput, weight: 5 }, { arbitrary: httpInput, weight: 4 }, { arbitrary: rawInput, weight: 1 });

describe('fuzzing webgrpo start', () => {
  it(`survives ${BATCHES} × ${PER_BATCH} random inputs with sessions, descriptors and RSS bounded`, async () => {
    await normalEchoSession(server.url);
    const baseline = { fds: server.fdCount(), rss: server.rssMiB() };
    let peakFds = baseline.fds;
    let peakRss = baseline.rss;
    for (let batch = 0; batch < BATCHES; batch++) {
      await fc.assert(
        fc.asyncProperty(anyInput, async (input) => {
          counts.inputs++;
          if (input.kind === 'ws') await fireWs(input);
          else if (input.kind === 'http') await fireHttp(input);
          else await fireRaw(input);
          expect(server.exited(), server.stderr().slice(-2000)).toBeNull();
        }),
        { numRuns: PER_BATCH, seed: SEED + batch, endOnFailure: true },
      );
      // After each batch: alive, a normal session works, nothing left behind.
      expect(server.exited()).toBeNull();
      await normalEchoSession(server.url);
      expect(await settles(async () => {
        const s = await sessionCounts(server.url);
        return s.active === 0 && s.queued === 0;
      })).toBe(true);
      expect(await settles(() => server.fdCount() <= baseline.fds + 8)).toBe(true);
      peakFds = Math.max(peakFds, server.fdCount());
      peakRss = Math.max(peakRss, server.rssMiB());
      expect(server.rssMiB() - baseline.rss).toBeLessThan(250);
    }
    const sessions = await sessionCounts(server.url);
    expect(counts.browserGymPages, 'no fuzzed browsergym session reached a real page').toBeGreaterThan(0);
    console.log(
      JSON.stringify({
        fuzz: { ...counts, batches: BATCHES, leaks: sessions.active + sessions.queued, fds: { baseline: baseline.fds, peakAfterBatch: peakFds, end: server.fdCount() }, rssMiB: { baseline: Math.round(baseline.rss), peakAfterBatch: Math.round(peakRss) } },
      }),
    );
  }, 300_000);
});
