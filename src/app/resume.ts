// One-click resume of an interrupted run (after a reload, a crash, or from another browser that holds
// the write token): loads the model the run used, finds its checkpoint (kept in this browser, else
// the one kept with the run in the run store), and continues training it in this tab, unless another
// tab of this browser trains it now (run-lock.ts).
import { api, type RunSummary } from './api.ts';
import { startLiveRun } from './live-run.ts';
import { ensureRunModel } from './model-loader.ts';
import { claimRun, TRAINING_IN_ANOTHER_TAB } from './run-lock.ts';
import { runEnvClass } from './env-class-draft.ts';
import { useUi } from './store.ts';
import { trainer } from './trainer-client.ts';
import { parsePromptText } from '../rl/tasks/mcp-task.ts';
import type { DatasetRow } from '../rl/rollout/env.ts';

/** The prompts of a run on the user's own task (env.task 'mcp'), checked as when they were typed. */
export function runPrompts(env: Record<string, unknown>): DatasetRow[] | undefined {
  if (env.task !== 'mcp') return undefined;
  if (!Array.isArray(env.prompts)) throw new Error('This run trains on its own prompts, but the run record holds none');
  return parsePromptText(env.prompts.map((row) => JSON.stringify(row)).join('\n'), "the run's prompts");
}

/** A run marked live in the store, as this tab sees it. */
export type LiveState = 'here' | 'other-tab' | 'interrupted' | null;

/**
 * Who trains a run the store marks live: this tab, another tab of this browser (it holds the run's
 * lock: `trainingInTabs`, from runsTrainingInTabs), or nobody — interrupted: its writer went silent,
 * or the tab that trained it here (`activeHere`, the marker of this browser's last run) has gone.
 */
export function liveState(run: { id: string; status: string; interrupted?: boolean }, activeHere: string | null, trainingInTabs: ReadonlySet<string>): LiveState {
  const liveStatus = run.status === 'running' || run.status === 'paused' || run.status === 'created';
  if (!liveStatus) return null;
  if (useUi.getState().liveRunId === run.id) return 'here';
  if (trainingInTabs.has(run.id)) return 'other-tab';
  return run.interrupted === true || activeHere === run.id ? 'interrupted' : null;
}

/** This tab's trainer is busy with a run (the run it trained last stays its live view once it ended). */
export function trainingHere(s: { liveRunId: string | null; status: string }): boolean {
  return s.liveRunId !== null && (s.status === 'loading' || s.status === 'waiting' || s.status === 'running' || s.status === 'paused');
}

export async function resumeRun(run: RunSummary, token: string): Promise<void> {
  // Taken before anything loads: two tabs must never train (or import checkpoints for) one run.
  const envClass = runEnvClass(run.env);
  const claim = await claimRun(run.id);
  if (!claim) throw new Error(TRAINING_IN_ANOTHER_TAB);
  try {
    await ensureRunModel(run.model);
    if ((await trainer().checkpointStep(run.id)) === null) {
      const kept = (await api.artifacts(run.id)).artifacts.filter((a) => a.bundle === 'checkpoint');
      if (kept.length === 0) throw new Error('No checkpoint of this run is kept in this browser or with the run, so it cannot continue; fork it to train again');
      const files = await Promise.all(kept.map(async (a) => ({ name: a.name, bytes: await api.artifactBytes(run.id, 'checkpoint', a.name) })));
      await trainer().importCheckpoint(run.id, files);
    }
  } catch (err) {
    claim.release();
    throw err;
  }
  const envPath = String(run.env.name ?? '');
  location.hash = `#/runs/${run.id}`;
  void startLiveRun({ runId: run.id, token, config: run.config, envUrl: `${location.origin}/envs/${envPath}`, task: String(run.env.task ?? envPath), prompts: runPrompts(run.env), ...(envClass ? { envClass } : {}), resume: true }, claim);
}
