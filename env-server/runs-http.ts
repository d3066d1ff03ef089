// HTTP API of the run store, mounted on the env-server (`extraHandlers`):
//   POST /api/runs                         create → 201 {id, writeToken, shareUrl}
//   POST /api/runs/import                  import an exported run → 201 {id, writeToken, shareUrl}
//   GET  /api/runs/:id[?after=STEP]        run summary + steps after STEP (polling for live views)
//   GET  /api/runs/:id/rollouts[?step=S|?last=N]
//   GET  /api/runs/:id/export              the whole run as one JSON file
//   POST /api/runs/:id/steps               {step, metrics, rollouts?}   (header x-webgrpo-write-token)
//   POST /api/runs/:id/status              {status, error?}             (header x-webgrpo-write-token)
// Reads need only the id (the share link); writes need the token returned at creation, and every
// write must come from the app's own origin as application/json (write-guard.ts): any web page the
// user visits can reach 127.0.0.1, but it cannot send that.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyTooLargeError, decodePathSegment, parseRequestUrl, readBody, sendBodyTooLarge } from './http-util.ts';
import { DEFAULT_MAX_JSON_DEPTH, parseBoundedJson } from './json-limits.ts';
import { importRun } from './runs-import.ts';
import { RunStore, RunStoreError, type RunStatus } from './runs.ts';
import { writeRefusal } from './write-guard.ts';

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

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

const asObject = (v: unknown, what: string): Record<string, unknown> => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new RunStoreError(`${what} must be a JSON object`, 400);
  return v as Record<string, unknown>;
};

/** An integer query parameter ≥ `min`, or undefined when absent; anything else is a 400 naming it. */
function intParam(url: URL, name: string, min: number): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null) return undefined;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isSafeInteger(n) || n < min) throw new RunStoreError(`Query parameter '${name}' must be an integer ≥ ${min}, got ${JSON.stringify(raw)}`, 400);
  return n;
}

export function runsHandler(store: RunStore, options: RunsHttpOptions = {}) {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_RUNS_MAX_BODY_BYTES;
  const maxImportBytes = options.maxImportBytes ?? DEFAULT_MAX_IMPORT_BYTES;
  const maxJsonDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const log = options.log ?? (() => {});

  const readJson = async (req: IncomingMessage): Promise<unknown> => {
    const body = await readBody(req, maxBodyBytes, () => new BodyTooLargeError(maxBodyBytes, '--max-body-bytes'));
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
      if (method !== 'GET' && method !== 'HEAD') {
        const refusal = writeRefusal(req);
        if (refusal) {
          req.resume();
          send(res, refusal.status, { detail: refusal.detail });
          return true;
        }
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
        send(res, 201, { ...created, shareUrl: `/#/runs/${created.id}` });
      } else if (parts.length === 1 && parts[0] === 'import' && method === 'POST') {
        const body = await readBody(req, maxImportBytes, () => new BodyTooLargeError(maxImportBytes, '--max-import-bytes'));
        const outcome = await importRun(store, body, maxJsonDepth);
        if (!outcome.ok) throw new RunStoreError(outcome.message, outcome.status);
        send(res, 201, { id: outcome.id, writeToken: outcome.writeToken, shareUrl: `/#/runs/${outcome.id}` });
      } else if (parts.length === 1 && method === 'GET') {
        const after = intParam(url, 'after', -1) ?? -1;
        send(res, 200, { run: store.get(parts[0]), steps: store.steps(parts[0], after) });
      } else if (parts.length === 2 && parts[1] === 'rollouts' && method === 'GET') {
        const step = intParam(url, 'step', 0);
        const last = intParam(url, 'last', 1);
        send(res, 200, { rollouts: store.rollouts(parts[0], { step, lastSteps: last }) });
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
