// Writes a tab queued for the run store and could not send before it closed (the store was away):
// sent by the next page of this browser that opens, in order. Only for runs no tab trains now (the
// run's lock, run-lock.ts; that tab's own outbox sends them). A tab that no longer trains a run must
// not say it is live: its queued running/paused statuses are dropped, steps and final statuses sent.
import { ownedRuns } from './api.ts';
import { storeWriter } from './live-run.ts';
import { claimRun } from './run-lock.ts';
import { RunOutbox, runsWithStoredWrites, storedWrites, type OutboxWrite } from './run-outbox.ts';

const FINAL = new Set(['finished', 'stopped', 'failed']);

/** What of a closed tab's queue is still true to send. */
export function stillTrue(writes: readonly OutboxWrite[]): OutboxWrite[] {
  return writes.filter((w) => w.kind === 'step' || FINAL.has(w.status));
}

/** Sends what closed tabs left queued; one try per run (a store still away keeps them for later). */
export async function sendLeftoverWrites(storage: Storage = localStorage): Promise<void> {
  for (const runId of runsWithStoredWrites(storage)) {
    const token = ownedRuns.get(runId);
    if (!token) {
      storage.removeItem(`webgrpo.outbox.${runId}`);
      continue;
    }
    const claim = await claimRun(runId);
    if (!claim) continue;
    try {
      const writes = stillTrue(storedWrites(storage, runId));
      if (writes.length === 0) storage.removeItem(`webgrpo.outbox.${runId}`);
      else storage.setItem(`webgrpo.outbox.${runId}`, JSON.stringify(writes));
      await new Promise<void>((resolve) => {
        const outbox = new RunOutbox(runId, storeWriter(runId, token), {
          storage,
          onState: (s) => {
            if (s.retryAt === null) return;
            outbox.close();
            resolve();
          },
        });
        void outbox.drained().then(resolve);
      });
    } finally {
      claim.release();
    }
  }
}
