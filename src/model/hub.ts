// Checkpoints over HTTP: the Hugging Face Hub (`{endpoint}/{repo}/resolve/{revision}/{file}`) or any
// base URL serving the same files. Two ways to read them:
// - download (default): whole files into the DownloadCache, with progress, redirects followed,
//   resumed with a Range request from the bytes already cached after a failure or a reload; the
//   second open needs no network at all;
// - ranged: no cache, each tensor fetched with an HTTP Range request of its byte range.

import { cachePrefix, defaultCache, type DownloadCache } from './cache.ts';
import { parseWeightIndex, type OpenCheckpointOptions } from './checkpoint-options.ts';
import { parseConfigText } from './config.ts';
import type { CheckpointFiles } from './files.ts';
import type { ModelConfig } from './types.ts';
import { CHAT_TEMPLATE_FILES } from './tokenizer.ts';

export const DEFAULT_ENDPOINT = 'https://huggingface.co';

/** Where a remote checkpoint lives: a Hub repo id, or a base URL whose files are `{baseUrl}/{file}`. */
export type RemoteLocation = { repo: string } | { baseUrl: string };

/** An HTTP failure, with the URL and status (absent for network errors). */
export class HubError extends Error {
  constructor(message: string, readonly url: string, readonly status?: number) {
    super(message);
    this.name = 'HubError';
  }
}

interface ResolvedRemote {
  urlOf(file: string): string;
  /** Cache folder for this repo revision. */
  prefix: string;
  describe: string;
}

const envVar = (name: string): string | undefined =>
  typeof process !== 'undefined' && process.env ? process.env[name] || undefined : undefined;

function resolveRemote(location: RemoteLocation, options: OpenCheckpointOptions): ResolvedRemote {
  if ('repo' in location) {
    const endpoint = (options.endpoint ?? envVar('HF_ENDPOINT') ?? DEFAULT_ENDPOINT).replace(/\/+$/, '');
    const revision = options.revision ?? 'main';
    const host = endpoint === DEFAULT_ENDPOINT ? null : new URL(endpoint).host;
    return {
      urlOf: (file) => `${endpoint}/${location.repo}/resolve/${encodeURIComponent(revision)}/${file}`,
      prefix: cachePrefix({ host, repo: location.repo, revision }),
      describe: `${endpoint}/${location.repo} (revision ${revision})`,
    };
  }
  const base = location.baseUrl.replace(/\/+$/, '');
  const url = new URL(base);
  return {
    urlOf: (file) => `${base}/${file}`,
    prefix: `urls/${encodeURIComponent(url.host)}${url.pathname.split('/').map(encodeURIComponent).join('/')}`,
    describe: base,
  };
}

function authHeaders(options: OpenCheckpointOptions): Record<string, string> {
  const token = options.token ?? envVar('HF_TOKEN');
  return token ? { Authorization: `Bearer ${token}` } : {};
}

const isBrowser = typeof window !== 'undefined' || typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== 'undefined';

/** What a user can check when a request never got an answer (the error itself says only "fetch failed"). */
export function networkHint(url: string): string {
  const host = new URL(url).host;
  const offline = 'Are you offline, or behind a proxy or firewall?';
  const endpoint = envVar('HF_ENDPOINT') ? ` HF_ENDPOINT is set to ${envVar('HF_ENDPOINT')}: is that server up?` : '';
  const cached = ' A model downloaded before opens offline from the cache; a local folder works too.';
  const browser = isBrowser ? ` In a browser this also shows when ${host} refuses the page's origin (CORS).` : '';
  return `${offline}${endpoint}${browser}${cached}`;
}

/** Throws a HubError naming the URL for any non-success status. */
function checkStatus(res: Response, url: string): void {
  if (res.ok) return;
  if (res.status === 401 || res.status === 403) {
    // The Hub answers 401 both for a repo that does not exist and for a gated/private one without a token.
    throw new HubError(
      `HTTP ${res.status} for ${url}: access denied (is the model id spelled right, owner/name? a gated or private repo ` +
        `needs a token: set HF_TOKEN or pass token; for a gated one, also accept its license on its Hub page)`,
      url,
      res.status,
    );
  }
  if (res.status === 404) throw new HubError(`HTTP 404 for ${url}: not found (check the model id, the revision and the file name)`, url, 404);
  throw new HubError(`HTTP ${res.status} ${res.statusText} for ${url}`, url, res.status);
}

