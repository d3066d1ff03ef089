// One OpenEnv connection per episode (specs/openenv-protocol.md §7), shaped for tool envs: `reset`
// opens it, tools step it, `close` ends it. Errors are sorted into the two kinds the rollout tells apart:
// the server rejecting an action (a tool error the model sees, like Python's `Server error: …`) and the
// env being gone (refused, dropped, timed out: an EnvFailure that makes the rollout unscorable).

import { envProtocol, HttpEpisode, lacksWsRoute, OpenEnvError, withEpisode, type EnvProtocol, type EpisodeOptions, type JsonRpcRequest, type JsonRpcResponse, type StepResult } from '../../../openenv/index.ts';
import { currentSessionWait, type SessionWait } from '../../../openenv/session-limit.ts';
import { EnvFailure } from '../../rollout/env.ts';

export interface EpisodeSession {
  /** The reset observation. */
  readonly first: StepResult;
  /** How the env takes actions (specs/openenv-mcp.md §6); absent = the older action form. */
  readonly protocol?: EnvProtocol;
  step(action: Record<string, unknown>): Promise<StepResult>;
  /** A JSON-RPC request over the episode's socket (`mcp-rpc` envs call their tools this way). */
  mcp?(request: JsonRpcRequest): Promise<JsonRpcResponse>;
  close(): Promise<void>;
}

/**
 * Opens a connection to an env base URL (e.g. `http://127.0.0.1:8765/envs/catch`) and resets it;
 * `reset` adds kwargs to the reset frame (e.g. browsergym's `task_name`); `wait` hears of its wait for a
 * session (the rollout's, session-limit.ts).
 */
export type OpenEpisode = (baseUrl: string, reset?: Record<string, unknown>, wait?: SessionWait | null) => Promise<EpisodeSession>;

/** Over the OpenEnv client: episodes queue under a server's session limit; other refusals are retried with jittered backoff. */
export function openEnvEpisodes(options: Omit<EpisodeOptions, 'reset' | 'sessionWait'> = {}): OpenEpisode {
  return (baseUrl, reset, wait) => openEpisode(baseUrl, { ...options, ...(reset ? { reset } : {}), sessionWait: wait ?? null });
}

/** Base URLs whose `/ws` upgrade was refused with a 4xx: their episodes go over the HTTP routes. */
const httpOnly = new Set<string>();

/**
 * One episode over `withEpisode` (connect, reset with `options.reset`, retry refusals, close), or over
 * `POST /reset`, `/step`, `/mcp` for a server with no `/ws` route (OpenEnv's calendar env).
 */
export async function openEpisode(baseUrl: string, options: EpisodeOptions = {}): Promise<EpisodeSession> {
  // Asked once per URL (cached): MCP envs are stepped with list_tools / call_tool actions.
  const protocol = await envProtocol(baseUrl);
  if (httpOnly.has(baseUrl)) return openHttpEpisode(baseUrl, protocol, options);
  try {
    return await openWsEpisode(baseUrl, protocol, options);
  } catch (err) {
    if (!lacksWsRoute(err)) throw err;
    httpOnly.add(baseUrl);
    return openHttpEpisode(baseUrl, protocol, options);
  }
}

/** The episode over HTTP: the server keeps the env between requests (there is no session to close). */
async function openHttpEpisode(baseUrl: string, protocol: EnvProtocol, options: EpisodeOptions): Promise<EpisodeSession> {
  const http = new HttpEpisode(baseUrl, options.timeoutMs);
  const first = await http.reset(options.reset ?? {});
  return { first, protocol, step: (action) => http.step(action), mcp: (request) => http.mcp(request), close: async () => undefined };
}

function openWsEpisode(baseUrl: string, protocol: EnvProtocol, options: EpisodeOptions): Promise<EpisodeSession> {
  return new Promise<EpisodeSession>((resolve, reject) => {
    let finish!: () => void;
    const finished = new Promise<void>((r) => (finish = r));
    // withEpisode owns connect/reset/retry/close; the episode "plays" until close() is called.
    const running = withEpisode(
      baseUrl,
      async (session, first) => {
        resolve({
          first,
          protocol,
          step: (action) => session.step(action),
          mcp: (request) => session.mcp(request),
          close: async () => {
            finish();
            await running.catch(() => undefined);
          },
        });
        await finished;
      },
      options,
    );
    running.catch(reject);
  });
}

/** Server-side rejections stay tool errors; everything else means the env is gone. */
export function classifyEnvError(err: unknown): Error {
  if (err instanceof OpenEnvError && (err.code === 'EXECUTION_ERROR' || err.code === 'VALIDATION_ERROR')) {
    return new Error(`Server error: ${err.message}`);
  }
  if (err instanceof EnvFailure) return err;
  return new EnvFailure(err instanceof Error ? err.message : String(err), { cause: err });
}

/** The current episode of an env instance: opened by reset, replaced by the next reset. */
export class EpisodeSlot {
  private session: EpisodeSession | null = null;
  /** Bumped by every close: an open that outlives a close (its reset timed out) is closed on arrival. */
  private epoch = 0;
  constructor(
    private readonly baseUrl: string,
    private readonly open: OpenEpisode,
  ) {}

  /**
   * Closes the previous episode's connection, opens a new one, returns the reset observation. A close
   * while the reset runs (the rollout gave up on it) closes the new connection as soon as it is open,
   * so a late reset never holds one of the server's sessions.
   */
  async reset(kwargs?: Record<string, unknown>): Promise<StepResult> {
    // Read before the first await, as the rollout hands it over (withSessionWait).
    const wait = currentSessionWait();
    const previous = this.session;
    this.session = null;
    const epoch = ++this.epoch;
    await previous?.close();
    let session: EpisodeSession;
    try {
      session = await this.open(this.baseUrl, kwargs, wait);
    } catch (err) {
      throw classifyEnvError(err);
    }
    if (epoch !== this.epoch) {
      await session.close();
      throw new EnvFailure('the episode was closed while its reset ran');
    }
    this.session = session;
    return session.first;
  }

  /** The open episode's protocol (`action` when none is open or the opener did not say). */
  get protocol(): EnvProtocol {
    return this.session?.protocol ?? 'action';
  }

  /** JSON-RPC on the open episode's socket; tools of `mcp-rpc` envs. */
  async mcp(request: JsonRpcRequest): Promise<JsonRpcResponse> {
    if (!this.session?.mcp) throw new EnvFailure('no open episode with a JSON-RPC channel');
    try {
      return await this.session.mcp(request);
    } catch (err) {
      throw classifyEnvError(err);
    }
  }

  async step(action: Record<string, unknown>): Promise<StepResult> {
    if (!this.session) throw new EnvFailure('no open episode: reset was not called or the episode was closed');
    try {
      return await this.session.step(action);
    } catch (err) {
      throw classifyEnvError(err);
    }
  }

  async close(): Promise<void> {
    this.epoch++;
    const session = this.session;
    this.session = null;
    await session?.close();
  }
}
