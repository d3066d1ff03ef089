// The live run's writes through a run store outage (src/app/run-outbox.ts): queued in order, kept in
// storage, sent once the store answers again with growing waits, never lost or doubled; what a closed
// tab left behind is sent by the next page without claiming a run it no longer trains.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../src/app/api.ts';
import { stillTrue } from '../../src/app/leftover-writes.ts';
import { backoffMs, RunOutbox, storedWrites, type OutboxWrite } from '../../src/app/run-outbox.ts';
import { RunStore } from '../../env-server/runs.ts';

/** localStorage as the browser has it, in memory. */
function memoryStorage(): Storage {
  const m = new Map<string, string>();
  return {
    get length() {
      return m.size;
    },
    key: (i) => [...m.keys()][i] ?? null,
    getItem: (k) => m.get(k) ?? null,
    setItem: (k, v) => void m.set(k, String(v)),
    removeItem: (k) => void m.delete(k),
    clear: () => m.clear(),
  };
}

const step = (n: number): OutboxWrite => ({ kind: 'step', step: n, metrics: { reward: n / 10 }, rollouts: [] });

describe('run outbox', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('waits 1, 2, 4 … s between tries, at most 30 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 10].map(backoffMs)).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  });

  it('keeps the steps of an outage in storage and sends them in order, each once, when the store is back', async () => {
    // The real store behind the send: a step stored twice would show, a step lost too.
    const store = new RunStore(':memory:');
    const run = store.create({ config: {}, model: {}, env: {} });
    let up = true;
    const sent: number[] = [];
    const send = async (w: OutboxWrite) => {
      if (!up) throw new ApiError('The env-server at http://127.0.0.1:8000 is unreachable (Failed to fetch)', 0);
      if (w.kind === 'step') {
        sent.push(w.step);
        store.appendStep(run.id, run.writeToken, { step: w.step, metrics: w.metrics });
      } else store.setStatus(run.id, run.writeToken, w.status as 'running');
    };
    const storage = memoryStorage();
    const states: (number | null)[] = [];
    const outbox = new RunOutbox(run.id, send, { storage, onState: (s) => states.push(s.retryAt) });
    outbox.push(step(0));
    await vi.advanceTimersByTimeAsync(0);
    up = false; // the server stops
    outbox.push(step(1));
    outbox.push({ kind: 'status', status: 'running' });
    outbox.push({ kind: 'status', status: 'running' }); // a heartbeat replaces the status still queued
    outbox.push(step(2));
    await vi.advanceTimersByTimeAsync(0);
    expect(storedWrites(storage, run.id).map((w) => (w.kind === 'step' ? w.step : w.status))).toEqual([1, 'running', 2]);
    expect(states.some((t) => t !== null)).toBe(true);
    await vi.advanceTimersByTimeAsync(20_000); // tries at 1, 2, 4, 8 s all fail
    up = true; // and is back: the next try (16 s later) sends the queue
    await vi.advanceTimersByTimeAsync(16_000);
    await outbox.drained();
    expect(sent).toEqual([0, 1, 2]);
    expect(store.steps(run.id).map((s) => s.step)).toEqual([0, 1, 2]);
    expect(storedWrites(storage, run.id)).toEqual([]);
    expect(outbox.pending).toBe(0);
    store.close();
  });

  it('starts with what a closed tab left in storage, ahead of new writes', async () => {
    const storage = memoryStorage();
    storage.setItem('webgrpo.outbox.r1', JSON.stringify([step(3), step(4)]));
    const sent: number[] = [];
    const outbox = new RunOutbox('r1', async (w) => void (w.kind === 'step' && sent.push(w.step)), { storage });
    outbox.push(step(5));
    await outbox.drained();
    expect(sent).toEqual([3, 4, 5]);
  });

  it('drops a write the store refuses for good (403), says so, and goes on with the next', async () => {
    const rejected: string[] = [];
    const sent: number[] = [];
    const outbox = new RunOutbox('r1', async (w) => {
      if (w.kind === 'step' && w.step === 1) throw new ApiError('This run is read-only here: a valid write token is required', 403);
      if (w.kind === 'step') sent.push(w.step);
    }, { onRejected: (_w, err) => rejected.push(err.message) });
    [0, 1, 2].forEach((n) => outbox.push(step(n)));
    await outbox.drained();
    expect(sent).toEqual([0, 2]);
    expect(rejected).toEqual(['This run is read-only here: a valid write token is required']);
  });

  it("a closed tab's leftovers keep steps and final statuses, never a live one", () => {
    const writes: OutboxWrite[] = [step(0), { kind: 'status', status: 'running' }, step(1), { kind: 'status', status: 'paused' }, { kind: 'status', status: 'finished' }];
    expect(stillTrue(writes)).toEqual([step(0), step(1), { kind: 'status', status: 'finished' }]);
  });
});
