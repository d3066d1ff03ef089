// Importing an exported run from its JSON text, off the main thread (runs-import-worker.mjs), so a
// 50 MB import costs the server's event loop nothing: JSON.parse, the checks and the SQLite inserts
// all run in a worker with its own connection. The worker writes in short transactions and rests
// between them as long as each took, so the server's own writes (a live run's steps) get the write
// lock within one batch. Shutdown asks every worker to stop (it checks between batches) and ends
// those that do not within a grace period. An in-memory store has no file to share and imports on
// the caller's thread.
import { Worker } from 'node:worker_threads';
import { parseBoundedJson } from './json-limits.ts';
import { RunStore, RunStoreError, type ImportPacing } from './runs.ts';
import type { CreatedRun } from './runs-wire.ts';

export type ImportOutcome = ({ ok: true } & CreatedRun) | { ok: false; status: number; message: string };

/** Parses `text` (depth-limited) and imports it into `store`; every failure becomes an outcome. */
export function importRunTextInto(store: RunStore, text: string, maxJsonDepth: number, pacing?: ImportPacing): ImportOutcome {
  const parsed = parseBoundedJson(text, maxJsonDepth);
  if (!parsed.ok) {
    return { ok: false, status: 400, message: `Request body is not valid JSON: ${parsed.tooDeep ? parsed.message : parsed.error.message}` };
  }
  try {
    return { ok: true, ...store.import(parsed.value, pacing) };
  } catch (err) {
    if (err instanceof RunStoreError) return { ok: false, status: err.status, message: err.message };
    return { ok: false, status: 500, message: `Run store failure: ${(err as Error).message}` };
  }
}

/** The rollout limits an import is checked against (the server's flags), as the worker receives them. */
export interface ImportLimits {
  maxRolloutsPerStep: number;
  maxRolloutsPerRun: number;
}

/**
 * Worker side: opens its own connection to `file`. `stop` is shared with the server: non-zero asks
 * the import to stop; between batches the worker sleeps on it, so that request wakes it at once.
 */
export function importRunText(file: string, text: string, maxJsonDepth: number, limits: ImportLimits, stop: Int32Array): ImportOutcome {
  const store = new RunStore(file, { ...limits, importer: true });
  const pacing: ImportPacing = {
    between(batchMs) {
      // Rest as long as the batch held the lock: other connections' writes get their turn.
      Atomics.wait(stop, 0, 0, Math.max(batchMs, 2));
      return Atomics.load(stop, 0) === 0;
    },
  };
  try {
    return importRunTextInto(store, text, maxJsonDepth, pacing);
  } finally {
    store.close();
  }
}

/** How long a worker asked to stop may take before it is ended. */
const STOP_GRACE_MS = 3000;

interface RunningImport {
  worker: Worker;
  stop: Int32Array;
}

/** The import in progress per store: imports run one at a time, so at most one worker's memory is in use. */
const queues = new WeakMap<RunStore, Promise<unknown>>();
const running = new Set<RunningImport>();
let stopping = false;

/**
 * A worker kept after an import for the next one: starting one (a thread, tsx, the run store's
 * TypeScript) costs 0.5–0.8 s, more than a small import itself. Unreferenced, and ended after
 * IDLE_WORKER_MS, so an idle server holds no thread; a worker that failed or was ended is never kept.
 */
let idle: { worker: Worker; timer: NodeJS.Timeout } | null = null;
const IDLE_WORKER_MS = 30_000;
/** A worker that parsed a larger import is ended, not kept: the next import starts with a fresh heap. */
const REUSE_MAX_TEXT = 4 * 1024 * 1024;

/** Imports `body` into `store` without blocking this thread (a worker), or inline for ':memory:'. */
export function importRun(store: RunStore, body: Buffer, maxJsonDepth: number): Promise<ImportOutcome> {
  const text = body.toString('utf8');
  if (store.file === ':memory:') return Promise.resolve(importRunTextInto(store, text, maxJsonDepth));
  const limits: ImportLimits = { maxRolloutsPerStep: store.maxRolloutsPerStep, maxRolloutsPerRun: store.maxRolloutsPerRun };
  const previous = queues.get(store) ?? Promise.resolve();
  const outcome = previous.then(() => importInWorker(store.file, text, maxJsonDepth, limits));
  queues.set(store, outcome);
  return outcome;
}

const STOPPED: ImportOutcome = { ok: false, status: 503, message: 'The import was abandoned: the server is stopping' };

function takeWorker(): Worker {
  if (idle) {
    const { worker, timer } = idle;
    idle = null;
    clearTimeout(timer);
    worker.ref();
    return worker;
  }
  // A hostile import may fail, but only its own worker.
  return new Worker(new URL('./runs-import-worker.mjs', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: 1024 } });
}

function keepWorker(worker: Worker): void {
  if (stopping || idle) return void worker.terminate();
  worker.unref();
  idle = { worker, timer: setTimeout(() => { if (idle?.worker === worker) idle = null; void worker.terminate(); }, IDLE_WORKER_MS) };
  idle.timer.unref();
}

function importInWorker(file: string, text: string, maxJsonDepth: number, limits: ImportLimits): Promise<ImportOutcome> {
  if (stopping) return Promise.resolve(STOPPED);
  return new Promise((resolve) => {
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const worker = takeWorker();
    // No listener outlives its import: a kept worker serves many.
    const job: RunningImport = { worker, stop };
    running.add(job);
    const settle = (outcome: ImportOutcome, reusable: boolean) => {
      if (!running.delete(job)) return;
      worker.off('message', onMessage).off('error', onError).off('exit', onExit);
      if (reusable) keepWorker(worker);
      resolve(outcome);
    };
    const onMessage = (outcome: ImportOutcome) => settle(outcome, text.length <= REUSE_MAX_TEXT);
    const onError = (err: Error) => settle({ ok: false, status: 500, message: `Run store failure: import worker: ${err.message}` }, false);
    const onExit = (code: number) => settle(stopping ? STOPPED : { ok: false, status: 500, message: `Run store failure: import worker exited with code ${code}` }, false);
    worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    worker.postMessage({ file, text, maxJsonDepth, limits, stop });
  });
}

/**
 * Stops every import (server shutdown): each worker is asked to stop and does so after its current
 * batch, removing what it wrote; one still running after STOP_GRACE_MS is ended (its rows stay
 * hidden, and the next store to open the file removes them). Later imports are refused.
 */
export async function stopImports(): Promise<void> {
  stopping = true;
  if (idle) {
    clearTimeout(idle.timer);
    void idle.worker.terminate();
    idle = null;
  }
  const jobs = [...running].map((job) => ({ ...job, exited: new Promise<void>((r) => job.worker.once('exit', () => r())) }));
  for (const job of jobs) {
    Atomics.store(job.stop, 0, 1);
    Atomics.notify(job.stop, 0);
  }
  await Promise.all(jobs.map(async (job) => {
    const grace = setTimeout(() => void job.worker.terminate(), STOP_GRACE_MS);
    await job.exited;
    clearTimeout(grace);
  }));
}