async function fetchOrFail(url: string, init: RequestInit): Promise<Response> {
  try {
    // no-store: the browser's HTTP cache would keep a second copy of multi-GB files, and it resumes
    // truncated entries with Range requests of its own, which would interleave with ours.
    return await fetch(url, { ...init, redirect: 'follow', cache: 'no-store' });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    const cause = (err as Error & { cause?: Error }).cause;
    throw new HubError(`network error fetching ${url}: ${cause?.message ?? (err as Error).message}. ${networkHint(url)}`, url);
  }
}

/** `bytes a-b/total` → {start, total}; total may be '*'. */
function parseContentRange(header: string | null): { start: number; total: number | null } | null {
  const m = header?.match(/^bytes (\d+)-(\d+)\/(\d+|\*)$/);
  return m ? { start: Number(m[1]), total: m[3] === '*' ? null : Number(m[3]) } : null;
}

/** Tracks bytes over time for LoadProgress.rate (bytes/s over the last few seconds). */
class RateMeter {
  private samples: { t: number; bytes: number }[] = [];
  private received = 0;
  constructor(private windowMs = 3000) {}
  add(bytes: number): void {
    this.received += bytes;
    const t = Date.now();
    this.samples.push({ t, bytes: this.received });
    while (this.samples.length > 2 && t - this.samples[0]!.t > this.windowMs) this.samples.shift();
  }
  rate(): number | undefined {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last || last.t === first.t) return undefined;
    return ((last.bytes - first.bytes) * 1000) / (last.t - first.t);
  }
}

export interface DownloadOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Automatic resumes after failures in a row (default 3); an attempt that received bytes resets the count. */
  retries?: number;
  /** Wait before the first retry, doubled each time (default 500 ms). */
  retryDelayMs?: number;
  /** Called with this file's bytes so far (including bytes resumed from the cache) and its size when known. */
  onBytes?: (loaded: number, total: number | null, chunkBytes: number) => void;
}

/**
 * Downloads `url` into the cache under `key`, resuming from a partial download if one exists.
 * Returns the file's size. Throws a HubError naming the URL on HTTP errors, or when the
 * connection keeps failing (the bytes so far stay cached for a later resume).
 */
