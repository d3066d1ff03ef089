// The webgrpo env-server: every built-in env and every configured upstream as a full OpenEnv app
// under `/envs/<name>` (HTTP routes + `/ws`), plus `GET /health` and `GET /envs`. Node http + `ws`.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { BuiltinEnvHost } from './builtin-host.ts';
import { Downstream } from './downstream.ts';
import { BUILTIN_ENVS } from './envs/index.ts';
import type { AnyEnvInstance, EnvDefinition } from './envs/types.ts';
import type { EnvHost, EnvStats } from './host.ts';
import { parseRequestUrl, sendJson, sendMethodNotAllowed, sendNotFound } from './http-util.ts';
import { DEFAULT_MAX_JSON_DEPTH } from './json-limits.ts';
import { createRequestPolicy, type Refusal } from './origin-policy.ts';
import { ProxyHost } from './proxy.ts';
import { DEFAULT_MAX_REPLY_BACKLOG_BYTES, ReplyBacklog } from './reply-backlog.ts';

export type ExtraHandler = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

export interface EnvServerOptions {
  /** Built-in envs by path name (default: echo, catch, wordle). Pass `{}` for a proxy-only server. */
  envs?: Record<string, EnvDefinition<AnyEnvInstance>>;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** Sessions per env (per replica for upstreams). Default: $MAX_CONCURRENT_ENVS, else 64. */
  maxConcurrentEnvs?: number;
  /** Over the cap, hold new sockets until a slot frees (instead of refusing at once). */
  queue?: boolean;
  /** Longest wait in the queue, in ms (default 30 000). */
  queueTimeoutMs?: number;
  /** Idle timeout for built-in sessions, in s; null/undefined = off (OpenEnv's default). */
  sessionTimeoutSec?: number | null;
  /**
   * Idle timeout for proxied sessions, in s. Default: `sessionTimeoutSec` (off unless set): the
   * heartbeat already drops dead clients, and a live one may be slow to generate.
   */
  proxySessionTimeoutSec?: number | null;
  /** Largest accepted client message / HTTP body, in bytes (default 16 MiB, as uvicorn). */
  maxMessageBytes?: number;
  /** Bytes of frames kept for a socket whose session has not started (queued, proxy dialing); default 1 MiB. */
  maxPendingBytes?: number;
  /** Unread reply bytes at which a client that stops reading is dropped (default 16 MiB). */
  maxSendBufferBytes?: number;
  /** Unsent reply bytes of all clients together past which a reply is refused with an error frame (default 256 MiB). */
  maxReplyBacklogBytes?: number;
  /** Deepest nesting accepted in client JSON (default 256); deeper is refused before parsing. */
  maxJsonDepth?: number;
  /** Idle timeout for sessions made by `openenv/session/create` over HTTP `/mcp`, in s (default 60: no socket tells when their client is gone). */
  mcpSessionTimeoutSec?: number;
  /** Remote OpenEnv servers: name → replica base URLs, served at `/envs/<name>`. */
  upstreams?: Record<string, string[]>;
  /** Bound on dialing an upstream (WS handshake, forwarded HTTP), in ms (default 10 000). */
  upstreamConnectTimeoutMs?: number;
  /** WebSocket ping period in ms; a peer that misses a pong is dropped (default 20 000, as uvicorn). */
  heartbeatMs?: number;
  /** Warnings, refusals and one line per session open/close (with the reason). Default: silent. */
  logger?: (line: string) => void;
  /** Whether the session open/close lines reach the logger (default true; the CLI's `--verbose`). */
  logSessions?: boolean;
  /** Host names served besides loopback and the bound host (`--allow-host`); others get 421. */
  allowHosts?: string[];
  /** Web page origins trusted besides the server's own (`--allow-origin`), e.g. `http://localhost:5173`. */
  allowOrigins?: string[];
  /** Tried in order before the 404, for routes outside `/envs` (run store, static files). */
  extraHandlers?: ExtraHandler[];
}

export interface ServerStats {
  envs: Record<string, EnvStats>;
  /** Sum over envs of `active` (slots in use). */
  activeSessions: number;
  queuedSessions: number;
  /** Client WebSockets still open on the server, all paths. */
  openSockets: number;
}

