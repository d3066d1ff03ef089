// Typed OpenEnv `/ws` client (specs/openenv-protocol.md §3, §7) for the browser and Node.
// One OpenEnvSession = one socket = one server-side env instance. Replies are matched to requests by
// order. Frames that arrive unprompted (the connect-time CAPACITY_REACHED refusal, webgrpo's idle
// timeout) are kept, so the next call reports them even if the server already closed the socket.

import { connectionRefusedMessage, isConnectionRefused, OpenEnvError, serverErrorText } from './errors.ts';
import { parseToolList, rpcToolResult, toolCallValue, type McpTool } from './mcp.ts';
import { createSocket, SOCKET_OPEN, type SocketLike } from './socket.ts';
import type { ErrorFrameData, JsonRpcRequest, JsonRpcResponse, ServerFrame, StepResult } from './types.ts';
import { wsUrl } from './url.ts';

export interface ConnectOptions {
  /** Bound on opening the socket and on each reply, in ms (default 60 000, as OpenEnv's client). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 60_000;

interface PendingReply {
  resolve(frame: ServerFrame): void;
  reject(err: OpenEnvError): void;
  timer: ReturnType<typeof setTimeout>;
}

export class OpenEnvSession<O = Record<string, unknown>> {
  readonly url: string;
  private readonly socket: SocketLike;
  private readonly timeoutMs: number;
  /** Frames nobody asked for yet, oldest first. */
  private readonly unprompted: ServerFrame[] = [];
  private readonly pending: PendingReply[] = [];
  private closedBy: OpenEnvError | null = null;
  private closeWaiters: Array<() => void> = [];

  /** Use `connect()`; the socket must not have received anything yet. */
  constructor(socket: SocketLike, url: string, timeoutMs: number) {
    this.socket = socket;
    this.url = url;
    this.timeoutMs = timeoutMs;
    socket.addEventListener('message', (ev) => this.onMessage(ev.data));
    socket.addEventListener('close', (ev) => this.onClose(ev.code, ev.reason));
  }

  /** True once the socket is closed (by either side); every later call throws CLOSED. */
  get closed(): boolean {
    return this.closedBy !== null;
  }

  reset(kwargs: Record<string, unknown> = {}): Promise<StepResult<O>> {
    return this.request({ type: 'reset', data: kwargs }, 'observation') as Promise<StepResult<O>>;
  }

  step(action: Record<string, unknown>): Promise<StepResult<O>> {
    return this.request({ type: 'step', data: action }, 'observation') as Promise<StepResult<O>>;
  }

  state(): Promise<Record<string, unknown>> {
    return this.request({ type: 'state' }, 'state') as Promise<Record<string, unknown>>;
  }

  mcp(request: JsonRpcRequest): Promise<JsonRpcResponse> {
    return this.request({ type: 'mcp', data: request }, 'mcp') as Promise<JsonRpcResponse>;
  }

  /**
   * MCP envs: a `list_tools` step (it counts as a step, as in OpenEnv; Python caches it, callers may too).
   * An env whose action class subclasses CallToolAction (finqa) refuses that step with VALIDATION_ERROR;
   * then, as OpenEnv's MCPToolClient does, the tools come from JSON-RPC `tools/list` on the same socket.
   */
  async listTools(): Promise<McpTool[]> {
    let observation: unknown;
    try {
      observation = (await this.step({ type: 'list_tools' })).observation;
    } catch (err) {
      if (!(err instanceof OpenEnvError && err.code === 'VALIDATION_ERROR')) throw err;
      observation = rpcToolResult('tools/list', await this.mcp({ jsonrpc: '2.0', method: 'tools/list', id: 1 }));
    }
    return parseToolList(observation);
  }

  /**
   * MCP envs: a `call_tool` step. Returns the step (its envelope carries the env's reward) and the value
   * Python's `call_tool` returns; an `error` in the observation throws McpToolError with Python's text.
   */
  async callTool(name: string, args: Record<string, unknown> = {}): Promise<{ value: unknown; step: StepResult<O> }> {
    const step = await this.step({ type: 'call_tool', tool_name: name, arguments: args });
    return { value: toolCallValue(step.observation), step };
  }

  /** Sends `{"type":"close"}` and waits (bounded) for the server to close the socket. Idempotent. */
  async close(): Promise<void> {
    if (this.closedBy) return;
    const closed = new Promise<void>((resolve) => this.closeWaiters.push(resolve));
    if (this.socket.readyState === SOCKET_OPEN) this.socket.send('{"type":"close"}');
    const timer = setTimeout(() => this.socket.close(1000, 'client close timed out'), Math.min(this.timeoutMs, 5000));
    await closed;
    clearTimeout(timer);
  }

