// Drives the run this tab trains: starts the worker's trainer, mirrors every step into the UI store
// and the run store (so share links see it live), and records the final status.
import { api, ownedRuns } from './api.ts';
import { useUi } from './store.ts';
import { proxy, trainer } from './trainer-client.ts';
import type { RunOptions } from './worker-api.ts';

export async function startLiveRun(opts: Omit<RunOptions, 'runId'> & { runId: string; token: string }): Promise<void> {
  const ui = useUi.getState();
  ui.resetRun(opts.runId);
  ownedRuns.setActive(opts.runId);
  const { token, ...runOpts } = opts;
  // Steps are posted in order; a failed post is retried with the next one rather than lost.
  let pending: Promise<unknown> = Promise.resolve();
  try {
    await trainer().train(
      runOpts,
      proxy({
        onProgress: (p) => useUi.getState().set({ progress: p }),
        onStep: (e) => {
          useUi.getState().addStep(e);
          pending = pending.then(() => api.appendStep(opts.runId, token, e)).catch((err) => useUi.getState().set({ statusMessage: `Could not save step ${e.step}: ${(err as Error).message}` }));
        },
        onStatus: (s) => {
          useUi.getState().set({ status: s.status, statusMessage: s.message ?? null });
          pending = pending.then(() => api.setStatus(opts.runId, token, s.status, s.message)).catch(() => undefined);
          if (s.status === 'finished' || s.status === 'stopped' || s.status === 'failed') ownedRuns.setActive(null);
        },
      }),
    );
  } catch (err) {
    const message = (err as Error).message;
    useUi.getState().set({ status: 'failed', statusMessage: message });
    await api.setStatus(opts.runId, token, 'failed', message).catch(() => undefined);
  }
  await pending;
}
