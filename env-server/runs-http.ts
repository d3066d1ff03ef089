// HTTP API of the run store, mounted on the env-server (`extraHandlers`):
//   POST /api/runs                         create → 201 {id, writeToken, shareToken, shareUrl}
//   POST /api/runs/import                  import an exported run → 201 {id, writeToken, shareToken, shareUrl}
//   POST /api/runs/list                    {writeTokens, limit?, offset?} → the caller's own runs {runs, total}
//   GET  /api/runs[?limit=N&offset=M]      every run, newest first → {runs, total} (local tools only)
//   GET  /api/runs/:id[?after=STEP]        run summary + steps after STEP + its shareToken (polling for live views)
//   GET  /api/runs/:id/rollouts[?step=S|?from=A&to=B|?last=N][&offset=K&limit=L]
//                                          → {rollouts (at most L, from the K-th on), steps: every step with rollouts, next: K+L or null}
//   POST /api/runs/:id/name                {name}                       (header x-webgrpo-write-token)
//   DELETE /api/runs/:id                   the run, its steps, rollouts and files (header x-webgrpo-write-token)
//   GET  /api/runs/:id/export              the whole run as one JSON file
//   GET  /api/runs/:id/page                the run as one self-contained HTML page (run-page.ts)
//   POST /api/runs/:id/steps               {step, metrics, rollouts?}   (header x-webgrpo-write-token)
//   POST /api/runs/:id/step-metrics        {step, metrics} merged into a stored step (an evaluation's
//                                          numbers added to the step it evaluated)   (write token)
//   POST /api/runs/:id/status              {status, error?}             (header x-webgrpo-write-token)
//   GET  /api/runs/:id/artifacts           files kept with the run → {artifacts: [{bundle, name, bytes}]}
//   POST /api/runs/:id/artifacts/:bundle   {files: [{name, base64}]} replaces the bundle (write token)
//   GET  /api/runs/:id/artifacts/:bundle/:name   one file, as a download
// A STEP here is the store's key, counted from 0; every view a person reads (the
// app, the exported page) shows step + 1, so step 0 of the API is "step 1" there.
// Every GET of a run needs its share token (header x-webgrpo-share-token or ?share=) or its write
// token; writes need the write token returned at creation and must be application/json (run-access.ts
// says who may read what). Who may send requests at all (Host, Origin) the server decides for every
// route before this handler runs (origin-policy.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { zipSync } from 'fflate';
import { BodyBudget, BodyBudgetExhausted } from './body-budget.ts';
import { BodyTooLargeError, decodePathSegment, isJsonContentType, parseRequestUrl, sendBeforeBodyEnds, sendBodyTooLarge } from './http-util.ts';
import { DEFAULT_MAX_JSON_DEPTH, parseBoundedJson } from './json-limits.ts';
import { importRun } from './runs-import.ts';
import { EMBED_LIMIT_BYTES, PAGE_ROLLOUT_STEPS, PAGE_ROLLOUTS_PER_STEP, renderRunPage } from './run-page.ts';
import { isLocalTool, readCredentials, shareLink, WRITE_TOKEN_HEADER } from './run-access.ts';
import { RunStore, RunStoreError } from './runs.ts';
import type { ArtifactInfo, RunStatus } from './runs-wire.ts';

export { SHARE_TOKEN_HEADER, WRITE_TOKEN_HEADER } from './run-access.ts';

export interface RunsHttpOptions {
  /** Largest write body (create, steps, status), bytes; default 16 MiB. */
  maxBodyBytes?: number;
  /** Largest import body, bytes; default 64 MiB. */
  maxImportBytes?: number;
  /** Deepest JSON nesting accepted in a body; default 256. */
  maxJsonDepth?: number;
  /** Bytes of request bodies held at once, all requests together; past it, 503 (default 128 MiB). */
  maxInflightBodyBytes?: number;
  log?(line: string): void;
}

export const DEFAULT_RUNS_MAX_BODY_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_IMPORT_BYTES = 64 * 1024 * 1024;
/** Two imports' worth: one being written, one being received. */
export const DEFAULT_MAX_INFLIGHT_BODY_BYTES = 128 * 1024 * 1024;
/** Most rollouts one rollouts response carries (the `limit` default and maximum). */
export const MAX_ROLLOUTS_PAGE = 1000;
/** Most steps one rollouts request spans (`from`..`to`): a response stays small however long the run. */
export const MAX_ROLLOUT_STEP_RANGE = 100;
/** Most write tokens one owner's list request may present (a browser's runs; the body limit bounds it too). */
export const MAX_LIST_TOKENS = 10_000;