export interface EnvServer {
  /** `http://host:port`; envs are at `${url}/envs/<name>`. */
  url: string;
  port: number;
  stats(): ServerStats;
  /** Ends every session (close 1001), stops listening. */
  close(): Promise<void>;
}

const DEFAULT_CAP = 64;
const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function positiveInt(value: unknown, what: string): number {
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) throw new Error(`${what} must be an integer ≥ 1, got ${JSON.stringify(value)}`);
  return n;
}

function positiveNumber(value: unknown, what: string): number {
  if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value)) throw new Error(`${what} must be a number > 0, got ${JSON.stringify(value)}`);
  return value;
}

/** Resolves the cap: explicit option, else $MAX_CONCURRENT_ENVS, else 64. */
export function resolveMaxConcurrentEnvs(option: number | undefined, env: NodeJS.ProcessEnv = process.env): number {
  if (option !== undefined) return positiveInt(option, 'maxConcurrentEnvs');
  if (env.MAX_CONCURRENT_ENVS !== undefined && env.MAX_CONCURRENT_ENVS !== '') return positiveInt(env.MAX_CONCURRENT_ENVS, 'MAX_CONCURRENT_ENVS');
  return DEFAULT_CAP;
}

/**
 * What every response carries unless its handler says otherwise (only the app's own files do,
 * static.ts): whatever the env-server emits that is not the app (an upstream's /docs, any proxied
 * reply, the built-in /docs, JSON) renders, if a browser renders it at all, in a sandbox with an
 * opaque origin and no scripts. So an upstream's HTML never runs as this origin: it cannot read the
 * app's localStorage (where the run write tokens are), and what it sends says `Origin: null`, which
 * the origin policy refuses. That is why the tokens can stay in localStorage: the only pages that
 * share the origin are the app's own.
 */
const DEFAULT_RESPONSE_HEADERS = { 'content-security-policy': 'sandbox', 'x-content-type-options': 'nosniff' };

/** Requests the origin policy applies to: any that may change state or start work, and every read of an env or the run store. */
function needsOriginCheck(method: string | undefined, pathname: string): boolean {
  return (method !== 'GET' && method !== 'HEAD') || pathname.startsWith('/envs/') || pathname.startsWith('/api/');
}

const STATUS_TEXT: Record<Refusal['status'], string> = { 403: '403 Forbidden', 421: '421 Misdirected Request' };

