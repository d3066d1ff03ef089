// The OpenEnv client an environment class holds (`import { EnvClient, envUrl } from 'webgrpo/openenv'`), as
// OpenEnv's Python `EnvClient`/`MCPToolClient` are held by TRL's example classes: `reset` starts an
// episode (closing the previous one), `step`, `state`, `listTools`, `callTool`, `close`. It speaks `/ws`
// (through withEpisode: once a server named its session limit, episodes queue under it, one queue per URL
// for the whole process) and, for a server without a
// `/ws` route, its HTTP routes. `envUrl(name)` is the base URL the run was given for an env (TRL's examples take `--env-host`).

import { OpenEnvError } from './errors.ts';
import { HttpEpisode, lacksWsRoute } from './http-episode.ts';
import { rpcToolResult, toolCallValue, type McpTool, parseToolList } from './mcp.ts';
import type { OpenEnvSession } from './client.ts';
import { envProtocol } from './protocol.ts';
import { currentSessionWait, type SessionWait } from './session-limit.ts';
import type { JsonRpcRequest, JsonRpcResponse, StepResult } from './types.ts';
import { withEpisode } from './with-episode.ts';

/** One episode's transport: the `/ws` session, or the HTTP routes. */
interface Transport {
  step(action: Record<string, unknown>): Promise<StepResult>;
  mcp(request: JsonRpcRequest): Promise<JsonRpcResponse>;
  state(): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export interface EnvClientOptions {
  /** Bound on each reply, ms (default 60 000, as OpenEnv's client). */
  timeoutMs?: number;
}

/** What a tool call gave: the value Python's `call_tool` returns, and the step's reward and done. */
export interface ToolCallResult {
  value: unknown;
  reward: number | null;
  done: boolean;
}

export class EnvClient {
  readonly baseUrl: string;
  private transport: Transport | null = null;
  private readonly timeoutMs: number;
  /** Bumped by every close: a reset still waiting for a session when it comes closes that session on arrival. */
  private epoch = 0;

