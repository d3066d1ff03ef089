// Shared by the env-server tests: a raw WebSocket client that records every frame and the close,
// server start/stop bookkeeping, and the no-leak check each test ends with.

import { expect } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { createEnvServer, type EnvServer, type EnvServerOptions } from '../../env-server/server.ts';

const WAIT_MS = 5000;

export interface CloseEvent {
  code: number;
  reason: string;
}

/** A `ws` client that queues what it receives, so tests can await frames one by one. */
export class RawClient {
  readonly ws: WebSocket;
  private readonly frames: Array<{ text: string; binary: boolean }> = [];
  private readonly waiters: Array<() => void> = [];
  closeEvent: CloseEvent | null = null;
  readonly opened: Promise<void>;
  readonly closed: Promise<CloseEvent>;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.closed = new Promise((resolve) => {
      this.ws.on('close', (code, reason) => {
        this.closeEvent = { code, reason: reason.toString('utf8') };
        resolve(this.closeEvent);
        this.wake();
      });
    });
    this.ws.on('message', (data, isBinary) => {
      this.frames.push({ text: Buffer.isBuffer(data) ? data.toString('utf8') : String(data), binary: isBinary });
      this.wake();
    });
    this.ws.on('error', () => {});
  }

  static async open(url: string): Promise<RawClient> {
    const client = new RawClient(url);
    await client.opened;
    return client;
  }

  send(text: string): void {
    this.ws.send(text);
  }

  /** The next frame received (text), waiting for it if needed; fails if the socket closes first. */
  async next(): Promise<string> {
    const deadline = Date.now() + WAIT_MS;
    while (this.frames.length === 0) {
      if (this.closeEvent) throw new Error(`socket closed (${this.closeEvent.code}) with no frame pending`);
      if (Date.now() > deadline) throw new Error('no frame within 5 s');
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return this.frames.shift()!.text;
  }

  async nextJson(): Promise<any> {
    return JSON.parse(await this.next());
  }

  /** Frames received and not yet read. */
  get pending(): number {
    return this.frames.length;
  }

  async waitClosed(): Promise<CloseEvent> {
    return await withTimeout(this.closed, 'socket close');
  }

  private wake(): void {
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}

export async function withTimeout<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Same keys, same order, same values (after parsing both: `0.0` and `0` are equal). */
export function expectSameJson(actual: string, expected: string): void {
  expect(JSON.stringify(JSON.parse(actual))).toBe(JSON.stringify(JSON.parse(expected)));
}

export function wsBase(server: EnvServer, env: string): string {
  return `${server.url.replace(/^http/, 'ws')}/envs/${env}/ws`;
}

/** Polls until `check` holds (server-side cleanup runs on the server's own turn of the event loop). */
export async function eventually(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Every session ended, nothing queued, no socket left open. */
export async function expectNoLeaks(server: EnvServer): Promise<void> {
  const settled = () => {
    const s = server.stats();
    const upstreamSockets = Object.values(s.envs).reduce((n, e) => n + (e.upstreamSockets ?? 0), 0);
    return s.activeSessions === 0 && s.queuedSessions === 0 && s.openSockets === 0 && upstreamSockets === 0;
  };
  // The assertions below say what leaked if this runs out.
  await eventually(settled, 'all sessions to end').catch(() => {});
  const stats = server.stats();
  expect({ active: stats.activeSessions, queued: stats.queuedSessions, sockets: stats.openSockets }).toEqual({ active: 0, queued: 0, sockets: 0 });
  for (const env of Object.values(stats.envs)) {
    expect(env.sockets).toBe(0);
    if (env.upstreamSockets !== undefined) expect(env.upstreamSockets).toBe(0);
  }
}

/** Starts servers and closes them all (after the leak check) at the end of a test. */
export class Servers {
  private readonly started: EnvServer[] = [];
  private readonly raw: WebSocketServer[] = [];

  async start(options: EnvServerOptions = {}): Promise<EnvServer> {
    const server = await createEnvServer({ port: 0, ...options });
    this.started.push(server);
    return server;
  }

  /** A bare WebSocket server on loopback that behaves as `onConnection` says (a misbehaving peer). */
  async rawWs(onConnection: (ws: WebSocket) => void): Promise<{ base: string; clients: Set<WebSocket> }> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    wss.on('connection', onConnection);
    this.raw.push(wss);
    return { base: `http://127.0.0.1:${(wss.address() as { port: number }).port}`, clients: wss.clients };
  }

  async closeAll(): Promise<void> {
    await Promise.all([
      ...this.started.splice(0).map((s) => s.close()),
      ...this.raw.splice(0).map(
        (wss) =>
          new Promise<void>((resolve) => {
            for (const client of wss.clients) client.terminate();
            wss.close(() => resolve());
          }),
      ),
    ]);
  }
}
