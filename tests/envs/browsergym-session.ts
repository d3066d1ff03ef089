// Test helper: one WebSocket session on /envs/browsergym, as OpenEnv's BrowserGymEnv client drives it
// (one request frame, one reply), and the bid of a line of the accessibility tree.

import WebSocket from 'ws';
import type { EnvServer } from '../../env-server/server.ts';

const FRAME_WAIT_MS = 120_000;

/** A socket that answers one request frame at a time. */
export class Session {
  private readonly frames: unknown[] = [];
  private wake: (() => void) | null = null;
  closed = false;
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.frames.push(JSON.parse(String(data)));
      this.wake?.();
    });
    ws.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
  }

  static async open(server: EnvServer): Promise<Session> {
    const ws = new WebSocket(`${server.url.replace(/^http/, 'ws')}/envs/browsergym/ws`);
    const session = new Session(ws);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    return session;
  }

  async next(): Promise<any> {
    const deadline = Date.now() + FRAME_WAIT_MS;
    while (this.frames.length === 0) {
      if (this.closed) throw new Error('socket closed with no frame pending');
      if (Date.now() > deadline) throw new Error('no frame in time');
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 100);
      });
    }
    return this.frames.shift();
  }

  async request(frame: unknown): Promise<any> {
    this.ws.send(JSON.stringify(frame));
    return this.next();
  }

  reset(data: Record<string, unknown>): Promise<any> {
    return this.request({ type: 'reset', data });
  }

  step(action: string): Promise<any> {
    return this.request({ type: 'step', data: { action_str: action, metadata: {} } });
  }

  close(): Promise<void> {
    this.ws.close();
    return new Promise((resolve) => (this.closed ? resolve() : this.ws.once('close', () => resolve())));
  }
}

/** The bid of the first tree line `[bid] <role> '<name>'`. */
export function bidOf(tree: string, role: string, name: string): string {
  const m = new RegExp(`\\[(\\w+)\\] ${role} '${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'`).exec(tree);
  if (!m) throw new Error(`no ${role} '${name}' in:\n${tree}`);
  return m[1]!;
}