  constructor(baseUrl: string, options: EnvClientOptions = {}) {
    if (!/^(https?|wss?):\/\//.test(baseUrl)) throw new Error(`EnvClient: '${baseUrl}' is not an http(s) or ws(s) URL`);
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  /**
   * Starts a new episode (the previous one is closed) and returns its reset step. The trainer's reset
   * defaults (withResetDefaults: the episode's seed) are read before the first await, so a class whose
   * reset calls this first plays the run's seeded games; its own kwargs win over them. So is the
   * rollout's SessionWait: its time waiting for a session does not count against its timeouts.
   */
  async reset(kwargs: Record<string, unknown> = {}): Promise<StepResult> {
    kwargs = { ...resetDefaults, ...kwargs };
    const wait = currentSessionWait();
    await this.close();
    const epoch = this.epoch;
    try {
      const { transport, first } = await openWs(this.baseUrl, kwargs, this.timeoutMs, wait);
      // Closed while it waited (the rollout gave up on this reset): a late session must not hold the server's only one.
      if (epoch !== this.epoch) {
        await transport.close();
        throw new Error(`EnvClient(${this.baseUrl}): closed while reset() waited for a session`);
      }
      this.transport = transport;
      return first;
    } catch (err) {
      if (!lacksWsRoute(err)) throw err;
    }
    const http = new HttpEpisode(this.baseUrl, this.timeoutMs);
    const first = await http.reset(kwargs);
    this.transport = {
      step: (action) => http.step(action),
      mcp: (request) => http.mcp(request),
      state: async () => {
        throw new OpenEnvError('PROTOCOL', `${this.baseUrl} serves no /ws: its episode state cannot be read`);
      },
      close: async () => undefined,
    };
    return first;
  }

  async step(action: Record<string, unknown>): Promise<StepResult> {
    return this.open().step(action);
  }

  async state(): Promise<Record<string, unknown>> {
    return this.open().state();
  }

  /** An MCP env's tools: a `list_tools` step, or JSON-RPC `tools/list` where that step is refused. */
  async listTools(): Promise<McpTool[]> {
    const transport = this.open();
    let observation: unknown;
    try {
      observation = (await transport.step({ type: 'list_tools' })).observation;
    } catch (err) {
      if (!(err instanceof OpenEnvError && err.code === 'VALIDATION_ERROR')) throw err;
      observation = rpcToolResult('tools/list', await transport.mcp({ jsonrpc: '2.0', method: 'tools/list', id: 1 }));
    }
    return parseToolList(observation);
  }

  /** Calls an MCP env's tool: a `call_tool` step (JSON-RPC `tools/call` on envs that take no actions). */
  async callTool(name: string, args: Record<string, unknown> = {}): Promise<ToolCallResult> {
    const transport = this.open();
    if ((await envProtocol(this.baseUrl)) === 'mcp-rpc') {
      const result = rpcToolResult(name, await transport.mcp({ jsonrpc: '2.0', method: 'tools/call', params: { name, arguments: args }, id: 1 }));
      const value = result && typeof result === 'object' && 'data' in result ? (result as { data: unknown }).data : result;
      return { value, reward: null, done: false };
    }
    const step = await transport.step({ type: 'call_tool', tool_name: name, arguments: args });
    return { value: toolCallValue(step.observation), reward: typeof step.reward === 'number' ? step.reward : null, done: step.done === true };
  }

  /** Ends the episode (idempotent). */
  async close(): Promise<void> {
    this.epoch++;
    const transport = this.transport;
    this.transport = null;
    await transport?.close();
  }

  private open(): Transport {
    if (!this.transport) throw new Error(`EnvClient(${this.baseUrl}): no episode: call reset() first`);
    return this.transport;
  }
}

/** What every EnvClient.reset started while withResetDefaults runs adds to its kwargs (null: nothing). */
let resetDefaults: Record<string, unknown> | null = null;

/**
 * Runs `fn` (a class's reset) with `defaults` added to the kwargs of every EnvClient reset it starts
 * synchronously: how the trainer seeds the episodes of a class that resets its client with no seed, as
 * TRL's examples do, so a run's games are a function of its seed (rl/tasks/play-episode.ts).
 */
export function withResetDefaults<T>(defaults: Record<string, unknown> | null, fn: () => T): T {
  const previous = resetDefaults;
  resetDefaults = defaults;
  try {
    return fn();
  } finally {
    resetDefaults = previous;
  }
}

/** A `/ws` episode held open until closed (withEpisode owns connect, reset, capacity retries and close). */
function openWs(baseUrl: string, reset: Record<string, unknown>, timeoutMs: number, sessionWait: SessionWait | null): Promise<{ transport: Transport; first: StepResult }> {
  return new Promise((resolve, reject) => {
    let finish!: () => void;
    const finished = new Promise<void>((r) => (finish = r));
    const running = withEpisode(
      baseUrl,
      async (session: OpenEnvSession, first) => {
        resolve({
          first,
          transport: {
            step: (action) => session.step(action),
            mcp: (request) => session.mcp(request),
            state: () => session.state(),
            close: async () => {
              finish();
              await running.catch(() => undefined);
            },
          },
        });
        await finished;
      },
      { reset, timeoutMs, sessionWait },
    );
    running.catch(reject);
  });
}

const URLS = Symbol.for('webgrpo.envUrls');

function urlTable(): Map<string, string> {
  const g = globalThis as unknown as Record<symbol, Map<string, string> | undefined>;
  return (g[URLS] ??= new Map());
}

/** The run's env base URLs by name (the launcher sets them: the in-process env-server's, or `--env-url`). */
export function setEnvUrls(urls: Readonly<Record<string, string | undefined>>): void {
  for (const [name, url] of Object.entries(urls)) if (url) urlTable().set(name, url);
}

/**
 * `--env-url`: the URL of every env name the table lacks, so a class may name the env it plays (e.g.
 * OpenEnv's `grid_world`, no built-in) and still be pointed at a server; null takes it back.
 */
export function setDefaultEnvUrl(url: string | null): void {
  if (url) urlTable().set(ANY_ENV, url);
  else urlTable().delete(ANY_ENV);
}

const ANY_ENV = '*';

/** The base URL of the env `name` (echo, catch, wordle, sudoku, browsergym, …) this run plays. */
export function envUrl(name: string): string {
  const url = urlTable().get(name) ?? urlTable().get(ANY_ENV);
  if (!url) {
    const known = [...urlTable().keys()].filter((k) => k !== ANY_ENV);
    throw new Error(`envUrl('${name}'): this run has no URL for an env named '${name}' (${known.length > 0 ? `it has ${known.join(', ')}` : 'none were given'}; pass --env-url URL)`);
  }
  return url;
}
