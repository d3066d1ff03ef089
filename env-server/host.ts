// What the server needs from whatever serves `/envs/<name>`: a built-in env or a proxied upstream.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Downstream } from './downstream.ts';
import type { ReplicaReachability } from './upstream-probe.ts';

export interface EnvStats {
  kind: 'builtin' | 'proxy';
  /** Slots in use: live sessions (plus, for built-ins, MCP-created ones). */
  active: number;
  /** Sockets waiting for a slot (`--queue`). */
  queued: number;
  /** Session cap (for a proxy: per replica × replicas). */
  maxConcurrentEnvs: number;
  /** Client sockets this host still tracks (active + queued + being refused). */
  sockets: number;
  /** Built-ins: sessions opened by `openenv/session/create` over HTTP. */
  mcpSessions?: number;
  /** Proxy: open upstream sockets, and live sessions per replica. */
  upstreamSockets?: number;
  /** Proxy: live sessions per replica, and whether it answers (probed at startup, then each session's dial). */
  replicas?: Array<{ url: string; active: number } & ReplicaReachability>;
}

export interface EnvHost {
  readonly name: string;
  readonly kind: EnvStats['kind'];
  /** Takes over a client socket that just completed the `/ws` handshake. */
  acceptSocket(down: Downstream): void;
  /** Same for WS `/mcp` (built-ins only; a proxy answers 404). */
  acceptMcpSocket?(down: Downstream): void;
  /** Serves `route` (e.g. `/reset`, the path below `/envs/<name>`). */
  handleHttp(req: IncomingMessage, res: ServerResponse, route: string, query: string): Promise<void>;
  stats(): EnvStats;
  /** Ends every session and queued socket (close 1001). */
  shutdown(): void;
  /** After shutdown: frees what outlives sessions (a built-in's browser). */
  dispose?(): Promise<void>;
}
