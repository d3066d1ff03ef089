// Exposes a remote OpenEnv server (its replicas) at `/envs/<name>` (specs/openenv-protocol.md §8).
// One client socket ↔ one upstream socket, text forwarded verbatim, closes propagated both ways.
// The cap is checked before dialing, so a refusal never touches the upstream. Anything that goes
// wrong upstream reaches the client as a SESSION_ERROR frame naming the upstream, never a hang.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import WebSocket from 'ws';
import { wsUrl } from '../src/openenv/url.ts';
import { admit, type AdmissionPolicy } from './admission.ts';
import type { Downstream } from './downstream.ts';
import { errorFrame, idleTimeoutFrame } from './frames.ts';
import type { EnvHost, EnvStats } from './host.ts';
import { BodyTooLargeError, readBody, sendBodyTooLarge, sendJson } from './http-util.ts';
import { SlotPool } from './slots.ts';
import { fetchFailure, probeReplica, type ReplicaReachability } from './upstream-probe.ts';

export interface ProxyHostOptions extends AdmissionPolicy {
  /** Cap per replica; the name's pool holds this × replicas. */
  maxConcurrentEnvs: number;
  /**
   * Idle timeout in seconds: no frame either way for this long ends the session. null = none: a
   * client that answers the server's pings is alive, however slowly it generates (a small GPU).
   */
  sessionTimeoutSec: number | null;
  /** Bound on the upstream WebSocket handshake and on forwarded HTTP calls, in ms. */
  connectTimeoutMs: number;
  maxMessageBytes: number;
  /** Unsent bytes toward the upstream at which a client flooding a slow upstream is cut off. */
  maxSendBufferBytes: number;
}

/**
 * What is wrong with a replica base URL, checked completely at startup: scheme, host, port range
 * (`:99999` is not a port); null when nothing is. The first client must never be the one to find out.
 */
export function replicaUrlProblem(url: string): string | null {
  if (!/^(https?|wss?):\/\/[^/]/.test(url)) return 'replica URL must be http(s):// or ws(s)://';
  let parsed: URL;
  try {
    parsed = new URL(wsUrl(url));
  } catch {
    return 'replica URL does not parse (host, port 1..65535, characters)';
  }
  if (parsed.hostname === '') return 'replica URL has no host';
  if (parsed.username !== '' || parsed.password !== '') return 'replica URL must not carry credentials';
  if (parsed.search !== '' || parsed.hash !== '') return 'replica URL must not have a query or fragment';
  return null;
}

export function checkReplicaUrl(name: string, url: string): void {
  const problem = replicaUrlProblem(url);
  if (problem) throw new Error(`Upstream '${name}': ${problem}, got '${url}'`);
}

const CLOSE_DESCRIPTIONS: Record<number, string> = {
  1001: 'going away',
  1002: 'protocol error',
  1003: 'unsupported data',
  1005: 'no status code',
  1006: 'connection lost',
  1007: 'invalid payload data',
  1008: 'policy violation',
  1009: 'message too big',
  1011: 'internal error',
  1012: 'service restart',
  1013: 'try again later',
};

