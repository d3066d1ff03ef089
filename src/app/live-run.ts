// Drives the run this tab trains: starts the worker's trainer, mirrors every step into the UI store
// and the run store (so share links see it live; through run-outbox.ts, so a store outage loses
// nothing), keeps the run marked alive while it trains or waits paused, resumes it by itself when the
// run paused because its env-server went away and the server answers again, records the final status,
// and keeps the trained files with the run (downloadable from any view of it, after a reload too).
import { api, ApiError, ownedRuns } from './api.ts';
import { untilServerAnswers } from './env-retry.ts';
import { formatBytes } from './format.ts';
import { claimGpu, claimRun, TRAINING_IN_ANOTHER_TAB, type RunClaim } from './run-lock.ts';
import { successRate } from './run-metrics.ts';
import { RunOutbox, type OutboxWrite, type SendWrite } from './run-outbox.ts';
import { nextStepProgress } from './step-progress.ts';
import { useUi } from './store.ts';
import { proxy, trainer } from './trainer-client.ts';
import type { RunOptions, UiStepEvent } from '../../workers/api.ts';

/**
 * What the run store keeps per run by default (env-server/runs.ts): bigger files are not even encoded
 * for upload (a full 0.6B model would be gigabytes of base64 in the tab); the tab offers them instead.
 */
const KEEP_LIMIT_BYTES = 40 * 1024 * 1024;

/**
 * The store calls a live run interrupted after this tab has been silent for its lease (3 minutes;
 * env-server/runs.ts); a step can take longer than that on a software GPU, so the tab writes its status
 * in between. A hidden tab's timers may run only once a minute, still well inside the lease.
 */
const HEARTBEAT_MS = 30_000;

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

/** A step as the run store keeps it (the SFT steps flagged, for the charts' phase axis). */
function stepRecord(e: UiStepEvent): OutboxWrite & { kind: 'step' } {
  return { kind: 'step', step: e.step, metrics: { ...e.metrics, phase_sft: e.phase === 'sft' ? 1 : 0 }, rollouts: e.rollouts };
}

/** Sends one queued write of run `runId` to the run store. */
export function storeWriter(runId: string, token: string): SendWrite {
  return (w) => (w.kind === 'step' ? api.appendStep(runId, token, w) : api.setStatus(runId, token, w.status, w.error));
}

/** Tells why the run has not started: another tab of this browser trains on the GPU (run-lock.ts). */
async function sayWaitingForGpu(others: string[], stillWaiting: () => boolean): Promise<void> {
  const message = (what: string) => `Waiting for the GPU: another tab of this browser is training ${what}. This run starts by itself when that run ends or that tab closes.`;
  useUi.getState().set({ status: 'waiting', statusMessage: message(others.length ? `run ${others.join(', ')}` : 'a run') });
  // Runs of this browser have names in the runs list (the other tab's run is one of them).
  const names = await api.listRuns().then(({ runs }) => new Map(runs.map((r) => [r.id, r.name])), () => new Map<string, string>());
  if (stillWaiting() && others.length) useUi.getState().set({ statusMessage: message(`run ${others.map((id) => `"${names.get(id) ?? id}"`).join(', ')}`) });
}

