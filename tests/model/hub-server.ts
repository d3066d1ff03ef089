// A local stand-in for the Hugging Face Hub, for loading tests: serves repos at
// /{owner}/{name}/resolve/{revision}/{file}, redirects weight files (302) to a /cdn/ path like the
// Hub does for LFS files, answers Range requests (206, honoring If-Range), and can drop a
// connection halfway through a response or demand a token.

import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoggedRequest {
  method: string;
  path: string;
  range: string | null;
  status: number;
}

export interface FakeHub {
  endpoint: string;
  requests: LoggedRequest[];
  /** repo id → files. Files can be replaced between requests (to test If-Range). */
  repos: Map<string, Map<string, Uint8Array>>;
  /** Files whose next N full or ranged responses stop halfway and destroy the socket. */
  dropNext: Map<string, number>;
  /** Files whose next response is this error status instead (once). */
  failNext: Map<string, number>;
  /** Repos that need `Authorization: Bearer <token>`. */
  privateRepos: Map<string, string>;
  close(): Promise<void>;
}

export async function startFakeHub(options: { dropDelayMs?: number } = {}): Promise<FakeHub> {
  const dropDelayMs = options.dropDelayMs ?? 250;
  const hub: Omit<FakeHub, 'endpoint' | 'close'> = { requests: [], repos: new Map(), dropNext: new Map(), failNext: new Map(), privateRepos: new Map() };

  const handle = (req: IncomingMessage, res: ServerResponse): number => {
    const path = decodeURIComponent(new URL(req.url!, 'http://x').pathname);
    const cdn = path.startsWith('/cdn/');
    const m = cdn ? path.match(/^\/cdn\/([^/]+\/[^/]+)\/(.+)$/) : path.match(/^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/);
    const repo = m?.[1];
    const file = cdn ? m?.[2] : m?.[3];
    const bytes = repo && file ? hub.repos.get(repo)?.get(file) : undefined;
    const token = repo ? hub.privateRepos.get(repo) : undefined;
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('Invalid credentials');
      return 401;
    }
    if (!bytes || (!cdn && m?.[2] !== 'main')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Entry not found');
      return 404;
    }
    const failure = hub.failNext.get(file!);
    if (failure !== undefined) {
      hub.failNext.delete(file!);
      res.writeHead(failure, { 'content-type': 'text/plain' }).end('Service Unavailable');
      return failure;
    }
    if (!cdn && file!.endsWith('.safetensors')) {
      res.writeHead(302, { location: `/cdn/${repo}/${file}` }).end();
      return 302;
    }
    const etag = `"${createHash('sha256').update(bytes).digest('hex')}"`;
    let start = 0;
    let end = bytes.byteLength; // exclusive
    let status = 200;
    const range = req.headers.range?.match(/^bytes=(\d+)-(\d*)$/);
    const ifRange = req.headers['if-range'];
    if (range && (ifRange === undefined || ifRange === etag)) {
      start = Number(range[1]);
      end = range[2] ? Math.min(Number(range[2]) + 1, bytes.byteLength) : bytes.byteLength;
      if (start >= bytes.byteLength) {
        res.writeHead(416, { 'content-range': `bytes */${bytes.byteLength}` }).end();
        return 416;
      }
      status = 206;
    }
    const headers: Record<string, string | number> = { etag, 'accept-ranges': 'bytes', 'content-length': end - start };
    if (status === 206) headers['content-range'] = `bytes ${start}-${end - 1}/${bytes.byteLength}`;
    res.writeHead(status, headers);
    const drops = hub.dropNext.get(file!) ?? 0;
    if (drops > 0 && end - start > 1) {
      hub.dropNext.set(file!, drops - 1);
      const half = start + Math.floor((end - start) / 2);
      // Wait before dropping, so the client has received (and stored) the first half: a browser may
      // otherwise report the error before handing over data still in flight.
      res.write(bytes.subarray(start, half), () => setTimeout(() => res.destroy(), dropDelayMs));
      return status;
    }
    res.end(bytes.subarray(start, end));
    return status;
  };

  const server: Server = createServer((req, res) => {
    // CORS like the Hub's, so browser tests can fetch from another origin (If-Range and
    // Authorization are not safelisted: they need a preflight).
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-expose-headers', 'content-range, content-length, etag, accept-ranges');
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { 'access-control-allow-headers': 'range, if-range, authorization', 'access-control-allow-methods': 'GET, HEAD' }).end();
      return;
    }
    const status = handle(req, res);
    hub.requests.push({ method: req.method!, path: req.url!, range: req.headers.range ?? null, status });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ...hub,
    endpoint: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
