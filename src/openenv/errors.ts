import type { ErrorFrameData, WSErrorCode } from './types.ts';

/**
 * Codes the client raises: the server's error-frame codes, plus
 * CLOSED (the socket is gone), TIMEOUT (no reply in time; the socket is then closed),
 * CONNECT_FAILED (the socket never opened) and PROTOCOL (a reply that is not an OpenEnv frame).
 */
export type OpenEnvErrorCode = WSErrorCode | 'CLOSED' | 'TIMEOUT' | 'CONNECT_FAILED' | 'PROTOCOL';

export class OpenEnvError extends Error {
  readonly code: OpenEnvErrorCode;
  /** The whole `data` of the error frame (e.g. `errors`, `active_sessions`), when one came. */
  readonly data: ErrorFrameData | undefined;

  constructor(code: OpenEnvErrorCode, message: string, data?: ErrorFrameData) {
    super(`${message} (code: ${code})`);
    this.name = 'OpenEnvError';
    this.code = code;
    this.data = data;
  }
}

/**
 * Whether a fetch or WebSocket failure was a refused connection (nothing listens at that host and port):
 * Node's fetch says only "fetch failed" and hides the cause one or two levels down (an AggregateError
 * when a name resolves to both IPv4 and IPv6).
 */
export function isConnectionRefused(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 4) return false;
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown; error?: unknown };
  if (e.code === 'ECONNREFUSED') return true;
  const inner = [e.cause, e.error, ...(Array.isArray(e.errors) ? e.errors : [])];
  return inner.some((x) => isConnectionRefused(x, depth + 1));
}

/** What a refused connection to an env's base URL means, and how to fix it. */
export function connectionRefusedMessage(baseUrl: string): string {
  return `connection refused — is an env-server running at ${baseUrl.replace(/\/+$/, '')}? (start one with \`npx webgrpo env-server\`)`;
}

/**
 * An error frame's text with what the server said about it: a VALIDATION_ERROR's pydantic issues
 * (`loc: msg [type]`, e.g. `type: Input should be 'call_tool' [literal_error]`) follow the bare
 * "Invalid message", so the reader sees which field the env's action class refused.
 */
export function serverErrorText(data: ErrorFrameData | undefined): string {
  const message = typeof data?.message === 'string' ? data.message : JSON.stringify(data ?? null);
  const issues = Array.isArray(data?.errors) ? data.errors : [];
  const details = issues.map((e) => {
    const loc = Array.isArray(e?.loc) && e.loc.length > 0 ? `${e.loc.join('.')}: ` : '';
    return `${loc}${typeof e?.msg === 'string' ? e.msg : JSON.stringify(e)}${typeof e?.type === 'string' ? ` [${e.type}]` : ''}`;
  });
  return details.length > 0 ? `${message}: ${details.join('; ')}` : message;
}
