// UI state (zustand). The page holds only what it shows; the worker owns the model and the trainer.
import { create } from 'zustand';
import type { LoadProgress } from '../model/types.ts';
import type { ModelInfo, ProbeResult, RolloutView, UiStepEvent } from '../../workers/api.ts';

import type { StepRecord } from './api.ts';
import type { OutboxState } from './run-outbox.ts';
import type { StepProgress } from './step-progress.ts';

/** Where the loaded model came from, kept with a run so a resume can load it again. */
export type ModelSource = { kind: 'demo' } | { kind: 'tiny' } | { kind: 'hub'; repo: string; revision: string } | { kind: 'files'; folder: string };

export type RunStatus = 'idle' | 'loading' | 'waiting' | 'running' | 'paused' | 'finished' | 'failed' | 'stopped';

export interface UiState {
  probe: ProbeResult | null;
  model: ModelInfo | null;
  modelError: string | null;
  progress: LoadProgress | null;
  /** Where the loaded model came from (stored with each run, so a resume can load it again). */
  modelSource: ModelSource | null;
  modelLoading: boolean;
  /** Bumped whenever files were kept with the live run (the run view lists them again). */
  filesVersion: number;
  /** The run this tab is training (null when only viewing). */
  liveRunId: string | null;
  status: RunStatus;
  statusMessage: string | null;
  steps: StepRecord[];
  totalSteps: number;
  stepStartedAt: number[];
  /** Where the step running now is (the worker's latest report), null until its first report. */
  stepProgress: StepProgress | null;
  rollouts: { step: number; rollouts: RolloutView[] }[];
  /** The live run paused itself because its env-server stopped answering: why, and when the next try is due. */
  outage: { message: string; retryAt: number | null } | null;
  /** The live run's writes waiting for the run store (run-outbox.ts). */
  unsaved: OutboxState;
  set(patch: Partial<UiState>): void;
  addStep(e: UiStepEvent): void;
  resetRun(runId: string | null): void;
}

const KEEP_ROLLOUT_STEPS = 5;

export const useUi = create<UiState>((set) => ({
  probe: null,
  model: null,
  modelError: null,
  progress: null,
  modelSource: null,
  modelLoading: false,
  filesVersion: 0,
  liveRunId: null,
  status: 'idle',
  statusMessage: null,
  steps: [],
  totalSteps: 0,
  stepStartedAt: [],
  stepProgress: null,
  rollouts: [],
  outage: null,
  unsaved: { queued: 0, retryAt: null, error: null },
  set: (patch) => set(patch),
  addStep: (e) =>
    set((s) => ({
      steps: [...s.steps.filter((x) => x.step !== e.step), { step: e.step, metrics: { ...e.metrics, phase_sft: e.phase === 'sft' ? 1 : 0 } }],
      totalSteps: e.totalSteps,
      stepStartedAt: [...s.stepStartedAt, performance.now()],
      stepProgress: null,
      rollouts: e.rollouts.length ? [...s.rollouts.filter((r) => r.step !== e.step), { step: e.step, rollouts: e.rollouts }].slice(-KEEP_ROLLOUT_STEPS) : s.rollouts,
    })),
  resetRun: (runId) => set({ liveRunId: runId, steps: [], totalSteps: 0, stepStartedAt: [], stepProgress: null, rollouts: [], status: runId ? 'loading' : 'idle', statusMessage: null, outage: null, unsaved: { queued: 0, retryAt: null, error: null } }),
}));
