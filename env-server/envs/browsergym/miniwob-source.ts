// A real MiniWoB++ task folder (`--miniwob DIR`, or BrowserGym's $MINIWOB_URL): the `html/miniwob/`
// folder of a MiniWoB++ checkout, or an http(s) URL serving it. Every `<task>.html` in it is a task,
// by BrowserGym's name (`miniwob.<task>` without the prefix). The session's browser never fetches
// anything itself: the context's router asks `answer` for each request, which reads the folder (or
// fetches the URL from Node) and refuses everything else.

import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve, sep } from 'node:path';

/**
 * Where the task pages live: OpenEnv's image's MINIWOB_URL, so the page URLs in trees (the root's
 * and links' `url=`) and in `url` are the real server's byte for byte. The session's context answers
 * these requests itself; nothing listens there (loopback traffic goes through the router, or to the
 * dead proxy, browser.ts).
 */
export const MINIWOB_BASE_URL = 'http://127.0.0.1:8888/miniwob/';
/** Where a folder's pages appear to the browser, as the built-in ones (a folder URL keeps its own address). */
export const FOLDER_BASE_URL = MINIWOB_BASE_URL;
/** Siblings of `html/miniwob/` that MiniWoB++'s pages load scripts, styles and images from. */
const SIBLINGS = ['core', 'common'];
/** No MiniWoB++ file comes near this (the largest is a few hundred KB). */
const MAX_FILE_BYTES = 16 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 15_000;

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.svg': 'image/svg+xml',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
};

export interface MiniwobResponse {
  status: number;
  contentType: string;
  body: Buffer;
}

export interface MiniwobSource {
  /** Where the tasks come from, for messages. */
  readonly origin: string;
  /** Task names, sorted. */
  readonly names: readonly string[];
  /** The URL a task's page is opened at (BrowserGym: `MINIWOB_URL + name + '.html'`). */
  taskUrl(name: string): string;
  /** The answer to a page's request, or null when the URL is not this source's (the router blocks it). */
  answer(url: string): Promise<MiniwobResponse | null>;
}

function contentType(path: string): string {
  return CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
}

function taskNames(files: string[]): string[] {
  return files.filter((f) => /^[A-Za-z0-9][A-Za-z0-9_-]*\.html$/.test(f)).map((f) => f.slice(0, -'.html'.length)).sort();
}

/** A local `html/miniwob/` folder; its pages are served at FOLDER_BASE_URL, its siblings beside it. */
export async function miniwobFolder(dir: string): Promise<MiniwobSource> {
  const root = resolve(dir);
  const info = await stat(root).catch(() => null);
  if (!info?.isDirectory()) throw new Error(`--miniwob / MINIWOB_URL: ${dir} is not a folder (give MiniWoB++'s html/miniwob/ folder)`);
  const names = taskNames(await readdir(root));
  if (names.length === 0) throw new Error(`--miniwob / MINIWOB_URL: ${dir} has no <task>.html pages (give MiniWoB++'s html/miniwob/ folder)`);
  const parent = dirname(root);
  const origin = new URL(FOLDER_BASE_URL).origin;
  // URL folder → disk folder: the task folder and MiniWoB's shared siblings, nothing else of the parent.
  const mounts = new Map<string, string>([[basename(new URL(FOLDER_BASE_URL).pathname), root], ...SIBLINGS.map((s): [string, string] => [s, join(parent, s)])]);
  return {
    origin: root,
    names,
    taskUrl: (name) => `${FOLDER_BASE_URL}${name}.html`,
    async answer(url) {
      const u = new URL(url);
      if (u.origin !== origin) return null;
      // The URL parser has already resolved `..` and `%2e%2e`; the prefix check below catches the rest.
      const [mount, ...rest] = decodeURIComponent(u.pathname).split('/').slice(1);
      const base = mount === undefined ? undefined : mounts.get(mount);
      if (base === undefined) return null;
      const path = resolve(base, ...rest);
      if (!path.startsWith(base + sep)) return null;
      const file = await stat(path).catch(() => null);
      if (!file?.isFile() || file.size > MAX_FILE_BYTES) return { status: 404, contentType: 'text/plain', body: Buffer.from('not found') };
      return { status: 200, contentType: contentType(path), body: await readFile(path) };
    },
  };
}

/** Reads at most MAX_FILE_BYTES of a response (a server sending more is cut off with an error). */
async function boundedBody(response: Response, url: string): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body?.getReader();
  for (;;) {
    const chunk = reader ? await reader.read() : { done: true as const, value: undefined };
    if (chunk.done) break;
    size += chunk.value.byteLength;
    if (size > MAX_FILE_BYTES) {
      await reader!.cancel();
      throw new Error(`${url} is larger than ${MAX_FILE_BYTES} bytes`);
    }
    chunks.push(chunk.value);
  }
  return Buffer.concat(chunks);
}

/** An http(s) URL of MiniWoB++'s `html/miniwob/` (BrowserGym's MINIWOB_URL): its task list is its directory listing. */
export async function miniwobUrl(base: string): Promise<MiniwobSource> {
  const url = new URL(base.endsWith('/') ? base : `${base}/`);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`MINIWOB_URL: expected a folder or an http(s) URL, got ${base}`);
  const htmlRoot = new URL('..', url).href;
  const get = async (target: string): Promise<MiniwobResponse> => {
    const response = await fetch(target, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'error' });
    return { status: response.status, contentType: response.headers.get('content-type') ?? contentType(new URL(target).pathname), body: await boundedBody(response, target) };
  };
  const listing = await get(url.href).catch((err: unknown) => {
    throw new Error(`MINIWOB_URL: cannot read ${url.href}: ${err instanceof Error ? err.message : String(err)}`);
  });
  const hrefs = [...listing.body.toString('utf8').matchAll(/href="([^"/?#]+\.html)"/g)].map((m) => decodeURIComponent(m[1]!));
  const names = taskNames([...new Set(hrefs)]);
  if (listing.status !== 200 || names.length === 0) {
    throw new Error(`MINIWOB_URL: ${url.href} lists no <task>.html pages (HTTP ${listing.status}); serve MiniWoB++'s html/ folder with directory listings, e.g. python -m http.server`);
  }
  return {
    origin: url.href,
    names,
    taskUrl: (name) => `${url.href}${name}.html`,
    async answer(target) {
      // Only MiniWoB's html/ folder on that server, and only what a page loads (no query strings needed).
      if (!target.startsWith(htmlRoot)) return null;
      return get(target).catch(() => ({ status: 502, contentType: 'text/plain', body: Buffer.from('unreachable') }));
    },
  };
}

/** `--miniwob` / $MINIWOB_URL: an http(s) URL or a folder. */
export function miniwobSource(spec: string): Promise<MiniwobSource> {
  return /^https?:\/\//i.test(spec) ? miniwobUrl(spec) : miniwobFolder(spec);
}
