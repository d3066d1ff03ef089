// Drives the run this tab trains: starts the worker's trainer, mirrors every step into the UI store
// and the run store (so share links see it live), keeps the run marked alive while it trains or waits
// paused, records the final status, and keeps the trained files with the run (downloadable from any
// view of it, after a reload too).
import { api, ownedRuns } from './api.ts';
import { formatBytes } from './format.ts';
import { claimRun, TRAINING_IN_ANOTHER_TAB, type RunClaim } from './run-lock.ts';
import { successRate } from './run-metrics.ts';
import { useUi } from './store.ts';
import { proxy, trainer } from './trainer-client.ts';
import type { RunOptions, UiStepEvent } from './worker-api.ts';

/**
 * What the run store keeps per run by default (env-server/runs.ts): bigger files are not even encoded
 * for upload (a full 0.6B model would be gigabytes of base64 in the tab); the tab offers them instead.
 */
const KEEP_LIMIT_BYTES = 40 * 1024 * 1024;

/** The store calls a run interrupted after minutes of silence; a step can take longer on a software GPU. */
const HEARTBEAT_MS = 60_000;

function withSuccessRate(e: UiStepEvent): UiStepEvent {
  const rate = e.phase === 'grpo' ? successRate(e.rollouts) : null;
  return rate === null ? e : { ...e, metrics: { ...e.metrics, success_rate: rate } };
}

/**
 * Keeps the trained weights (the LoRA adapter, or in full mode the whole model) and the trainer
 * checkpoint with the run. A file over the store's size limit is reported, not fatal: the training
 * tab can still download it.
 */
export async function keepRunFiles(runId: string, token: string, config: Record<string, unknown>): Promise<void> {
  const w = trainer();
  const problems: string[] = [];
  const keep = async (bundle: string, files: { name: string; bytes: Uint8Array }[] | null) => {
    if (!files) return;
    const size = files.reduce((n, f) => n + f.bytes.length, 0);
    if (size > KEEP_LIMIT_BYTES) {
      problems.push(`${bundle}: ${formatBytes(size)} is more than the run store keeps (${formatBytes(KEEP_LIMIT_BYTES)}); download it from this tab`);
      return;
    }
    try {
      await api.putArtifacts(runId, token, bundle, files);
    } catch (err) {
      problems.push(`${bundle}: ${(err as Error).message}`);
    }
  };
  if (config.train_mode === 'full') {
    // f32 weights: 4 bytes a parameter. Too big to keep, so not worth exporting here either.
    const estimate = (useUi.getState().model?.params ?? 0) * 4;
    if (estimate > KEEP_LIMIT_BYTES) problems.push(`model: about ${formatBytes(estimate)} is more than the run store keeps (${formatBytes(KEEP_LIMIT_BYTES)}); download it from this tab`);
    else await keep('model', await w.exportModel());
  } else await keep('adapter', await w.exportAdapter());
  await keep('checkpoint', await w.exportCheckpoint(runId));
  useUi.getState().set({ filesVersion: useUi.getState().filesVersion + 1 });
  if (problems.length) throw new Error(`Not kept with the run: ${problems.join('; ')}`);
}

/**
 * Trains the run in this tab, holding its lock (run-lock.ts) until the trainer is done with it: `claim`
 * when the caller took it already (a resume checks before loading anything), else taken here.
 */
export async function startLiveRun(opts: Omit<RunOptions, 'runId'> & { runId: string; token: string }, claim?: RunClaim): Promise<void> {
  const held = claim ?? (await claimRun(opts.runId));
  if (!held) throw new Error(TRAINING_IN_ANOTHER_TAB);
  try {
    await trainLive(opts);
  } finally {
    held.release();
  }
}

async function trainLive(opts: Omit<RunOptions, 'runId'> & { runId: string; token: string }): Promise<void> {
  const ui = useUi.getState();
  ui.resetRun(opts.runId);
  ownedRuns.setActive(opts.runId);
  const { token, ...runOpts } = opts;
  // Steps are posted in order; a failed post is retried with the next one rather than lost.
  let pending: Promise<unknown> = Promise.resolve();
  const post = (what: () => Promise<unknown>, onError: (err: Error) => void = () => undefined) => {
    pending = pending.then(what).catch(onError);
  };
  const saveFiles = () =>
    post(() => keepRunFiles(opts.runId, token, opts.config), (err) => useUi.getState().set({ statusMessage: err.message }));
  let lastWrite = Date.now();
  const heartbeat = setInterval(() => {
    const { status } = useUi.getState();
    if ((status === 'running' || status === 'paused') && Date.now() - lastWrite >= HEARTBEAT_MS) {
      lastWrite = Date.now();
      post(() => api.setStatus(opts.runId, token, status));
    }
  }, HEARTBEAT_MS / 4);
  try {
    await trainer().train(
      runOpts,
      proxy({
        onProgress: (p) => useUi.getState().set({ progress: p }),
        onStep: (raw) => {
          const e = withSuccessRate(raw);
          useUi.getState().addStep(e);
          lastWrite = Date.now();
          post(() => api.appendStep(opts.runId, token, e), (err) => useUi.getState().set({ statusMessage: `Could not save step ${e.step}: ${err.message}` }));
        },
        onStatus: (s) => {
          useUi.getState().set({ status: s.status, statusMessage: s.message ?? null });
          lastWrite = Date.now();
          post(() => api.setStatus(opts.runId, token, s.status, s.message));
          if (s.status === 'paused' || s.status === 'finished' || s.status === 'stopped') saveFiles();
          // Another tab may have started a run since: its marker stays.
          if ((s.status === 'finished' || s.status === 'stopped' || s.status === 'failed') && ownedRuns.active() === opts.runId) ownedRuns.setActive(null);
        },
      }),
    );
  } catch (err) {
    const message = (err as Error).message;
    useUi.getState().set({ status: 'failed', statusMessage: message });
    await api.setStatus(opts.runId, token, 'failed', message).catch(() => undefined);
  } finally {
    clearInterval(heartbeat);
  }
  await pending;
}