/** An owner's list request: its write tokens (strings of at most 100 characters), checked. */
function writeTokensOf(value: unknown): string[] {
  if (!Array.isArray(value) || value.length > MAX_LIST_TOKENS || !value.every((t) => typeof t === 'string' && t.length > 0 && t.length <= 100)) {
    throw new RunStoreError(`"writeTokens" must be an array of at most ${MAX_LIST_TOKENS} non-empty strings (the write tokens of your runs)`, 400);
  }
  return value as string[];
}

/** A list query's limit/offset from a JSON body (absent → default), checked as the query string ones are. */
function bodyInt(body: Record<string, unknown>, name: string, fallback: number, min: number, max: number): number {
  const v = body[name];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new RunStoreError(`"${name}" must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`, 400);
  return v;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

const asObject = (v: unknown, what: string): Record<string, unknown> => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new RunStoreError(`${what} must be a JSON object`, 400);
  return v as Record<string, unknown>;
};

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** An integer query parameter within [min, max], its default when absent; anything else is a 400 naming it. */
function queryInt(url: URL, name: string, fallback: number, min: number, max: number): number {
  const text = url.searchParams.get(name);
  if (text === null) return fallback;
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n) || n < min || n > max) throw new RunStoreError(`"${name}" must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`, 400);
  return n;
}

/** Resolves when `res` may take more ('drain'), or is gone ('close'). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Writes an export as the store produces it, one piece at a time, giving the event loop a turn after
 * each (a loopback socket takes megabytes without pushing back, so waiting for 'drain' alone would
 * write a whole run in one turn) and waiting for the client when it pushes back. The first piece
 * (the run itself, or its 404) is made before the headers are sent.
 */
async function sendExport(res: ServerResponse, pieces: Generator<string>, id: string): Promise<void> {
  let piece = pieces.next();
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-disposition': `attachment; filename="webgrpo-run-${id}.json"` });
  for (; !piece.done; piece = pieces.next()) {
    if (res.destroyed) return;
    if (!res.write(piece.value)) await drained(res);
    await nextTurn();
  }
  res.end();
}

