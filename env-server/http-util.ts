// Small helpers for the env-server's HTTP side: bounded body reads and compact JSON replies.

import type { IncomingMessage, ServerResponse } from 'node:http';

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`Request body larger than ${limit} bytes (--max-message-bytes)`);
  }
}

export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new BodyTooLargeError(limit));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
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
