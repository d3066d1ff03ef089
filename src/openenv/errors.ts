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
