// OpenEnv's HTTP routes as one episode's transport (specs/openenv-protocol.md §2, specs/openenv-mcp.md §3):
// for servers that serve only `POST /reset`, `/step` and `/mcp` (no `/ws`, e.g. OpenEnv's calendar env).
// Node only in practice: OpenEnv's HTTP routes send no CORS headers, so browsers must use `/ws`.
// Errors are OpenEnvErrors with the codes `/ws` would give (422 → VALIDATION_ERROR, 500 → EXECUTION_ERROR),
// quoting the server's body.

import { OpenEnvError } from './errors.ts';
import { replyText } from './http-reply.ts';
import type { JsonRpcRequest, JsonRpcResponse, StepResult } from './types.ts';

/** A failed reply whose body is quoted up to this many characters. */
const QUOTE_CHARS = 500;

/** `ws(s)://` → `http(s)://`, no trailing slash. */
export function httpBaseUrl(baseUrl: string): string {
  return baseUrl.trim().replace(/\/+$/, '').replace(/^ws(s?):\/\//, 'http$1://');
}

/**
 * The `/ws` upgrade was answered with an HTTP 4xx (Node's `ws`: "Unexpected server response: 404"): the
 * server has no `/ws` route, so its HTTP routes are the only way in. Anything else (refused, down) is not that.
 */
export function lacksWsRoute(err: unknown): boolean {
  return err instanceof OpenEnvError && err.code === 'CONNECT_FAILED' && /Unexpected server response: 4\d\d/.test(err.message);
}

export class HttpEpisode {
  readonly url: string;
  constructor(
    baseUrl: string,
    private readonly timeoutMs = 60_000,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.url = httpBaseUrl(baseUrl);
  }

  reset(kwargs: Record<string, unknown> = {}): Promise<StepResult> {
    return this.post('/reset', kwargs) as Promise<StepResult>;
  }

  step(action: Record<string, unknown>): Promise<StepResult> {
    return this.post('/step', { action }) as Promise<StepResult>;
  }

  /** JSON-RPC over `POST /mcp` (always HTTP 200; errors are in the reply). */
  mcp(request: JsonRpcRequest): Promise<JsonRpcResponse> {
    return this.post('/mcp', request) as Promise<JsonRpcResponse>;
  }

  private async post(route: string, body: unknown): Promise<unknown> {
    const where = `POST ${this.url}${route}`;
    let res: Response;
    try {
      res = await this.send(route, body).catch((err: unknown) => {
        // A kept-alive connection the server closed while idle (uvicorn and Node close them after 5 s,
        // less than a model's turn) fails the next request before the server reads it: send it once
        // more on a fresh connection. Any other failure is the server's answer.
        if (closedByPeer(err)) return this.send(route, body);
        throw err;
      });
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError';
      const cause = (err as { cause?: { message?: unknown } }).cause?.message;
      throw new OpenEnvError(timedOut ? 'TIMEOUT' : 'CONNECT_FAILED', timedOut ? `No reply to ${where} within ${this.timeoutMs} ms` : `Cannot reach ${where}: ${(err as Error).message}${typeof cause === 'string' ? ` (${cause})` : ''}`);
    }
    const text = await replyText(res, where);
    if (!res.ok) {
      const code = res.status === 422 ? 'VALIDATION_ERROR' : res.status >= 500 ? 'EXECUTION_ERROR' : 'PROTOCOL';
      throw new OpenEnvError(code, `HTTP ${res.status} from ${where}: ${text.slice(0, QUOTE_CHARS)}`);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new OpenEnvError('PROTOCOL', `Reply to ${where} is not JSON: ${text.slice(0, QUOTE_CHARS)}`);
    }
  }

  private send(route: string, body: unknown): Promise<Response> {
    return this.fetchImpl(`${this.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
  }
}

/** undici's "other side closed" / reset on a socket the server ended (fetch hides it in `cause`). */
function closedByPeer(err: unknown): boolean {
  const code = (err as { cause?: { code?: unknown } }).cause?.code;
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET';
}