/** Close codes a peer may put in its own close frame (RFC 6455 §7.4). */
function sendableCloseCode(code: number | undefined): number {
  return code !== undefined && ((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999)) ? code : 1000;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class ProxyHost implements EnvHost {
  readonly kind = 'proxy';
  private readonly pool: SlotPool;
  private readonly replicaActive: number[];
  /** Probed at startup (probe()), then set by every session's dial and forwarded HTTP call. */
  private readonly reachability: ReplicaReachability[];
  private readonly sockets = new Set<Downstream>();
  private readonly upstreams = new Set<WebSocket>();

  constructor(
    readonly name: string,
    private readonly replicas: string[],
    private readonly opts: ProxyHostOptions,
  ) {
    if (replicas.length === 0) throw new Error(`Upstream '${name}' has no replica URLs`);
    for (const url of replicas) checkReplicaUrl(name, url);
    this.pool = new SlotPool(opts.maxConcurrentEnvs * replicas.length);
    this.replicaActive = replicas.map(() => 0);
    this.reachability = replicas.map(() => ({ reachable: null }));
  }

  /**
   * GET /health and /metadata of every replica (at startup); returns a warning for each replica that
   * is unreachable or does not answer as an OpenEnv server. The server serves the name either way.
   */
  async probe(timeoutMs: number): Promise<string[]> {
    const found = await Promise.all(this.replicas.map((url) => probeReplica(url, timeoutMs)));
    found.forEach((r, i) => (this.reachability[i] = r));
    return found.flatMap((r, i) =>
      r.error === undefined ? [] : [`upstream '${this.name}' replica ${this.replicas[i]} ${r.reachable ? 'answers, but' : 'is unreachable:'} ${r.error}${r.reachable ? '' : '; sessions to it will fail until it answers'}`],
    );
  }

  /** For the `/envs` listing: reachable when a replica is (null until known), and the failing replicas' reasons. */
  reachable(): ReplicaReachability {
    const known = this.reachability.filter((r) => r.reachable !== null);
    const errors = [...new Set(this.reachability.flatMap((r) => (r.error === undefined ? [] : [r.error])))];
    return { reachable: known.length === 0 ? null : known.some((r) => r.reachable), ...(errors.length > 0 ? { error: errors.join('; ') } : {}) };
  }

  stats(): EnvStats {
    return {
      kind: this.kind,
      active: this.pool.active,
      queued: this.pool.queued,
      maxConcurrentEnvs: this.pool.capacity,
      sockets: this.sockets.size,
      upstreamSockets: this.upstreams.size,
      replicas: this.replicas.map((url, i) => ({ url, active: this.replicaActive[i], ...this.reachability[i] })),
    };
  }

  acceptSocket(down: Downstream): void {
    this.sockets.add(down);
    down.onEnd(() => this.sockets.delete(down));
    void admit(down, this.pool, this.opts, this.name).then((admitted) => {
      if (admitted) this.runSession(down);
    });
  }

  shutdown(): void {
    for (const down of [...this.sockets]) down.end('server shutdown', undefined, 1001);
    this.pool.cancelAll();
  }

  /** Least-loaded replica; with the pool below its total, that one is below its own cap. */
  private pickReplica(): number {
    let best = 0;
    for (let i = 1; i < this.replicas.length; i++) if (this.replicaActive[i] < this.replicaActive[best]) best = i;
    return best;
  }

  private runSession(down: Downstream): void {
    const replica = this.pickReplica();
    this.replicaActive[replica]++;
    const url = wsUrl(this.replicas[replica]);
    const label = `${this.name} ${url}`;
    const opened = Date.now();
    let upstream: WebSocket;
    try {
      // followRedirects stays off: a redirect is a failed dial, never a hop to another host. An
      // upstream frame gets the clients' byte limit: ws refuses a larger one from its header, before
      // holding any of it (100 MiB frames to 8 sessions took the server from 155 to 1,554 MiB).
      upstream = new WebSocket(url, { handshakeTimeout: this.opts.connectTimeoutMs, maxPayload: this.opts.maxMessageBytes, perMessageDeflate: false, followRedirects: false });
    } catch (err) {
      // URLs are checked at startup, so this is unexpected; it still ends one session, not the process.
      this.replicaActive[replica]--;
      this.pool.release();
      this.opts.log(`session ${this.name}#${down.id} dial failed: ${url}: ${errorText(err)}`);
      down.end('upstream dial failed', errorFrame('SESSION_ERROR', `Upstream connect failed: ${url}: ${errorText(err)}`, { upstream: `${this.name} ${url}` }));
      return;
    }
    this.upstreams.add(upstream);
    let connected = false;
    let dialError = false;
    /** The upstream sent a frame over --max-message-bytes (ws then closes it with 1009). */
    let frameTooLarge = false;
    /** Requests forwarded and not yet answered: tells "idle" from "upstream stuck". */
    let awaitingReplies = 0;
    const timeoutSec = this.opts.sessionTimeoutSec;
    const idle = timeoutSec === null ? null : setTimeout(() => {
      const frame = awaitingReplies > 0
        ? errorFrame('SESSION_ERROR', `Upstream did not reply within ${timeoutSec} s`, { upstream: label })
        : idleTimeoutFrame(timeoutSec);
      down.end(awaitingReplies > 0 ? 'upstream reply timeout' : 'idle timeout', frame);
    }, timeoutSec * 1000);
    this.opts.logSession(`session open ${this.name}#${down.id} upstream=${url} active=${this.pool.active}/${this.pool.capacity}`);

    const upstreamFailed = (reason: string, message: string) => down.end(reason, errorFrame('SESSION_ERROR', message, { upstream: label }));

    upstream.on('open', () => {
      connected = true;
      this.reachability[replica] = { reachable: true };
      down.setHandler((data, isBinary) => {
        if (upstream.readyState !== WebSocket.OPEN) return;
        // A client that floods an upstream that does not read would pile up here without bound.
        if (upstream.bufferedAmount > this.opts.maxSendBufferBytes) {
          upstreamFailed('upstream not reading', `Upstream is not reading: ${upstream.bufferedAmount} bytes unsent (--max-send-buffer-bytes); wait for each reply`);
          return;
        }
        idle?.refresh();
        awaitingReplies++;
        upstream.send(data, { binary: isBinary });
      });
    });
    upstream.on('message', (data, isBinary) => {
      idle?.refresh();
      awaitingReplies = Math.max(0, awaitingReplies - 1);
      down.send(Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]), isBinary);
    });
    upstream.on('error', (err) => {
      // After a successful handshake, 'close' follows and reports; before it, this is the only word.
      if (connected) {
        if ((err as Error & { code?: string }).code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') frameTooLarge = true;
        return;
      }
      dialError = true;
      this.reachability[replica] = { reachable: false, error: `${errorText(err)} (session dial)` };
      upstreamFailed('upstream connect failed', `Upstream connect failed: ${url}: ${errorText(err)}`);
    });
    upstream.on('close', (code, reasonBuffer) => {
      this.upstreams.delete(upstream);
      if (!connected) {
        // After a dial error, that error is the reason (ws reports the close too).
        if (!dialError) this.reachability[replica] = { reachable: false, error: `closed during the handshake (${code}) (session dial)` };
        upstreamFailed('upstream connect failed', `Upstream connect failed: ${url}: closed during the handshake (${code})`);
        return;
      }
      if (frameTooLarge) {
        const max = this.opts.maxMessageBytes;
        const message = `Upstream sent a message over ${max} bytes (--max-message-bytes, the limit clients have too); the session was closed`;
        down.end('upstream message too large', errorFrame('SESSION_ERROR', message, { upstream: label }), 1009, 'upstream message too large');
        return;
      }
      const reason = reasonBuffer.toString('utf8');
      // 1000 is how an OpenEnv server ends every session (close frame, refusal, fatal error): the
      // client already has the server's own frame, so the close passes through as it came.
      if (code === 1000) down.end(`upstream closed 1000`, undefined, 1000, reason);
      else upstreamFailed(`upstream closed ${code}`, `Upstream closed: ${code} ${reason || CLOSE_DESCRIPTIONS[code] || 'no reason given'}`);
    });

    down.onEnd(({ reason, clientCode }) => {
      if (idle) clearTimeout(idle);
      if (upstream.readyState === WebSocket.OPEN) upstream.close(sendableCloseCode(clientCode));
      else if (upstream.readyState === WebSocket.CONNECTING) upstream.terminate();
      this.replicaActive[replica]--;
      this.pool.release();
      this.opts.logSession(`session close ${this.name}#${down.id} reason="${reason}" ms=${Date.now() - opened}`);
    });
  }

  /**
   * Forwards a stateless HTTP call to the least-loaded replica. The request body is bounded
   * (413 past --max-message-bytes), and so is the reply: one that says it is larger gets a 502, one
   * that grows past the limit while streaming is cut. The reply is streamed through, never buffered
   * whole, and redirects are passed back as they came, never followed.
   */
  async handleHttp(req: IncomingMessage, res: ServerResponse, route: string, query: string): Promise<void> {
    const replica = this.pickReplica();
    const base = this.replicas[replica].replace(/^ws(s?):\/\//, 'http$1://').replace(/\/$/, '');
    const target = `${base}${route}${query}`;
    const abort = new AbortController();
    const clientGone = new Error('client went away');
    const onClientGone = () => abort.abort(clientGone);
    res.once('close', onClientGone);
    // Bounds the wait for the headers, then each pause in the body.
    const timer = setTimeout(() => abort.abort(Object.assign(new Error('upstream timeout'), { name: 'TimeoutError' })), this.opts.connectTimeoutMs);
    /** True while waiting for the upstream's headers: a failure then says the replica is unreachable. */
    let fetching = false;
    try {
      const method = req.method ?? 'GET';
      const body = method === 'GET' || method === 'HEAD' ? undefined : await readBody(req, this.opts.maxMessageBytes);
      const headers: Record<string, string> = {};
      if (req.headers['content-type']) headers['content-type'] = req.headers['content-type'];
      fetching = true;
      const reply = await fetch(target, { method, headers, body: body ? new Uint8Array(body) : undefined, signal: abort.signal, redirect: 'manual' });
      fetching = false;
      this.reachability[replica] = { reachable: true };
      const max = this.opts.maxMessageBytes;
      const declared = Number(reply.headers.get('content-length') ?? 0);
      if (declared > max) {
        await reply.body?.cancel();
        sendJson(res, 502, { detail: `Upstream ${this.name} (${target}) replied with ${declared} bytes; this server relays at most ${max} bytes per reply (--max-message-bytes)` });
        return;
      }
      const outHeaders: Record<string, string> = {};
      // fetch decodes gzip/br, so an encoded reply's content-length would not match what we send.
      const names = reply.headers.has('content-encoding') ? ['content-type', 'location'] : ['content-type', 'content-length', 'location'];
      for (const name of names) {
        const value = reply.headers.get(name);
        if (value !== null) outHeaders[name] = value;
      }
      res.writeHead(reply.status, outHeaders);
      if (!reply.body) {
        res.end();
        return;
      }
      const upstreamBody = Readable.fromWeb(reply.body as import('node:stream/web').ReadableStream);
      let relayed = 0;
      upstreamBody.on('data', (chunk: Buffer) => {
        timer.refresh();
        relayed += chunk.length;
        if (relayed > max) abort.abort(new Error(`upstream reply passed ${max} bytes (--max-message-bytes)`));
      });
      await pipeline(upstreamBody, res);
    } catch (err) {
      if (err instanceof BodyTooLargeError) return sendBodyTooLarge(req, res, err.message);
      if (res.headersSent || res.destroyed) {
        // Mid-body: the status is gone already; cutting the connection tells the client it is short.
        if (abort.signal.reason !== clientGone) this.opts.log(`proxy ${this.name} ${target}: body cut: ${errorText(abort.signal.reason ?? err)}`);
        res.destroy();
        return;
      }
      const reason = abort.signal.aborted ? abort.signal.reason : err;
      const timedOut = reason instanceof Error && reason.name === 'TimeoutError';
      if (fetching && reason !== clientGone) this.reachability[replica] = { reachable: false, error: `${fetchFailure(reason, this.opts.connectTimeoutMs)} (${req.method ?? 'GET'} ${route})` };
      const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
      sendJson(res, timedOut ? 504 : 502, {
        detail: timedOut
          ? `Upstream ${this.name} (${target}) did not answer within ${this.opts.connectTimeoutMs} ms`
          : `Upstream ${this.name} (${target}) unreachable: ${errorText(err)}${cause}`,
      });
    } finally {
      clearTimeout(timer);
      res.off('close', onClientGone);
    }
  }
}
