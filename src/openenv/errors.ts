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
