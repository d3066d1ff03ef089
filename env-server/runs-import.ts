// Importing an exported run from its JSON text, off the main thread (runs-import-worker.mjs), so a
// 50 MB import costs the server's event loop nothing: JSON.parse, the checks and the SQLite inserts
// all run in a worker with its own connection. An in-memory store has no file to share and imports
// on the caller's thread.
import { Worker } from 'node:worker_threads';
import { parseBoundedJson } from './json-limits.ts';
import { RunStore, RunStoreError } from './runs.ts';
import type { CreatedRun } from './runs-wire.ts';

export type ImportOutcome = ({ ok: true } & CreatedRun) | { ok: false; status: number; message: string };

/** Parses `text` (depth-limited) and imports it into `store`; every failure becomes an outcome. */
export function importRunTextInto(store: RunStore, text: string, maxJsonDepth: number): ImportOutcome {
  const parsed = parseBoundedJson(text, maxJsonDepth);
  if (!parsed.ok) {
    return { ok: false, status: 400, message: `Request body is not valid JSON: ${parsed.tooDeep ? parsed.message : parsed.error.message}` };
  }
  try {
    return { ok: true, ...store.import(parsed.value) };
  } catch (err) {
    if (err instanceof RunStoreError) return { ok: false, status: err.status, message: err.message };
    return { ok: false, status: 500, message: `Run store failure: ${(err as Error).message}` };
  }
}

/** Worker side: opens its own connection to `file`. */
export function importRunText(file: string, text: string, maxJsonDepth: number): ImportOutcome {
  const store = new RunStore(file);
  try {
    return importRunTextInto(store, text, maxJsonDepth);
  } finally {
    store.close();
  }
}

/** The import in progress per store: imports run one at a time, so at most one worker's memory is in use. */
const running = new WeakMap<RunStore, Promise<unknown>>();

/** Imports `body` into `store` without blocking this thread (a worker), or inline for ':memory:'. */
export function importRun(store: RunStore, body: Buffer, maxJsonDepth: number): Promise<ImportOutcome> {
  const text = body.toString('utf8');
  if (store.file === ':memory:') return Promise.resolve(importRunTextInto(store, text, maxJsonDepth));
  const previous = running.get(store) ?? Promise.resolve();
  const outcome = previous.then(() => importInWorker(store.file, text, maxJsonDepth));
  running.set(store, outcome);
  return outcome;
}

function importInWorker(file: string, text: string, maxJsonDepth: number): Promise<ImportOutcome> {
  return new Promise((resolve) => {
    const worker = new Worker(new URL('./runs-import-worker.mjs', import.meta.url), {
      workerData: { file, text, maxJsonDepth },
      // A hostile import may fail, but only its own worker.
      resourceLimits: { maxOldGenerationSizeMb: 1024 },
    });
    let settled = false;
    const settle = (outcome: ImportOutcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    worker.once('message', (outcome: ImportOutcome) => settle(outcome));
    worker.once('error', (err) => settle({ ok: false, status: 500, message: `Run store failure: import worker: ${err.message}` }));
    worker.once('exit', (code) => settle({ ok: false, status: 500, message: `Run store failure: import worker exited with code ${code}` }));
  });
}
