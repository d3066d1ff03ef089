// HTTP API of the run store, mounted on the env-server (`extraHandlers`):
//   POST /api/runs                         create → 201 {id, writeToken, shareUrl}
//   POST /api/runs/import                  import an exported run → 201 {id, writeToken, shareUrl}
//   GET  /api/runs/:id[?after=STEP]        run summary + steps after STEP (polling for live views)
//   GET  /api/runs/:id/rollouts[?step=S|?from=A&to=B|?last=N] → {rollouts, steps: every step with rollouts}
//   POST /api/runs/:id/name                {name}                       (header x-webgrpo-write-token)
//   DELETE /api/runs/:id                   the run, its steps, rollouts and files (header x-webgrpo-write-token)
//   GET  /api/runs/:id/export              the whole run as one JSON file
//   GET  /api/runs/:id/page                the run as one self-contained HTML page (run-page.ts)
//   POST /api/runs/:id/steps               {step, metrics, rollouts?}   (header x-webgrpo-write-token)
//   POST /api/runs/:id/status              {status, error?}             (header x-webgrpo-write-token)
//   GET  /api/runs[?limit=N&offset=M]      the runs list, newest first → {runs, total}
//   GET  /api/runs/:id/artifacts           files kept with the run → {artifacts: [{bundle, name, bytes}]}
//   POST /api/runs/:id/artifacts/:bundle   {files: [{name, base64}]} replaces the bundle (write token)
//   GET  /api/runs/:id/artifacts/:bundle/:name   one file, as a download
// Reads need only the id (the share link); writes need the token returned at creation and must be
// application/json. Who may send them at all (Host, Origin) the server decides for every route
// before this handler runs (origin-policy.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyTooLargeError, decodePathSegment, isJsonContentType, parseRequestUrl, readBody, sendBodyTooLarge } from './http-util.ts';
import { DEFAULT_MAX_JSON_DEPTH, parseBoundedJson } from './json-limits.ts';
import { importRun } from './runs-import.ts';
import { EMBED_LIMIT_BYTES, PAGE_ROLLOUT_STEPS, renderRunPage } from './run-page.ts';
import { RunStore, RunStoreError, type RunStatus } from './runs.ts';

export const WRITE_TOKEN_HEADER = 'x-webgrpo-write-token';

export interface RunsHttpOptions {
  /** Largest write body (create, steps, status), bytes; default 16 MiB. */
  maxBodyBytes?: number;
  /** Largest import body, bytes; default 64 MiB. */
  maxImportBytes?: number;
  /** Deepest JSON nesting accepted in a body; default 256. */
  maxJsonDepth?: number;
  log?(line: string): void;
}

export const DEFAULT_RUNS_MAX_BODY_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_IMPORT_BYTES = 64 * 1024 * 1024;
/** Most steps one rollouts request spans (`from`..`to`): a response stays small however long the run. */
export const MAX_ROLLOUT_STEP_RANGE = 100;

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