async function trainLive(opts: Omit<RunOptions, 'runId'> & { runId: string; token: string }): Promise<void> {
  const ui = useUi.getState();
  ui.resetRun(opts.runId);
  ownedRuns.setActive(opts.runId);
  const { token, ...runOpts } = opts;
  // Files are kept after the writes before them; a failure while the store is away is tried again
  // once it answers (filesDue).
  let files: Promise<unknown> = Promise.resolve();
  let filesDue = false;
  const saveFiles = () => {
    // While the store is away, the files wait until the outbox gets through (onReconnected).
    if (useUi.getState().unsaved.retryAt !== null) {
      filesDue = true;
      return;
    }
    filesDue = false;
    files = files.then(() => keepRunFiles(opts.runId, token, opts.config)).catch((err: Error) => {
      if (outbox.pending > 0 || err instanceof ApiError) filesDue = true;
      useUi.getState().set({ statusMessage: err.message });
    });
  };
  // Steps and statuses go through the outbox: in order, kept through a store outage (run-outbox.ts).
  const outbox = new RunOutbox(opts.runId, storeWriter(opts.runId, token), {
    storage: localStorage,
    onState: (unsaved) => useUi.getState().set({ unsaved }),
    onRejected: (w, err) => useUi.getState().set({ statusMessage: `The run store refused ${w.kind === 'step' ? `step ${w.step}` : `the status ${w.status}`}: ${err.message}` }),
    onReconnected: () => {
      if (filesDue) void outbox.drained().then(saveFiles);
    },
  });
  let lastWrite = Date.now();
  const write = (w: OutboxWrite) => {
    lastWrite = Date.now();
    outbox.push(w);
  };
  // The store's lease (env-server/runs.ts): a live run's writer writes at least this often.
  const heartbeat = setInterval(() => {
    const { status } = useUi.getState();
    if ((status === 'running' || status === 'paused') && Date.now() - lastWrite >= HEARTBEAT_MS) write({ kind: 'status', status });
  }, HEARTBEAT_MS / 4);
  // While paused for an outage: probe the server, and resume the run once it answers.
  let outageRetry: AbortController | null = null;
  const endOutage = () => {
    outageRetry?.abort();
    outageRetry = null;
    useUi.getState().set({ outage: null });
  };
  const awaitServer = (message: string) => {
    endOutage();
    const retry = (outageRetry = new AbortController());
    useUi.getState().set({ outage: { message, retryAt: null } });
    untilServerAnswers(retry.signal, (retryAt) => useUi.getState().set({ outage: { message, retryAt } })).then(
      () => {
        outbox.retryNow();
        void trainer().resume();
      },
      () => undefined,
    );
  };
  let waiting = true;
  const gpu = await claimGpu(opts.runId, (others) => void sayWaitingForGpu(others, () => waiting));
  waiting = false;
  useUi.getState().set({ status: 'loading', statusMessage: null });
  try {
    await trainer().train(
      runOpts,
      proxy({
        onProgress: (p) => useUi.getState().set({ progress: p }),
        onStepProgress: (p) => useUi.getState().set({ stepProgress: nextStepProgress(useUi.getState().stepProgress, p, performance.now()) }),
        onStep: (raw) => {
          const e = withSuccessRate(raw);
          useUi.getState().addStep(e);
          write(stepRecord(e));
        },
        onStatus: (s) => {
          // A pause or resume restarts the step's clock (a paused generation is played again).
          useUi.getState().set({ status: s.status, statusMessage: s.cause ? null : s.message ?? null, stepProgress: null });
          if (s.cause === 'env-server-unreachable') awaitServer(s.message ?? 'The env-server is unreachable');
          else endOutage();
          write({ kind: 'status', status: s.status, ...(s.message ? { error: s.message } : {}) });
          // Not at an outage's pause: the server that would keep them is gone.
          if ((s.status === 'paused' && !s.cause) || s.status === 'finished' || s.status === 'stopped') saveFiles();
          // Another tab may have started a run since: its marker stays.
          if ((s.status === 'finished' || s.status === 'stopped' || s.status === 'failed') && ownedRuns.active() === opts.runId) ownedRuns.setActive(null);
        },
      }),
    );
  } catch (err) {
    const message = (err as Error).message;
    useUi.getState().set({ status: 'failed', statusMessage: message });
    write({ kind: 'status', status: 'failed', error: message });
  } finally {
    gpu.release();
    clearInterval(heartbeat);
    endOutage();
  }
  // The outbox stays on (retrying) until the store has every write; the files follow them.
  await outbox.drained();
  await files;
}