  private async request(frame: Record<string, unknown>, expect: ServerFrame['type']): Promise<unknown> {
    const reply = this.unprompted.length > 0 ? this.unprompted.shift()! : await this.sendAndWait(frame);
    if (reply.type === 'error') throw errorFromFrame(reply.data);
    if (reply.type !== expect) {
      throw new OpenEnvError('PROTOCOL', `Expected a '${expect}' frame from ${this.url}, got '${reply.type}'`);
    }
    return reply.data;
  }

  private sendAndWait(frame: Record<string, unknown>): Promise<ServerFrame> {
    if (this.closedBy) return Promise.reject(this.closedBy);
    return new Promise<ServerFrame>((resolve, reject) => {
      const timer = setTimeout(() => {
        // Close rather than keep waiting: a late reply must never be taken for the next request's.
        const err = new OpenEnvError('TIMEOUT', `No reply to '${frame.type}' from ${this.url} within ${this.timeoutMs} ms`);
        this.failAll(err);
        this.socket.close(1000, 'client timeout');
      }, this.timeoutMs);
      this.pending.push({ resolve, reject, timer });
      this.socket.send(JSON.stringify(frame));
    });
  }

  private onMessage(data: unknown): void {
    let frame: ServerFrame;
    if (typeof data !== 'string') {
      frame = protocolErrorFrame(`Binary frame from ${this.url}; OpenEnv servers send text frames`);
    } else {
      try {
        frame = JSON.parse(data) as ServerFrame;
      } catch {
        frame = protocolErrorFrame(`Frame from ${this.url} is not JSON: ${data.slice(0, 200)}`);
      }
      if (frame === null || typeof frame !== 'object' || typeof frame.type !== 'string') {
        frame = protocolErrorFrame(`Frame from ${this.url} is not an OpenEnv frame: ${data.slice(0, 200)}`);
      }
    }
    const waiter = this.pending.shift();
    if (waiter) {
      clearTimeout(waiter.timer);
      waiter.resolve(frame);
    } else {
      this.unprompted.push(frame);
    }
  }

  private onClose(code: number, reason: string): void {
    if (!this.closedBy) {
      this.failAll(new OpenEnvError('CLOSED', `Connection to ${this.url} closed: ${code} ${JSON.stringify(reason)}`));
    }
    for (const resolve of this.closeWaiters.splice(0)) resolve();
  }

  private failAll(err: OpenEnvError): void {
    this.closedBy ??= err;
    for (const waiter of this.pending.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(err);
    }
  }
}

/** Marks a reply the client could not understand; `request()` turns it into an OpenEnvError. */
function protocolErrorFrame(message: string): ServerFrame {
  return { type: 'error', data: { message, code: 'PROTOCOL' as ErrorFrameData['code'] } };
}

function errorFromFrame(data: ErrorFrameData): OpenEnvError {
  return new OpenEnvError(data?.code ?? 'PROTOCOL', serverErrorText(data), data);
}

/** Opens `<base>/ws`. Resolves once the socket is open (a capacity refusal shows on the first call). */
export async function connect<O = Record<string, unknown>>(
  baseUrl: string,
  options: ConnectOptions = {},
): Promise<OpenEnvSession<O>> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(timeoutMs > 0)) throw new Error(`connect: timeoutMs must be > 0, got ${timeoutMs}`);
  const url = wsUrl(baseUrl);
  const socket = await createSocket(url);
  // Listeners go on before the socket can deliver anything, so the refusal frame is never lost.
  const session = new OpenEnvSession<O>(socket, url, timeoutMs);
  await new Promise<void>((resolve, reject) => {
    let settled = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new OpenEnvError('CONNECT_FAILED', `Cannot connect to ${url}: ${why}`));
    };
    const timer = setTimeout(() => {
      fail(`no WebSocket handshake within ${timeoutMs} ms`);
      socket.close();
    }, timeoutMs);
    socket.addEventListener('open', () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve();
    });
    socket.addEventListener('error', (ev) => fail(isConnectionRefused(ev.error) ? connectionRefusedMessage(baseUrl) : ev.message ?? String(ev.error ?? 'connection error')));
    socket.addEventListener('close', (ev) => fail(`closed during the handshake (${ev.code})`));
  });
  return session;
}