/** Answers an upgrade request that gets no WebSocket, then closes (the socket already has an error listener). */
function rawHttpReply(socket: Duplex, status: string, body: string): void {
  if (socket.destroyed) return;
  socket.end(`HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  // A peer that never reads our reply must not keep the descriptor.
  setTimeout(() => socket.destroy(), 5000).unref();
}

export async function createEnvServer(options: EnvServerOptions): Promise<EnvServer> {
  const maxConcurrentEnvs = resolveMaxConcurrentEnvs(options.maxConcurrentEnvs);
  const maxMessageBytes = positiveInt(options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES, 'maxMessageBytes');
  const downstreamLimits = {
    maxMessageBytes,
    maxPendingBytes: positiveInt(options.maxPendingBytes ?? 1024 * 1024, 'maxPendingBytes'),
    maxSendBufferBytes: positiveInt(options.maxSendBufferBytes ?? DEFAULT_MAX_MESSAGE_BYTES, 'maxSendBufferBytes'),
    replyBacklog: new ReplyBacklog(positiveInt(options.maxReplyBacklogBytes ?? DEFAULT_MAX_REPLY_BACKLOG_BYTES, 'maxReplyBacklogBytes')),
  };
  const maxJsonDepth = positiveInt(options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH, 'maxJsonDepth');
  const mcpSessionTimeoutSec = positiveNumber(options.mcpSessionTimeoutSec ?? 60, 'mcpSessionTimeoutSec');
  const queueTimeoutMs = positiveNumber(options.queueTimeoutMs ?? 30_000, 'queueTimeoutMs');
  const sessionTimeoutSec = options.sessionTimeoutSec == null ? null : positiveNumber(options.sessionTimeoutSec, 'sessionTimeoutSec');
  const proxySessionTimeoutSec =
    options.proxySessionTimeoutSec === undefined ? sessionTimeoutSec : options.proxySessionTimeoutSec === null ? null : positiveNumber(options.proxySessionTimeoutSec, 'proxySessionTimeoutSec');
  const connectTimeoutMs = positiveNumber(options.upstreamConnectTimeoutMs ?? 10_000, 'upstreamConnectTimeoutMs');
  const heartbeatMs = positiveNumber(options.heartbeatMs ?? 20_000, 'heartbeatMs');
  const log = options.logger ?? (() => {});
  const policy = { queue: options.queue ?? false, queueTimeoutMs, logSession: options.logSessions === false ? () => {} : log };
  const requests = createRequestPolicy({ boundHost: options.host ?? '127.0.0.1', allowHosts: options.allowHosts, allowOrigins: options.allowOrigins });

  const hosts = new Map<string, EnvHost>();
  for (const [name, def] of Object.entries(options.envs ?? BUILTIN_ENVS)) {
    if (!NAME.test(name)) throw new Error(`Env name '${name}' is not a valid path segment`);
    hosts.set(name, new BuiltinEnvHost(name, def, { ...policy, maxConcurrentEnvs, sessionTimeoutSec, mcpSessionTimeoutSec, maxMessageBytes, maxJsonDepth, log }));
  }
  for (const [name, replicas] of Object.entries(options.upstreams ?? {})) {
    if (!NAME.test(name)) throw new Error(`Upstream name '${name}' is not a valid path segment`);
    if (hosts.has(name)) throw new Error(`Upstream name '${name}' clashes with a built-in env of the same name`);
    hosts.set(name, new ProxyHost(name, replicas, { ...policy, maxConcurrentEnvs, sessionTimeoutSec: proxySessionTimeoutSec, connectTimeoutMs, maxMessageBytes, maxSendBufferBytes: downstreamLimits.maxSendBufferBytes, log }));
  }

  let nextSessionId = 1;
  const liveSockets = new Set<Downstream>();
  // The hard frame limit sits above maxMessageBytes so that an oversized message still reaches
  // Downstream, which answers with a readable error frame; only absurd frames hit ws's 1009.
  const wss = new WebSocketServer({ noServer: true, maxPayload: maxMessageBytes + Math.max(maxMessageBytes, 1 << 20), perMessageDeflate: false });

  // Every upstream is probed before the server listens: a bad one is a warning now, not a client's surprise.
  const proxies = [...hosts.values()].filter((host): host is ProxyHost => host instanceof ProxyHost);
  const probeTimeoutMs = Math.min(connectTimeoutMs, 3000);
  for (const warnings of await Promise.all(proxies.map((host) => host.probe(probeTimeoutMs)))) for (const w of warnings) log(`warning: ${w}`);

  const envsListing = () => ({
    envs: [...hosts.values()].map((host) => {
      const s = host.stats();
      const reach = host instanceof ProxyHost ? host.reachable() : {};
      return { name: host.name, kind: host.kind, path: `/envs/${host.name}`, active: s.active, queued: s.queued, max_concurrent_envs: s.maxConcurrentEnvs, ...reach };
    }),
  });

  /** `/envs/<name><route>` → [host, route]; route '' for the base path itself. Names are plain, so no decoding. */
  const route = (pathname: string): [EnvHost, string] | null => {
    const match = /^\/envs\/([^/]+)(\/.*)?$/.exec(pathname);
    const host = match ? hosts.get(match[1]) : undefined;
    return host ? [host, match![2] ?? ''] : null;
  };

  const handleRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    for (const [name, value] of Object.entries(DEFAULT_RESPONSE_HEADERS)) res.setHeader(name, value);
    const url = parseRequestUrl(req.url);
    const refusal = requests.hostRefusal(req.headers) ?? (needsOriginCheck(req.method, url?.pathname ?? '') ? requests.originRefusal(req.headers) : null);
    if (refusal) {
      log(`refused ${req.method} ${req.url}: ${refusal.detail}`);
      req.resume();
      return sendJson(res, refusal.status, { detail: refusal.detail });
    }
    if (!url) return sendJson(res, 400, { detail: `Bad request target: ${JSON.stringify(req.url)}` });
    if (url.pathname === '/health' || url.pathname === '/envs') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return sendMethodNotAllowed(res, 'GET');
      return sendJson(res, 200, url.pathname === '/health' ? { status: 'healthy' } : envsListing());
    }
    const target = route(url.pathname);
    if (target) return target[0].handleHttp(req, res, target[1], url.search);
    for (const handler of options.extraHandlers ?? []) {
      if (await handler(req, res)) return;
    }
    sendNotFound(res);
  };

  const server = createServer((req, res) => {
    handleRequest(req, res).catch((err) => {
      log(`http ${req.method} ${req.url}: ${err instanceof Error ? err.message : String(err)}`);
      if (!res.headersSent) sendJson(res, 500, { detail: 'Internal Server Error' });
      else res.destroy();
    });
  });

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Until ws owns it, this raw socket is ours: a reset must not become an unhandled 'error'.
    socket.on('error', () => socket.destroy());
    // Before anything else: a page on another origin must not even get a 101 (no session, no slot).
    const refusal = requests.hostRefusal(req.headers) ?? requests.originRefusal(req.headers);
    if (refusal) {
      log(`refused upgrade ${req.url}: ${refusal.detail}`);
      rawHttpReply(socket, STATUS_TEXT[refusal.status], JSON.stringify({ detail: refusal.detail }));
      return;
    }
    const url = parseRequestUrl(req.url);
    if (!url) {
      rawHttpReply(socket, '400 Bad Request', JSON.stringify({ detail: `Bad request target: ${JSON.stringify(req.url)}` }));
      return;
    }
    const target = route(url.pathname);
    const host = target?.[0];
    const accept =
      target?.[1] === '/ws' ? host!.acceptSocket.bind(host) : target?.[1] === '/mcp' ? host!.acceptMcpSocket?.bind(host) : undefined;
    if (!accept) {
      rawHttpReply(socket, '404 Not Found', JSON.stringify({ detail: 'Not Found' }));
      return;
    }
    // As OpenEnv: accept first (101), then decide about capacity. Unlike OpenEnv (§3.6), the Origin was checked above.
    wss.handleUpgrade(req, socket, head, (ws) => {
      const down = new Downstream(ws, nextSessionId++, downstreamLimits);
      liveSockets.add(down);
      ws.on('close', () => liveSockets.delete(down));
      accept(down);
    });
  });

  // A tick that comes late means this process's event loop was blocked (a trainer in the same process
  // running a long GPU step, a big synchronous job): the pongs of the last pings may be waiting unread in
  // the sockets, so such a tick judges nobody and only pings again; the next tick on time does.
  let lastBeat = Date.now();
  const heartbeat = setInterval(() => {
    const now = Date.now();
    const late = now - lastBeat > heartbeatMs * 1.5;
    lastBeat = now;
    for (const down of liveSockets) {
      if (!down.alive && !late) {
        down.terminate('client went away (no pong: dead peer)');
        continue;
      }
      down.alive = false;
      down.ws.ping();
    }
  }, heartbeatMs);
  heartbeat.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Out of descriptors, accept() fails and the server emits 'error'; it keeps listening, so the
  // process must not die of it.
  server.on('error', (err) => log(`server: ${err.message}`));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('env-server: cannot read the bound address');
  const hostForUrl = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closing: Promise<void> | null = null;
  return {
    url: `http://${hostForUrl}:${address.port}`,
    port: address.port,
    stats(): ServerStats {
      const envs: Record<string, EnvStats> = {};
      let activeSessions = 0;
      let queuedSessions = 0;
      for (const host of hosts.values()) {
        const s = host.stats();
        envs[host.name] = s;
        activeSessions += s.active;
        queuedSessions += s.queued;
      }
      return { envs, activeSessions, queuedSessions, openSockets: liveSockets.size };
    },
    close(): Promise<void> {
      closing ??= (async () => {
        clearInterval(heartbeat);
        for (const host of hosts.values()) host.shutdown();
        const disposed = Promise.all([...hosts.values()].map((host) => host.dispose?.()));
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        // Sockets that ignore our close frame are cut after a grace period.
        const grace = setTimeout(() => {
          for (const down of liveSockets) down.ws.terminate();
        }, 1000);
        await stopped;
        while (liveSockets.size > 0) await new Promise((resolve) => setTimeout(resolve, 10));
        clearTimeout(grace);
        wss.close();
        await disposed;
      })();
      return closing;
    },
  };
}
