// Serves one built-in env at `/envs/<name>`: its `/ws` sessions (one socket = one env instance,
// specs/openenv-protocol.md §3), its HTTP routes, and the MCP-created sessions, all under one cap.

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { admit, type AdmissionPolicy } from './admission.ts';
import { handleBuiltinHttp } from './builtin-http.ts';
import type { Downstream } from './downstream.ts';
import { isPlainObject, parseClientFrame } from './envelope.ts';
import type { AnyEnvInstance, EnvDefinition } from './envs/types.ts';
import { capacityMessage, errorFrame, pyTypeName, factoryErrorFrame, idleTimeoutFrame, mcpFrame, observationFrame, stateFrame, validationErrorFrame } from './frames.ts';
import { handleMcp, JSONRPC, MCP_REFUSALS, pythonDumps, rpcError, type McpSessions } from './mcp.ts';
import { parseBoundedJson } from './json-limits.ts';
import { pythonJsonError } from './python-json-error.ts';
import { SlotPool } from './slots.ts';
import type { EnvHost, EnvStats } from './host.ts';

export interface BuiltinHostOptions extends AdmissionPolicy {
  maxConcurrentEnvs: number;
  /** Idle timeout in seconds (reset, step and mcp are activity; state is not); null = off. */
  sessionTimeoutSec: number | null;
  /** Idle timeout for sessions made by `openenv/session/create` over HTTP (no socket to notice a gone client). */
  mcpSessionTimeoutSec: number;
  maxMessageBytes: number;
  maxJsonDepth: number;
}

/** A session opened by `openenv/session/create` over HTTP: an env and a slot, no socket. */
interface McpOnlySession {
  env: AnyEnvInstance;
  idle: ReturnType<typeof setTimeout> | null;
}

/** The last frame a session gets when it cannot start, or when it is reaped, in its socket's dialect. */
interface SessionEndReplies {
  factoryError(): string;
  idle(timeoutSec: number): string;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Closes an env, sync or async; a failure is only logged (the session is over either way). */
function closeEnv(env: AnyEnvInstance, onError: (err: unknown) => void): void {
  try {
    void Promise.resolve(env.close()).catch(onError);
  } catch (err) {
    onError(err);
  }
}

export class BuiltinEnvHost implements EnvHost {
  readonly kind = 'builtin';
  private readonly pool: SlotPool;
  private readonly sockets = new Set<Downstream>();
  private readonly mcpOnly = new Map<string, McpOnlySession>();
  private readonly mcpSessions: McpSessions;