export function runsHandler(store: RunStore, options: RunsHttpOptions = {}) {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_RUNS_MAX_BODY_BYTES;
  const maxImportBytes = options.maxImportBytes ?? DEFAULT_MAX_IMPORT_BYTES;
  const maxJsonDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const budget = new BodyBudget(options.maxInflightBodyBytes ?? DEFAULT_MAX_INFLIGHT_BODY_BYTES);
  if (budget.limit < maxImportBytes) throw new Error(`--max-inflight-body-bytes (${budget.limit}) must be at least --max-import-bytes (${maxImportBytes}), or no import could ever be received`);
  // An artifact upload is its files as base64 (4 bytes per 3) in JSON: a body past that is refused as it arrives.
  const maxArtifactBody = Math.min(maxImportBytes, Math.ceil(store.maxArtifactBytes / 3) * 4 + 64 * 1024);
  const log = options.log ?? (() => {});

  const readBody = (req: IncomingMessage, res: ServerResponse, limit: number, flag: string): Promise<Buffer> =>
    budget.read(req, res, limit, () => new BodyTooLargeError(limit, flag));
  const readJson = async (req: IncomingMessage, res: ServerResponse, limit = maxBodyBytes, flag = '--max-body-bytes'): Promise<unknown> => {
    const body = await readBody(req, res, limit, flag);
    const parsed = parseBoundedJson(body.toString('utf8'), maxJsonDepth);
    if (!parsed.ok) throw new RunStoreError(`Request body is not valid JSON: ${parsed.tooDeep ? parsed.message : parsed.error.message}`, 400);
    return parsed.value;
  };

  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const url = parseRequestUrl(req.url);
    if (!url || !(url.pathname === '/api/runs' || url.pathname.startsWith('/api/runs/'))) return false;
    const method = req.method ?? 'GET';
    try {
      const decoded = url.pathname.split('/').filter(Boolean).slice(2).map(decodePathSegment); // after "api", "runs"
      if (decoded.some((p) => p === null)) throw new RunStoreError(`Bad percent-encoding in ${JSON.stringify(url.pathname)}`, 400);
      const parts = decoded as string[];
      if (method !== 'GET' && method !== 'HEAD' && !isJsonContentType(req.headers['content-type'])) {
        req.resume();
        send(res, 415, { detail: `Run store writes must be sent as application/json, got ${JSON.stringify(req.headers['content-type'] ?? '')}` });
        return true;
      }
      const token = req.headers[WRITE_TOKEN_HEADER] as string | undefined;
      const local = isLocalTool(req);
      // A run's data goes only to a reader who shows its share (or write) token, or to a local tool.
      const readable = (id: string): string => (local ? store.shareTokenOf(id) : store.authorizeRead(id, readCredentials(req, url)));
      if (parts.length === 0 && method === 'POST') {
        const body = asObject(await readJson(req, res), 'The run');
        const created = store.create({
          name: typeof body.name === 'string' ? body.name : undefined,
          config: asObject(body.config ?? {}, '"config"'),
          model: asObject(body.model ?? {}, '"model"'),
          env: asObject(body.env ?? {}, '"env"'),
        });
        if (body.parent !== undefined) store.setParent(created.id, created.writeToken, body.parent);
        send(res, 201, { ...created, shareUrl: shareLink(created.id, created.shareToken) });
      } else if (parts.length === 0 && method === 'GET') {
        // Listing every id (with its share token) to any reader would open every run to the whole LAN.
        if (!local) throw new RunStoreError('The list of every run is only for local tools; a browser lists its own runs with POST /api/runs/list {writeTokens}', 403);
        send(res, 200, store.list({ limit: queryInt(url, 'limit', 50, 1, 200), offset: queryInt(url, 'offset', 0, 0, Number.MAX_SAFE_INTEGER) }));
      } else if (parts.length === 1 && parts[0] === 'list' && method === 'POST') {
        const body = asObject(await readJson(req, res), 'The list request');
        const writeTokens = writeTokensOf(body.writeTokens);
        send(res, 200, store.list({ writeTokens, limit: bodyInt(body, 'limit', 50, 1, 200), offset: bodyInt(body, 'offset', 0, 0, Number.MAX_SAFE_INTEGER) }));
      } else if (parts.length === 2 && parts[1] === 'artifacts' && method === 'GET') {
        readable(parts[0]);
        send(res, 200, { artifacts: store.artifacts(parts[0]) });
      } else if (parts.length === 3 && parts[1] === 'artifacts' && method === 'POST') {
        const body = asObject(await readJson(req, res, maxArtifactBody, `the run store's limit of ${store.maxArtifactBytes} artifact bytes per run, as base64`), 'The artifact upload');
        if (!Array.isArray(body.files)) throw new RunStoreError('"files" must be an array of {name, base64}', 400);
        const files = body.files.map((f: unknown, i: number) => {
          const file = asObject(f, `files[${i}]`);
          if (typeof file.base64 !== 'string' || !BASE64.test(file.base64)) throw new RunStoreError(`files[${i}].base64 must be a base64 string`, 400);
          return { name: file.name, data: Buffer.from(file.base64, 'base64') };
        });
        store.putArtifacts(parts[0], token, parts[2], files);
        send(res, 200, { ok: true });
      } else if (parts.length === 4 && parts[1] === 'artifacts' && method === 'GET') {
        readable(parts[0]);
        const data = store.artifact(parts[0], parts[2], parts[3]);
        const type = parts[3].endsWith('.json') ? 'application/json' : 'application/octet-stream';
        res.writeHead(200, { 'content-type': type, 'content-length': data.length, 'content-disposition': `attachment; filename="${parts[3]}"` });
        res.end(data);
      } else if (parts.length === 1 && parts[0] === 'import' && method === 'POST') {
        const body = await readBody(req, res, maxImportBytes, '--max-import-bytes');
        const outcome = await importRun(store, body, maxJsonDepth);
        if (!outcome.ok) throw new RunStoreError(outcome.message, outcome.status);
        send(res, 201, { id: outcome.id, writeToken: outcome.writeToken, shareToken: outcome.shareToken, shareUrl: shareLink(outcome.id, outcome.shareToken) });
      } else if (parts.length === 1 && method === 'GET') {
        const shareToken = readable(parts[0]);
        const after = queryInt(url, 'after', -1, -1, Number.MAX_SAFE_INTEGER);
        send(res, 200, { run: store.get(parts[0]), steps: store.steps(parts[0], after), shareToken });
      } else if (parts.length === 2 && parts[1] === 'rollouts' && method === 'GET') {
        readable(parts[0]);
        const step = url.searchParams.has('step') ? queryInt(url, 'step', 0, 0, Number.MAX_SAFE_INTEGER) : undefined;
        const last = url.searchParams.has('last') ? queryInt(url, 'last', 1, 1, Number.MAX_SAFE_INTEGER) : undefined;
        const from = url.searchParams.has('from') ? queryInt(url, 'from', 0, 0, Number.MAX_SAFE_INTEGER) : undefined;
        const to = url.searchParams.has('to') ? queryInt(url, 'to', 0, 0, Number.MAX_SAFE_INTEGER) : undefined;
        if (from !== undefined && to !== undefined && to - from > MAX_ROLLOUT_STEP_RANGE) throw new RunStoreError(`"from".."to" may span at most ${MAX_ROLLOUT_STEP_RANGE} steps`, 400);
        const offset = queryInt(url, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
        const limit = queryInt(url, 'limit', MAX_ROLLOUTS_PAGE, 1, MAX_ROLLOUTS_PAGE);
        // One more than asked tells whether there is a next page.
        const rollouts = store.rollouts(parts[0], { step, from, to: to ?? (from !== undefined ? from + MAX_ROLLOUT_STEP_RANGE : undefined), lastSteps: last, offset, limit: limit + 1 });
        const next = rollouts.length > limit ? offset + limit : null;
        send(res, 200, { rollouts: rollouts.slice(0, limit), steps: store.rolloutSteps(parts[0]), next });
      } else if (parts.length === 1 && method === 'DELETE') {
        store.delete(parts[0], token);
        send(res, 200, { ok: true });
      } else if (parts.length === 2 && parts[1] === 'name' && method === 'POST') {
        const body = asObject(await readJson(req, res), 'The rename');
        store.rename(parts[0], token, body.name);
        send(res, 200, { ok: true });
      } else if (parts.length === 2 && parts[1] === 'page' && method === 'GET') {
        const id = parts[0];
        readable(id);
        const kept = store.artifacts(id);
        const bundle = (name: 'adapter' | 'model') => kept.filter((a) => a.bundle === name);
        const fits = (files: ArtifactInfo[]) => files.reduce((n, f) => n + f.bytes, 0) <= EMBED_LIMIT_BYTES;
        const files = bundle('adapter');
        const modelFiles = bundle('model');
        const rollouts = store.rollouts(id, { lastSteps: PAGE_ROLLOUT_STEPS, perStep: PAGE_ROLLOUTS_PER_STEP });
        const html = renderRunPage({
          run: store.get(id),
          steps: store.steps(id),
          rollouts,
          rolloutCounts: store.rolloutCounts(id, [...new Set(rollouts.map((r) => r.step))]),
          adapter: { files, bytes: fits(files) ? new Map(files.map((f) => [f.name, store.artifact(id, 'adapter', f.name)])) : null },
          // One zip (stored, not deflated: safetensors barely compress), as the app's model download.
          model: { files: modelFiles, zip: fits(modelFiles) ? Buffer.from(zipSync(Object.fromEntries(modelFiles.map((f) => [f.name, store.artifact(id, 'model', f.name)])), { level: 0 })) : null },
        });
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html), 'content-disposition': `attachment; filename="webgrpo-run-${id}.html"` });
        res.end(html);
      } else if (parts.length === 2 && parts[1] === 'export' && method === 'GET') {
        readable(parts[0]);
        await sendExport(res, store.exportText(parts[0]), parts[0]);
      } else if (parts.length === 2 && parts[1] === 'steps' && method === 'POST') {
        const body = asObject(await readJson(req, res), 'The step');
        store.appendStep(parts[0], token, {
          step: body.step as number,
          metrics: asObject(body.metrics, '"metrics"'),
          rollouts: body.rollouts as Record<string, unknown>[] | undefined,
        });
        send(res, 200, { ok: true });
      } else if (parts.length === 2 && parts[1] === 'step-metrics' && method === 'POST') {
        const body = asObject(await readJson(req, res), 'The step metrics');
        store.mergeStepMetrics(parts[0], token, { step: body.step as number, metrics: asObject(body.metrics, '"metrics"') });
        send(res, 200, { ok: true });
      } else if (parts.length === 2 && parts[1] === 'status' && method === 'POST') {
        const body = asObject(await readJson(req, res), 'The status');
        store.setStatus(parts[0], token, body.status as RunStatus, typeof body.error === 'string' ? body.error : undefined);
        send(res, 200, { ok: true });
      } else {
        send(res, parts.length <= 2 ? 405 : 404, { detail: parts.length <= 2 ? `Method ${method} not allowed on ${url.pathname}` : 'Not Found' });
      }
    } catch (err) {
      if (err instanceof BodyTooLargeError) sendBodyTooLarge(req, res, err.message);
      else if (err instanceof BodyBudgetExhausted) sendBeforeBodyEnds(req, res, 503, err.message);
      else if (res.headersSent) res.destroy();
      else if (err instanceof RunStoreError) send(res, err.status, { detail: err.message });
      else {
        log(`run store ${method} ${url.pathname}: ${(err as Error).message}`);
        send(res, 500, { detail: `Run store failure: ${(err as Error).message}` });
      }
    }
    return true;
  };
}