export function runsHandler(store: RunStore, options: RunsHttpOptions = {}) {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_RUNS_MAX_BODY_BYTES;
  const maxImportBytes = options.maxImportBytes ?? DEFAULT_MAX_IMPORT_BYTES;
  const maxJsonDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const log = options.log ?? (() => {});

  // Artifact uploads (an adapter or a checkpoint as base64) may be as large as an import.
  const readJson = async (req: IncomingMessage, limit = maxBodyBytes, flag = '--max-body-bytes'): Promise<unknown> => {
    const body = await readBody(req, limit, () => new BodyTooLargeError(limit, flag));
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
      if (parts.length === 0 && method === 'POST') {
        const body = asObject(await readJson(req), 'The run');
        const created = store.create({
          name: typeof body.name === 'string' ? body.name : undefined,
          config: asObject(body.config ?? {}, '"config"'),
          model: asObject(body.model ?? {}, '"model"'),
          env: asObject(body.env ?? {}, '"env"'),
        });
        if (body.parent !== undefined) store.setParent(created.id, created.writeToken, body.parent);
        send(res, 201, { ...created, shareUrl: `/#/runs/${created.id}` });
      } else if (parts.length === 0 && method === 'GET') {
        send(res, 200, store.list({ limit: queryInt(url, 'limit', 50, 1, 200), offset: queryInt(url, 'offset', 0, 0, Number.MAX_SAFE_INTEGER) }));
      } else if (parts.length === 2 && parts[1] === 'artifacts' && method === 'GET') {
        send(res, 200, { artifacts: store.artifacts(parts[0]) });
      } else if (parts.length === 3 && parts[1] === 'artifacts' && method === 'POST') {
        const body = asObject(await readJson(req, maxImportBytes, '--max-import-bytes'), 'The artifact upload');
        if (!Array.isArray(body.files)) throw new RunStoreError('"files" must be an array of {name, base64}', 400);
        const files = body.files.map((f: unknown, i: number) => {
          const file = asObject(f, `files[${i}]`);
          if (typeof file.base64 !== 'string' || !BASE64.test(file.base64)) throw new RunStoreError(`files[${i}].base64 must be a base64 string`, 400);
          return { name: file.name, data: Buffer.from(file.base64, 'base64') };
        });
        store.putArtifacts(parts[0], token, parts[2], files);
        send(res, 200, { ok: true });
      } else if (parts.length === 4 && parts[1] === 'artifacts' && method === 'GET') {
        const data = store.artifact(parts[0], parts[2], parts[3]);
        const type = parts[3].endsWith('.json') ? 'application/json' : 'application/octet-stream';
        res.writeHead(200, { 'content-type': type, 'content-length': data.length, 'content-disposition': `attachment; filename="${parts[3]}"` });
        res.end(data);
      } else if (parts.length === 1 && parts[0] === 'import' && method === 'POST') {
        const body = await readBody(req, maxImportBytes, () => new BodyTooLargeError(maxImportBytes, '--max-import-bytes'));
        const outcome = await importRun(store, body, maxJsonDepth);
        if (!outcome.ok) throw new RunStoreError(outcome.message, outcome.status);
        send(res, 201, { id: outcome.id, writeToken: outcome.writeToken, shareUrl: `/#/runs/${outcome.id}` });
      } else if (parts.length === 1 && method === 'GET') {
        const after = queryInt(url, 'after', -1, -1, Number.MAX_SAFE_INTEGER);
        send(res, 200, { run: store.get(parts[0]), steps: store.steps(parts[0], after) });
      } else if (parts.length === 2 && parts[1] === 'rollouts' && method === 'GET') {
        const step = url.searchParams.has('step') ? queryInt(url, 'step', 0, 0, Number.MAX_SAFE_INTEGER) : undefined;
        const last = url.searchParams.has('last') ? queryInt(url, 'last', 1, 1, Number.MAX_SAFE_INTEGER) : undefined;
        const from = url.searchParams.has('from') ? queryInt(url, 'from', 0, 0, Number.MAX_SAFE_INTEGER) : undefined;
        const to = url.searchParams.has('to') ? queryInt(url, 'to', 0, 0, Number.MAX_SAFE_INTEGER) : undefined;
        if (from !== undefined && to !== undefined && to - from > MAX_ROLLOUT_STEP_RANGE) throw new RunStoreError(`"from".."to" may span at most ${MAX_ROLLOUT_STEP_RANGE} steps`, 400);
        send(res, 200, { rollouts: store.rollouts(parts[0], { step, from, to: to ?? (from !== undefined ? from + MAX_ROLLOUT_STEP_RANGE : undefined), lastSteps: last }), steps: store.rolloutSteps(parts[0]) });
      } else if (parts.length === 1 && method === 'DELETE') {
        store.delete(parts[0], token);
        send(res, 200, { ok: true });
      } else if (parts.length === 2 && parts[1] === 'name' && method === 'POST') {
        const body = asObject(await readJson(req), 'The rename');
        store.rename(parts[0], token, body.name);
        send(res, 200, { ok: true });
      } else if (parts.length === 2 && parts[1] === 'page' && method === 'GET') {
        const id = parts[0];
        const files = store.artifacts(id).filter((a) => a.bundle === 'adapter');
        const embed = files.reduce((n, f) => n + f.bytes, 0) <= EMBED_LIMIT_BYTES;
        const html = renderRunPage({
          run: store.get(id),
          steps: store.steps(id),
          rollouts: store.rollouts(id, { lastSteps: PAGE_ROLLOUT_STEPS }),
          adapter: { files, bytes: embed ? new Map(files.map((f) => [f.name, store.artifact(id, 'adapter', f.name)])) : null },
        });
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html), 'content-disposition': `attachment; filename="webgrpo-run-${id}.html"` });
        res.end(html);
      } else if (parts.length === 2 && parts[1] === 'export' && method === 'GET') {
        const data = store.export(parts[0]);
        send(res, 200, data, { 'content-disposition': `attachment; filename="webgrpo-run-${parts[0]}.json"` });
      } else if (parts.length === 2 && parts[1] === 'steps' && method === 'POST') {
        const body = asObject(await readJson(req), 'The step');
        store.appendStep(parts[0], token, {
          step: body.step as number,
          metrics: asObject(body.metrics, '"metrics"'),
          rollouts: body.rollouts as Record<string, unknown>[] | undefined,
        });
        send(res, 200, { ok: true });
      } else if (parts.length === 2 && parts[1] === 'status' && method === 'POST') {
        const body = asObject(await readJson(req), 'The status');
        store.setStatus(parts[0], token, body.status as RunStatus, typeof body.error === 'string' ? body.error : undefined);
        send(res, 200, { ok: true });
      } else {
        send(res, parts.length <= 2 ? 405 : 404, { detail: parts.length <= 2 ? `Method ${method} not allowed on ${url.pathname}` : 'Not Found' });
      }
    } catch (err) {
      if (err instanceof BodyTooLargeError) sendBodyTooLarge(req, res, err.message);
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
