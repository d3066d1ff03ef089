// Serves one built-in env at `/envs/<name>`: its `/ws` sessions (one socket = one env instance,
// specs/openenv-protocol.md §3), its HTTP routes, and the MCP-created sessions, all under one cap.

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { admit, type AdmissionPolicy } from './admission.ts';
import { handleBuiltinHttp } from './builtin-http.ts';
import type { Downstream } from './downstream.ts';
import { parseClientFrame } from './envelope.ts';
import type { EnvDefinition, EnvInstance } from './envs/types.ts';
import { errorFrame, factoryErrorFrame, idleTimeoutFrame, mcpFrame, observationFrame, stateFrame, validationErrorFrame } from './frames.ts';
import { handleMcp, type McpSessions } from './mcp.ts';
import { SlotPool } from './slots.ts';
import type { EnvHost, EnvStats } from './host.ts';

export interface BuiltinHostOptions extends AdmissionPolicy {
  maxConcurrentEnvs: number;
  /** Idle timeout in seconds (reset, step and mcp are activity; state is not); null = off. */
  sessionTimeoutSec: number | null;
  maxMessageBytes: number;
}

/** A session opened by `openenv/session/create` over HTTP: an env and a slot, no socket. */
interface McpOnlySession {
  env: EnvInstance;
  idle: ReturnType<typeof setTimeout> | null;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class BuiltinEnvHost implements EnvHost {
  readonly kind = 'builtin';
  private readonly pool: SlotPool;
  private readonly sockets = new Set<Downstream>();
  private readonly mcpOnly = new Map<string, McpOnlySession>();
  private readonly mcpSessions: McpSessions;

  constructor(
    readonly name: string,
    private readonly def: EnvDefinition,
    private readonly opts: BuiltinHostOptions,
  ) {
    this.pool = new SlotPool(opts.maxConcurrentEnvs);
    this.mcpSessions = {
      create: () => this.createMcpOnlySession(),
      close: (id) => this.closeMcpOnlySession(id),
      touch: (id) => {
        const session = this.mcpOnly.get(id);
        session?.idle?.refresh();
        return session !== undefined;
      },
    };
  }

  stats(): EnvStats {
    return {
      kind: this.kind,
      active: this.pool.active,
      queued: this.pool.queued,
      maxConcurrentEnvs: this.pool.capacity,
      sockets: this.sockets.size,
      mcpSessions: this.mcpOnly.size,
    };
  }

  handleHttp(req: IncomingMessage, res: ServerResponse, route: string): Promise<void> {
    return handleBuiltinHttp({ def: this.def, sessions: this.mcpSessions, maxBodyBytes: this.opts.maxMessageBytes, log: this.opts.log }, req, res, route);
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
    for (const id of [...this.mcpOnly.keys()]) this.closeMcpOnlySession(id);
  }

  private runSession(down: Downstream): void {
    let env: EnvInstance;
    try {
      env = this.def.create();
    } catch (err) {
      this.pool.release();
      this.opts.log(`session ${this.name}#${down.id} factory failed: ${errorText(err)}`);
      down.end('factory error', factoryErrorFrame(this.def.metadata.name));
      return;
    }
    const sessionId = randomUUID();
    const opened = Date.now();
    let steps = 0;
    const timeoutSec = this.opts.sessionTimeoutSec;
    const idle = timeoutSec === null ? null : setTimeout(() => down.end('idle timeout', idleTimeoutFrame(timeoutSec)), timeoutSec * 1000);
    const touch = () => idle?.refresh();
    this.opts.log(`session open ${this.name}#${down.id} active=${this.pool.active}/${this.pool.capacity}`);

    down.onEnd(({ reason }) => {
      if (idle) clearTimeout(idle);
      try {
        env.close();
      } catch (err) {
        this.opts.log(`session ${this.name}#${down.id} env.close() failed: ${errorText(err)}`);
      }
      this.pool.release();
      this.opts.log(`session close ${this.name}#${down.id} reason="${reason}" steps=${steps} ms=${Date.now() - opened}`);
    });

    // Env calls are synchronous, so replies leave in request order without any queueing here.
    const run = (work: () => string) => {
      let reply: string;
      try {
        reply = work();
      } catch (err) {
        reply = errorFrame('EXECUTION_ERROR', errorText(err));
      }
      down.send(reply);
    };

    down.setHandler((data, isBinary) => {
      if (isBinary) {
        // Upstream's receive_text() raises KeyError('text') on a binary frame; str() of it is "'text'".
        down.end('binary frame', errorFrame('SESSION_ERROR', "'text'"));
        return;
      }
      const command = parseClientFrame(data.toString('utf8'));
      switch (command.kind) {
        case 'error':
          if (command.fatal) down.end('not a JSON object', command.frame);
          else down.send(command.frame);
          return;
        case 'close':
          down.end('close frame');
          return;
        case 'reset':
          return run(() => {
            const frame = observationFrame(env.reset(command.data));
            touch();
            return frame;
          });
        case 'step':
          return run(() => {
            const check = this.def.validateAction(command.data);
            if (!check.ok) return validationErrorFrame(check.errors);
            const frame = observationFrame(env.step(check.action));
            steps++;
            touch();
            return frame;
          });
        case 'state':
          return run(() => stateFrame(env.state()));
        case 'mcp':
          touch();
          return down.send(mcpFrame(handleMcp(command.data, this.mcpSessions, sessionId)));
      }
    });
  }

  private createMcpOnlySession(): { sessionId: string } | { error: string; data: Record<string, unknown> } {
    if (!this.pool.tryAcquire()) {
      const { active, capacity } = this.pool;
      return {
        error: `Server at capacity: ${active}/${capacity} sessions active. Cannot accept new connections.`,
        data: { active_sessions: active, max_sessions: capacity },
      };
    }
    let env: EnvInstance;
    try {
      env = this.def.create();
    } catch {
      this.pool.release();
      const factory = this.def.metadata.name;
      return { error: `Environment factory '${factory}' failed to create instance.`, data: { factory_name: factory } };
    }
    const sessionId = randomUUID();
    const timeoutSec = this.opts.sessionTimeoutSec;
    // Upstream's reaper frees these silently: there is no socket to tell.
    const idle = timeoutSec === null ? null : setTimeout(() => this.closeMcpOnlySession(sessionId), timeoutSec * 1000);
    this.mcpOnly.set(sessionId, { env, idle });
    return { sessionId };
  }

  private closeMcpOnlySession(sessionId: string): boolean {
    const session = this.mcpOnly.get(sessionId);
    if (!session) return false;
    this.mcpOnly.delete(sessionId);
    if (session.idle) clearTimeout(session.idle);
    try {
      session.env.close();
    } catch (err) {
      this.opts.log(`mcp session ${this.name} ${sessionId} env.close() failed: ${errorText(err)}`);
    }
    this.pool.release();
    return true;
  }
}
