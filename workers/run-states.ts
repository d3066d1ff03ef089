// Where the worker keeps each run's newest state (src/rl/run-state.ts: its checkpoint), keyed by run
// id, so a reloaded or crashed tab can continue the run: IndexedDB in the browser (available in
// workers, survives reloads, stores Uint8Arrays as they are), a Map in Node tests. Only the newest
// state of a run is kept. The database and row names are those stored runs already have.

import type { RunState } from '../src/rl/run-state.ts';

/** Every run's newest state in this browser; the worker hands a Run a RunStateStore bound to one run id. */
export interface RunStates {
  save(runId: string, state: RunState): Promise<void>;
  load(runId: string): Promise<RunState | null>;
}

export function memoryRunStates(): RunStates {
  const kept = new Map<string, RunState>();
  return {
    async save(runId, ckpt) {
      kept.set(runId, { ...ckpt, files: new Map(ckpt.files) });
    },
    async load(runId) {
      return kept.get(runId) ?? null;
    },
  };
}

const DB_NAME = 'webgrpo-checkpoints';
const STORE = 'runs';

interface Row {
  runId: string;
  runStep: number;
  sftSteps: number;
  sftStepsDone: number;
  files: Record<string, Uint8Array>;
}

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error('IndexedDB request failed'));
  });
}

function openDb(): Promise<IDBDatabase> {
  if (typeof indexedDB === 'undefined') return Promise.reject(new Error('checkpoints: this browser has no IndexedDB, so runs cannot be resumed'));
  const open = indexedDB.open(DB_NAME, 1);
  open.onupgradeneeded = () => open.result.createObjectStore(STORE, { keyPath: 'runId' });
  return request(open);
}

export function indexedDbRunStates(): RunStates {
  let db: Promise<IDBDatabase> | null = null;
  const store = async (mode: IDBTransactionMode) => (await (db ??= openDb())).transaction(STORE, mode).objectStore(STORE);
  return {
    async save(runId, ckpt) {
      const row: Row = { runId, runStep: ckpt.runStep, sftSteps: ckpt.sftSteps, sftStepsDone: ckpt.sftStepsDone, files: Object.fromEntries(ckpt.files) };
      try {
        await request((await store('readwrite')).put(row));
      } catch (err) {
        // A full disk must name itself: otherwise the run just "cannot resume" later.
        throw new Error(`checkpoints: could not store the checkpoint of run ${runId} in IndexedDB (${(err as Error).message})`);
      }
    },
    async load(runId) {
      const row = (await request((await store('readonly')).get(runId))) as Row | undefined;
      if (!row) return null;
      return { runStep: row.runStep, sftSteps: row.sftSteps, sftStepsDone: row.sftStepsDone, files: new Map(Object.entries(row.files)) };
    },
  };
}
