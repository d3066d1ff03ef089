// A fake OpenEnv server that speaks the bytes a real one sent: tests/fixtures/openenv/<env>/capture.json,
// recorded from OpenEnv's own servers by scripts/openenv-capture/ (CI has no Python). GET /metadata and
// /schema answer the captured bodies; on /ws a reset starts an episode, and each later frame is answered
// with the captured reply of the recorded episode whose frames so far are the same (compared as JSON, so
// key spacing does not matter; a frame the server refused leaves the env as it was, so it does not count).
// A frame no recorded episode sent gets an error frame saying so. With `maxSessions`, a connection over
// the limit gets OpenEnv's CAPACITY_REACHED refusal and is closed, as create_app's default of one session.

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { isDeepStrictEqual } from 'node:util';
import { WebSocketServer } from 'ws';

interface Exchange {
  send: string;
  expect: string;
}
interface Capture {
  env: string;
  source: string;
  http: Record<string, { status: number; content_type: string; body: string }>;
  episodes: { reset: Record<string, unknown>; exchanges: Exchange[] }[];
}

export interface ReplayServer {
  url: string;
  capture: Capture;
  /** The `data` of every reset frame received, in order. */
  resets: unknown[];
  /** Every frame received after a reset that no recorded episode sent. */
  unmatched: string[];
  /** Connections refused for capacity, and the most sessions ever open at once. */
  refused: number;
  peakSessions: number;
  close(): Promise<void>;
}

export function loadCapture(env: string): Capture {
  return JSON.parse(readFileSync(new URL(`../fixtures/openenv/${env}/capture.json`, import.meta.url), 'utf8')) as Capture;
}

export async function startReplayServer(env: string, options: { maxSessions?: number } = {}): Promise<ReplayServer> {
  const capture = loadCapture(env);
  let active = 0;
  const resets: unknown[] = [];
  const unmatched: string[] = [];
  const server: ReplayServer = { url: '', capture, resets, unmatched, refused: 0, peakSessions: 0, close: async () => undefined };
  const http: Server = createServer((req, res) => {
    const route = (req.url ?? '').replace(/\?.*$/, '');
    const reply = req.method === 'GET' ? capture.http[route] : undefined;
    res.writeHead(reply?.status ?? 404, { 'content-type': reply?.content_type ?? 'application/json' });
    res.end(reply?.body ?? '{"detail":"Not Found"}');
  });
  const wss = new WebSocketServer({ noServer: true });
  http.on('upgrade', (req, socket, head) => {
    if (req.url !== '/ws') return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => {
      const max = options.maxSessions;
      if (max !== undefined && active >= max) {
        server.refused++;
        const message = `Server at capacity: ${active}/${max} sessions active. Cannot accept new connections.`;
        ws.send(JSON.stringify({ type: 'error', data: { message, code: 'CAPACITY_REACHED', active_sessions: active, max_sessions: max } }));
        return void ws.close(1000, '');
      }
      active++;
      server.peakSessions = Math.max(server.peakSessions, active);
      ws.on('close', () => void active--);
      // The frames of this connection's episode so far (parsed), the reset first.
      let played: unknown[] | null = null;
      ws.on('message', (raw) => {
        const text = raw.toString();
        const frame = JSON.parse(text) as { type: string; data?: unknown };
        if (frame.type === 'close') return void ws.close(1000, '');
        if (frame.type === 'reset') {
          resets.push(frame.data ?? {});
          played = [];
        }
        if (played === null) return void ws.send(JSON.stringify({ type: 'error', data: { message: 'replay: no reset yet', code: 'EXECUTION_ERROR' } }));
        played.push(frame.type === 'reset' ? { type: 'reset' } : frame);
        const at = played.length - 1;
        const match = capture.episodes.find((e) => e.exchanges.length > at && played!.every((f, i) => {
          const sent = JSON.parse(e.exchanges[i]!.send) as { type: string };
          return sent.type === 'reset' ? (f as { type: string }).type === 'reset' : isDeepStrictEqual(sent, f);
        }));
        if (match) {
          const reply = match.exchanges[at]!.expect;
          // A refused frame (an error reply) leaves the env as it was: later frames match as if it was never sent.
          if ((JSON.parse(reply) as { type: string }).type === 'error') played.pop();
          return void ws.send(reply);
        }
        unmatched.push(text);
        played.pop();
        ws.send(JSON.stringify({ type: 'error', data: { message: `replay: ${capture.env} was never captured answering ${text} at this point of an episode`, code: 'EXECUTION_ERROR' } }));
      });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  const port = (http.address() as { port: number }).port;
  Object.assign(server, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close();
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  });
  return server;
}
