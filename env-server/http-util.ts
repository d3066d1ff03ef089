// Small helpers for the env-server's HTTP side: request targets that may not parse, bounded body
// reads whose 413 reaches the client, and compact JSON replies.

import type { IncomingMessage, ServerResponse } from 'node:http';

/** The request target as a URL, or null when it does not parse (`//`, `http://[`, …). */
export function parseRequestUrl(target: string | undefined): URL | null {
  const raw = target ?? '/';
  try {
    // Origin-form targets are paths; `//x` must stay a path, not become a host.
    return new URL(raw.startsWith('/') ? `http://localhost${raw}` : raw);
  } catch {
    return null;
  }
}

/** `decodeURIComponent`, or null for a bad escape (`%`, `%zz`, a lone surrogate). */
export function decodePathSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * True for `application/json` (any parameters, any `+json` subtype), as FastAPI reads a JSON body.
 * The only bodies a web page on another origin can send without a CORS preflight (which this server
 * never approves) are text/plain, form-urlencoded and multipart: requiring JSON shuts those out too.
 */
export function isJsonContentType(value: string | undefined): boolean {
  const type = (value ?? '').split(';')[0].trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

export class BodyTooLargeError extends Error {
  constructor(
    readonly limit: number,
    option = '--max-message-bytes',
  ) {
    super(`Request body larger than ${limit} bytes (${option})`);
  }
}

/** How long a client still sending an over-limit body may go on before its connection is cut. */
const LINGER_MS = 5000;

/**
 * Reads the whole body, up to `limit` bytes. Past it, rejects with BodyTooLargeError and keeps
 * discarding what still arrives: destroying the request here would reset the connection before
 * the 413 is written (sendBodyTooLarge sends it and closes).
 */
export function readBody(req: IncomingMessage, limit: number, tooLarge: () => Error = () => new BodyTooLargeError(limit)): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      reject(tooLarge());
      return;
    }
    let chunks: Buffer[] | null = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (chunks === null) return;
      size += chunk.length;
      if (size > limit) {
        chunks = null;
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (chunks !== null) resolve(Buffer.concat(chunks));
    });
    req.on('error', reject);
  });
}

/**
 * 413 for a body past the limit, written while the client may still be sending. The rest of the
 * body is read and dropped (closing now would reset the connection under the client, which then
 * never sees the 413); a client that keeps sending long after the answer is cut off.
 */
export function sendBodyTooLarge(req: IncomingMessage, res: ServerResponse, message: string): void {
  sendBeforeBodyEnds(req, res, 413, message);
}

/** Any refusal of a body still arriving (413 too large, 503 busy), sent as sendBodyTooLarge sends its 413. */
export function sendBeforeBodyEnds(req: IncomingMessage, res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, status, { detail: message });
  if (!req.complete) {
    req.resume();
    const cut = setTimeout(() => req.socket.destroy(), LINGER_MS);
    cut.unref();
    req.once('end', () => clearTimeout(cut));
    req.once('close', () => clearTimeout(cut));
  }
}

/** Compact UTF-8 JSON, as FastAPI's JSONResponse writes it. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/** A body already serialized (e.g. with float-formatted rewards). */
export function sendJsonText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

export function sendNotFound(res: ServerResponse): void {
  sendJson(res, 404, { detail: 'Not Found' });
}

export function sendMethodNotAllowed(res: ServerResponse, allow: string): void {
  sendJson(res, 405, { detail: 'Method Not Allowed' }, { allow });
}
