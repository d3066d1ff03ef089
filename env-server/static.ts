// Serves the built app (dist/) from the env-server, so `webgrpo start` is one process on one port:
// the app, the run store API and the environments share an origin (no CORS needed). Errors
// (a file removed mid-rebuild, no descriptors left) answer 404/500 and are logged, never thrown.
import type { IncomingMessage, ServerResponse } from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { decodePathSegment, parseRequestUrl, sendJson } from './http-util.ts';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

// The trainer worker needs cross-origin isolation for SharedArrayBuffer and fine timers.
export const ISOLATION_HEADERS = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };

// The app's files are the only responses that run as this origin (the server sandboxes all others):
// no other site may frame the app (clickjacking a Stop or an import).
const APP_CSP = { 'content-security-policy': "frame-ancestors 'self'" };

/**
 * Serves files under `distDir`. The file is opened before the 200 is written, so a missing file
 * falls through to the 404 and a failure to open (out of descriptors) is a 500; the stream is
 * destroyed when the client goes away, so an aborted download never keeps a descriptor.
 */
export function staticHandler(distDir: string, log: (line: string) => void = () => {}) {
  const root = path.resolve(distDir);
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const url = parseRequestUrl(req.url);
    const decoded = url ? decodePathSegment(url.pathname) : null;
    // A bad escape or a NUL (`/index.html%00.png`) names no file in dist/: 404, never a throw from fs.
    if (decoded === null || decoded.includes('\0')) return false;
    const rel = decoded === '/' ? '/index.html' : decoded;
    const file = path.resolve(root, `.${rel}`);
    if (!file.startsWith(root + path.sep)) return false; // no escaping dist/
    let handle: fs.promises.FileHandle;
    try {
      handle = await fs.promises.open(file, 'r');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENAMETOOLONG') return false;
      log(`static ${rel}: cannot open: ${(err as Error).message}`);
      sendJson(res, 500, { detail: 'Internal Server Error' });
      return true;
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) {
        await handle.close();
        return false;
      }
      if (res.destroyed) {
        await handle.close();
        return true;
      }
      res.writeHead(200, {
        'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
        'content-length': stat.size,
        'cache-control': rel.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
        ...ISOLATION_HEADERS,
        ...APP_CSP,
      });
      if (req.method === 'HEAD') {
        await handle.close();
        res.end();
        return true;
      }
    } catch (err) {
      await handle.close().catch(() => {});
      log(`static ${rel}: ${(err as Error).message}`);
      if (!res.headersSent) sendJson(res, 500, { detail: 'Internal Server Error' });
      else res.destroy();
      return true;
    }
    // pipeline destroys the file stream (closing the descriptor) on an abort or a read error.
    const stream = handle.createReadStream();
    pipeline(stream, res).catch((err: Error) => {
      if (!isClientAbort(err)) log(`static ${rel}: ${err.message}`);
    });
    return true;
  };
}

function isClientAbort(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ECONNRESET' || code === 'EPIPE';
}