export async function downloadToCache(url: string, cache: DownloadCache, key: string, options: DownloadOptions = {}): Promise<number> {
  const retries = options.retries ?? 3;
  const baseDelay = options.retryDelayMs ?? 500;
  for (let attempt = 0; ; attempt++) {
    const partial = await cache.partial(key);
    const headers: Record<string, string> = { ...options.headers };
    let from = partial?.bytes ?? 0;
    if (from > 0) {
      headers.Range = `bytes=${from}-`;
      // If the file changed since, If-Range makes the server send all of it (200) instead of a mismatched tail.
      if (partial!.validator) headers['If-Range'] = partial!.validator;
    }
    let res: Response;
    try {
      res = await fetchOrFail(url, { headers, signal: options.signal });
    } catch (err) {
      if (err instanceof HubError && err.status === undefined && attempt < retries) {
        await sleep(baseDelay * 2 ** attempt, options.signal);
        continue;
      }
      throw err;
    }
    if (res.status === 416 && from > 0) {
      // The cached part is not a prefix of the current file (it shrank): start over.
      await res.body?.cancel();
      await (await cache.beginPartial(key, 0, null)).close();
      continue;
    }
    if ((res.status >= 500 || res.status === 429) && attempt < retries) {
      // Transient server trouble (the Hub and its CDN do return these): wait and try again.
      await res.body?.cancel();
      await sleep(baseDelay * 2 ** attempt, options.signal);
      continue;
    }
    checkStatus(res, url);
    let total: number | null;
    if (res.status === 206) {
      const range = parseContentRange(res.headers.get('content-range'));
      if (!range || range.start !== from) {
        await res.body?.cancel();
        throw new HubError(`bad Content-Range '${res.headers.get('content-range')}' from ${url} (asked for bytes ${from}-)`, url, 206);
      }
      total = range.total;
    } else {
      from = 0; // a full response: the server ignored the range or the file changed
      const length = res.headers.get('content-length');
      total = length !== null && res.headers.get('content-encoding') === null ? Number(length) : null;
    }
    const etag = res.headers.get('etag');
    const validator = etag && !etag.startsWith('W/') ? etag : res.headers.get('last-modified');
    const writer = await cache.beginPartial(key, from, validator);
    let loaded = from;
    options.onBytes?.(loaded, total, 0);
    try {
      const reader = res.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        await writer.append(value);
        loaded += value.byteLength;
        options.onBytes?.(loaded, total, value.byteLength);
      }
      if (total !== null && loaded !== total) throw new Error(`connection closed at ${loaded} of ${total} bytes`);
    } catch (err) {
      await writer.close();
      if ((err as Error).name === 'AbortError' || options.signal?.aborted) throw err;
      // A long download over a flaky link may drop many times: only failures in a row count.
      if (loaded > from) attempt = 0;
      if (attempt < retries) {
        await sleep(baseDelay * 2 ** attempt, options.signal);
        if (loaded > from) attempt = -1; // the loop's ++ makes it 0 again
        continue;
      }
      const detail = (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message;
      throw new HubError(`download of ${url} interrupted at ${loaded}${total !== null ? ` of ${total}` : ''} bytes (${attempt + 1} attempt(s) in a row failed: ${detail}); the bytes so far are cached and the next load resumes from them`, url);
    }
    await writer.complete();
    return loaded;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (ms <= 0) return resolve();
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

/** Side files fetched along with the weights; absent ones are fine. */
const SIDE_FILES = ['generation_config.json', 'tokenizer.json', 'tokenizer_config.json', ...CHAT_TEMPLATE_FILES];
const MANIFEST = 'webgrpo-download.json';

interface Manifest {
  files: string[];
  absent: string[];
}

/**
 * Opens the files of a remote checkpoint. With `download` (default) every file is downloaded into
 * the cache (skipping files already there) and the returned CheckpointFiles read the cache; once a
 * download finished, opening again makes no request at all. Without it, reads are Range requests.
 */
export async function remoteCheckpointFiles(location: RemoteLocation, options: OpenCheckpointOptions = {}): Promise<CheckpointFiles> {
  const remote = resolveRemote(location, options);
  if (options.download === false) return rangedHttpFiles(remote.urlOf, authHeaders(options), remote.describe);

  const cache = options.cache ?? (await defaultCache(options.cacheDir));
  const keyOf = (file: string) => `${remote.prefix}/${file}`;
  const files = cache.files(remote.prefix);

  const manifestText = await files.readText(MANIFEST);
  if (manifestText !== null) {
    const manifest = JSON.parse(manifestText) as Manifest;
    const sizes = await Promise.all(manifest.files.map((f) => cache.completeSize(keyOf(f))));
    // A download made by an older webgrpo may not have looked for every side file (chat_template.jinja).
    const asked = SIDE_FILES.every((f) => manifest.files.includes(f) || manifest.absent.includes(f));
    if (asked && sizes.every((s) => s !== null)) {
      const total = sizes.reduce<number>((a, s) => a + s!, 0);
      options.onProgress?.({ phase: 'cache', loadedBytes: total, totalBytes: total });
      return withoutManifest(files, manifest);
    }
  }

  const meter = new RateMeter();
  let finishedBytes = 0;
  let lastReport = 0;
  const fetchFile = async (file: string, required: boolean): Promise<boolean> => {
    const cachedSize = await cache.completeSize(keyOf(file));
    if (cachedSize !== null) {
      finishedBytes += cachedSize;
      return true;
    }
    const url = remote.urlOf(file);
    try {
      const size = await downloadToCache(url, cache, keyOf(file), {
        headers: authHeaders(options),
        signal: options.signal,
        retries: options.retries,
        retryDelayMs: options.retryDelayMs,
        onBytes: (loaded, total, chunk) => {
          meter.add(chunk);
          const now = Date.now();
          // Throttle to ~10 reports/s; always report the start and the end of a file.
          if (chunk === 0 || loaded === total || now - lastReport >= 100) {
            lastReport = now;
            options.onProgress?.({
              phase: 'download',
              file,
              loadedBytes: finishedBytes + loaded,
              totalBytes: finishedBytes + (total ?? loaded),
              rate: meter.rate(),
            });
          }
        },
      });
      finishedBytes += size;
      return true;
    } catch (err) {
      if (!required && err instanceof HubError && err.status === 404) return false;
      throw err;
    }
  };

  const present: string[] = [];
  const absent: string[] = [];
  const get = async (file: string, required: boolean) => ((await fetchFile(file, required)) ? present : absent).push(file);
  await get('config.json', true);
  // Fail before downloading gigabytes if this is not a model we can run.
  parseConfigText((await files.readText('config.json'))!, `${remote.describe}/config.json`);
  for (const f of SIDE_FILES) await get(f, false);
  await get('model.safetensors.index.json', false);
  if (present.includes('model.safetensors.index.json')) {
    const index = parseWeightIndex((await files.readText('model.safetensors.index.json'))!, `${remote.describe}/model.safetensors.index.json`);
    for (const shard of [...new Set(index.values())].sort()) await get(shard, true);
  } else {
    await get('model.safetensors', true);
  }
  const manifest: Manifest = { files: present, absent };
  await cache.writeComplete(keyOf(MANIFEST), new TextEncoder().encode(JSON.stringify(manifest)));
  return withoutManifest(files, manifest);
}

/**
 * Only config.json of a remote checkpoint (downloaded into the cache, or read from it), so the
 * caller can show the memory plan before committing to the weights download.
 */
export async function fetchRemoteConfig(location: RemoteLocation, options: OpenCheckpointOptions = {}): Promise<ModelConfig> {
  const remote = resolveRemote(location, options);
  if (options.download === false) {
    const text = await rangedHttpFiles(remote.urlOf, authHeaders(options), remote.describe).readText('config.json');
    if (text === null) throw new HubError(`HTTP 404 for ${remote.urlOf('config.json')}: not found`, remote.urlOf('config.json'), 404);
    return parseConfigText(text, `${remote.describe}/config.json`);
  }
  const cache = options.cache ?? (await defaultCache(options.cacheDir));
  const key = `${remote.prefix}/config.json`;
  if ((await cache.completeSize(key)) === null) {
    await downloadToCache(remote.urlOf('config.json'), cache, key, { headers: authHeaders(options), signal: options.signal, retries: options.retries, retryDelayMs: options.retryDelayMs });
  }
  return parseConfigText((await cache.files(remote.prefix).readText('config.json'))!, `${remote.describe}/config.json`);
}

/** Hides the manifest and answers "absent" for files known to be missing, without touching storage. */
function withoutManifest(files: CheckpointFiles, manifest: Manifest): CheckpointFiles {
  const known = new Set(manifest.files);
  return {
    location: files.location,
    size: async (file) => (known.has(file) ? files.size(file) : null),
    read: (file, start, end) => files.read(file, start, end),
    readText: async (file) => (known.has(file) ? files.readText(file) : null),
  };
}

/** CheckpointFiles over HTTP with no cache: sizes from a 1-byte Range probe, tensor bytes by Range requests. */
export function rangedHttpFiles(urlOf: (file: string) => string, headers: Record<string, string>, location: string): CheckpointFiles {
  const sizes = new Map<string, Promise<number | null>>();
  const probe = async (file: string): Promise<number | null> => {
    const url = urlOf(file);
    const res = await fetchOrFail(url, { headers: { ...headers, Range: 'bytes=0-0' } });
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    checkStatus(res, url);
    await res.body?.cancel();
    if (res.status === 206) {
      const range = parseContentRange(res.headers.get('content-range'));
      if (range?.total != null) return range.total;
    }
    throw new HubError(`${url} does not support HTTP Range requests (status ${res.status}); open it with download enabled instead`, url, res.status);
  };
  return {
    location,
    size: (file) => {
      if (!sizes.has(file)) sizes.set(file, probe(file));
      return sizes.get(file)!;
    },
    read: async (file, start, end) => {
      const url = urlOf(file);
      if (end === start) return new Uint8Array(0);
      const res = await fetchOrFail(url, { headers: { ...headers, Range: `bytes=${start}-${end - 1}` } });
      checkStatus(res, url);
      if (res.status !== 206) {
        await res.body?.cancel();
        throw new HubError(`${url} ignored the Range request for bytes ${start}-${end - 1} (status ${res.status})`, url, res.status);
      }
      const bytes = new Uint8Array(await res.arrayBuffer());
      if (bytes.byteLength !== end - start) {
        throw new HubError(`${url}: asked for ${end - start} bytes at ${start}, got ${bytes.byteLength}`, url, 206);
      }
      return bytes;
    },
    readText: async (file) => {
      const url = urlOf(file);
      const res = await fetchOrFail(url, { headers });
      if (res.status === 404) {
        await res.body?.cancel();
        return null;
      }
      checkStatus(res, url);
      return res.text();
    },
  };
}