  constructor(
    readonly name: string,
    private readonly def: EnvDefinition<AnyEnvInstance>,
    private readonly opts: BuiltinHostOptions,
  ) {
    this.pool = new SlotPool(Math.min(opts.maxConcurrentEnvs, def.maxConcurrentEnvs ?? Infinity));
    this.mcpSessions = {
      create: () => this.createMcpOnlySession(),
      close: (id) => this.closeMcpOnlySession(id),
      touch: (id) => {
        const session = this.mcpOnly.get(id);
        session?.idle?.refresh();
        return session !== undefined;
      },
      env: (id) => this.mcpOnly.get(id)?.env,
      withTemporaryEnv: (use) => {
        const env = this.def.create();
        try {
          return use(env);
        } finally {
          env.close();
        }
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
    const scarceSlots = this.def.maxConcurrentEnvs === undefined ? undefined : this.pool;
    return handleBuiltinHttp({ def: this.def, sessions: this.mcpSessions, maxBodyBytes: this.opts.maxMessageBytes, maxJsonDepth: this.opts.maxJsonDepth, scarceSlots, log: this.opts.log }, req, res, route);
  }

  acceptSocket(down: Downstream): void {
    this.sockets.add(down);
    down.onEnd(() => this.sockets.delete(down));
    void admit(down, this.pool, this.opts, this.name).then((admitted) => {
      if (admitted) this.runSession(down);
    });
  }

  /** WS `/mcp`: one socket = one session = one env, speaking bare JSON-RPC frames. */
  acceptMcpSocket(down: Downstream): void {
    this.sockets.add(down);
    down.onEnd(() => this.sockets.delete(down));
    void admit(down, this.pool, this.opts, this.name, MCP_REFUSALS).then((admitted) => {
      if (admitted) this.runMcpSocketSession(down);
    });
  }

  shutdown(): void {
    for (const down of [...this.sockets]) down.end('server shutdown', undefined, 1001);
    this.pool.cancelAll();
    for (const id of [...this.mcpOnly.keys()]) this.closeMcpOnlySession(id);
  }

  /** Frees what the env holds across sessions (browsergym's Chromium); after shutdown(). */
  async dispose(): Promise<void> {
    await this.def.dispose?.();
  }

  private runSession(down: Downstream): void {
    const session = this.openSession(down, { factoryError: () => factoryErrorFrame(this.def.metadata.name), idle: idleTimeoutFrame });
    if (!session) return;
    const { env, sessionId, touch } = session;

    // One call at a time, replies in request order: sync envs answer at once, async ones (browsergym)
    // are chained so a step never overtakes the reset before it.
    let pending: Promise<void> = Promise.resolve();
    const run = (work: () => string | Promise<string>) => {
      pending = pending.then(async () => {
        let reply: string;
        try {
          reply = await work();
        } catch (err) {
          reply = errorFrame('EXECUTION_ERROR', errorText(err));
        }
        if (!down.ended) down.send(reply);
      });
    };

    down.setHandler((data, isBinary) => {
      if (isBinary) {
        // Upstream's receive_text() raises KeyError('text') on a binary frame; str() of it is "'text'".
        down.end('binary frame', errorFrame('SESSION_ERROR', "'text'"));
        return;
      }
      const command = parseClientFrame(data.toString('utf8'), this.opts.maxJsonDepth);
      switch (command.kind) {
        case 'error':
          if (command.fatal) down.end('not a JSON object', command.frame);
          else down.send(command.frame);
          return;
        case 'close':
          down.end('close frame');
          return;
        case 'reset':
          return run(async () => {
            const frame = observationFrame(await env.reset(command.data));
            touch();
            return frame;
          });
        case 'step':
          return run(async () => {
            const check = this.def.validateAction(command.data);
            if (!check.ok) return validationErrorFrame(check.errors);
            const frame = observationFrame(await env.step(check.action));
            session.countStep();
            touch();
            return frame;
          });
        case 'state':
          return run(async () => stateFrame(await env.state()));
        case 'mcp':
          touch();
          return run(() => mcpFrame(handleMcp(command.data, this.mcpSessions, { sessionId, env })));
      }
    });
  }

  /** Env, slot, idle timer and log lines shared by `/ws` and WS `/mcp` sessions; null if the factory failed. */
  private openSession(down: Downstream, replies: SessionEndReplies): { env: AnyEnvInstance; sessionId: string; touch(): void; countStep(): void } | null {
    let env: AnyEnvInstance;
    try {
      env = this.def.create();
    } catch (err) {
      this.pool.release();
      this.opts.log(`session ${this.name}#${down.id} factory failed: ${errorText(err)}`);
      down.end('factory error', replies.factoryError());
      return null;
    }
    const opened = Date.now();
    let steps = 0;
    const timeoutSec = this.opts.sessionTimeoutSec;
    const idle = timeoutSec === null ? null : setTimeout(() => down.end('idle timeout', replies.idle(timeoutSec)), timeoutSec * 1000);
    this.opts.logSession(`session open ${this.name}#${down.id} active=${this.pool.active}/${this.pool.capacity}`);
    down.onEnd(({ reason }) => {
      if (idle) clearTimeout(idle);
      closeEnv(env, (err) => this.opts.log(`session ${this.name}#${down.id} env.close() failed: ${errorText(err)}`));
      this.pool.release();
      this.opts.logSession(`session close ${this.name}#${down.id} reason="${reason}" steps=${steps} ms=${Date.now() - opened}`);
    });
    return { env, sessionId: randomUUID(), touch: () => idle?.refresh(), countStep: () => steps++ };
  }

  private runMcpSocketSession(down: Downstream): void {
    const factory = this.def.metadata.name;
    const session = this.openSession(down, {
      factoryError: () =>
        JSON.stringify(rpcError(JSONRPC.SERVER_ERROR, `Environment factory '${factory}' failed to create instance.`, null, { factory_name: factory })),
      idle: (sec) => JSON.stringify(rpcError(JSONRPC.SERVER_ERROR, `Session idle timeout (${sec} s)`)),
    });
    if (!session) return;
    down.setHandler((data, isBinary) => {
      if (isBinary) {
        down.end('binary frame', JSON.stringify(rpcError(JSONRPC.SERVER_ERROR, "'text'")));
        return;
      }
      const text = data.toString('utf8');
      const parsed = parseBoundedJson(text, this.opts.maxJsonDepth);
      if (!parsed.ok) {
        const detail = parsed.tooDeep ? parsed.message : (pythonJsonError(text) ?? parsed.error.message);
        down.send(pythonDumps(rpcError(JSONRPC.PARSE_ERROR, `Parse error: ${detail}`)));
        return;
      }
      const request = parsed.value;
      if (!isPlainObject(request)) {
        // Upstream's loop does JsonRpcRequest(**request); the TypeError ends the socket (§3.4).
        const message = `openenv.core.env_server.mcp_types.JsonRpcRequest() argument after ** must be a mapping, not ${pyTypeName(request)}`;
        down.end('non-object JSON-RPC frame', pythonDumps(rpcError(JSONRPC.SERVER_ERROR, message)));
        return;
      }
      session.touch();
      // Upstream writes WS `/mcp` replies with json.dumps: spaced, non-ASCII escaped (§3.1).
      down.send(pythonDumps(handleMcp(request, this.mcpSessions, { sessionId: session.sessionId, env: session.env })));
    });
  }

  /**
   * Slots HTTP-created sessions may hold together: half the pool (at least one). Nothing notices their
   * client go away, so without this share a few `openenv/session/create` calls hold every slot until
   * the idle timeout, and no socket session can start meanwhile.
   */
  private get maxMcpOnlySessions(): number {
    return Math.max(1, Math.floor(this.pool.capacity / 2));
  }

  private createMcpOnlySession(): { sessionId: string } | { error: string; data: Record<string, unknown> } {
    const { active, capacity } = this.pool;
    // A full pool answers as OpenEnv does; the HTTP share is this server's own limit below it.
    if (active >= capacity) return { error: capacityMessage(active, capacity), data: { active_sessions: active, max_sessions: capacity } };
    const share = this.maxMcpOnlySessions;
    if (this.mcpOnly.size >= share) {
      const timeoutSec = this.opts.sessionTimeoutSec ?? this.opts.mcpSessionTimeoutSec;
      return {
        error: `Sessions opened over HTTP /mcp may hold at most ${share} of the ${capacity} slots of ${this.name} (half, so sockets always find one); close one with openenv/session/close, or an idle one is freed after ${timeoutSec} s (--mcp-session-timeout)`,
        data: { active_sessions: active, max_sessions: capacity, http_sessions: this.mcpOnly.size, max_http_sessions: share },
      };
    }
    this.pool.tryAcquire();
    let env: AnyEnvInstance;
    try {
      env = this.def.create();
    } catch {
      this.pool.release();
      const factory = this.def.metadata.name;
      return { error: `Environment factory '${factory}' failed to create instance.`, data: { factory_name: factory } };
    }
    const sessionId = randomUUID();
    // Always reaped when idle (unlike upstream, whose reaper is off by default): a client that
    // forgets session/close would otherwise hold the slot until restart. Freed silently, as upstream.
    const timeoutSec = this.opts.sessionTimeoutSec ?? this.opts.mcpSessionTimeoutSec;
    const idle = setTimeout(() => {
      this.opts.logSession(`mcp session ${this.name} ${sessionId} idle ${timeoutSec} s: closed`);
      this.closeMcpOnlySession(sessionId);
    }, timeoutSec * 1000);
    this.mcpOnly.set(sessionId, { env, idle });
    return { sessionId };
  }

  private closeMcpOnlySession(sessionId: string): boolean {
    const session = this.mcpOnly.get(sessionId);
    if (!session) return false;
    this.mcpOnly.delete(sessionId);
    if (session.idle) clearTimeout(session.idle);
    closeEnv(session.env, (err) => this.opts.log(`mcp session ${this.name} ${sessionId} env.close() failed: ${errorText(err)}`));
    this.pool.release();
    return true;
  }
}
