// The run store's wire types: what GET/POST /api/runs carry between the env-server's store
// (env-server/runs.ts, SQLite) and the page (src/app/api.ts). Its own module, free of imports, so the
// page takes these types without reaching into the store's file.

export type RunStatus = 'created' | 'running' | 'paused' | 'finished' | 'failed' | 'stopped';
export const RUN_STATUSES: readonly RunStatus[] = ['created', 'running', 'paused', 'finished', 'failed', 'stopped'];

export interface RunSummary {
  id: string;
  name: string;
  status: RunStatus;
  createdAt: string;
  updatedAt: string;
  /** GRPOConfig as the app used it (TRL names). */
  config: Record<string, unknown>;
  /** Model and environment descriptions ({id|source, …}, {name|url, …}). */
  model: Record<string, unknown>;
  env: Record<string, unknown>;
  error: string | null;
  lastStep: number | null;
  /** Still marked running/paused/created, but its writer has been silent longer than the store's limit. */
  interrupted?: boolean;
  /** The run this one was forked from, if any. */
  parent?: string | null;
}

/** One row of the runs list (GET /api/runs): what a person scans to find a run again. */
export interface RunListEntry {
  id: string;
  name: string;
  status: RunStatus;
  interrupted: boolean;
  /** The trainer task (env.task, else env.name) and the model's name. */
  task: string;
  model: string;
  trainMode: string;
  /** Steps stored (SFT included) and the steps the config plans (null when unknown). */
  steps: number;
  totalSteps: number | null;
  /** Mean reward of the last GRPO steps (up to recentSteps of them; null before any). */
  recentReward: number | null;
  recentSteps: number;
  /** The latest held-out success (the app's Evaluate, else the trainer's eval loop), null when never evaluated. */
  heldOut: HeldOutSuccess | null;
  createdAt: string;
  updatedAt: string;
  parent: string | null;
  /** Files kept with the run (adapter, full model, trainer checkpoint). */
  artifacts: string[];
  /** What a share link carries to let others read the run. */
  shareToken: string;
}

/** A held-out evaluation's success rate with its Wilson 95% interval, at a step (the store's, from 0). */
export interface HeldOutSuccess {
  step: number;
  successRate: number;
  ci95: [number, number];
  episodes: number | null;
}

/** A new run's credentials: the write token stays in its owner's browser, the share token goes in share links. */
export interface CreatedRun {
  id: string;
  writeToken: string;
  shareToken: string;
}

/** Files kept with a run, by bundle: the PEFT adapter, a fully fine-tuned model, the trainer checkpoint. */
export const ARTIFACT_BUNDLES = ['adapter', 'model', 'checkpoint'] as const;
export type ArtifactBundle = (typeof ARTIFACT_BUNDLES)[number];

export interface ArtifactInfo {
  bundle: ArtifactBundle;
  name: string;
  bytes: number;
  updatedAt: string;
}

export interface StepRecord {
  step: number;
  metrics: Record<string, number | null>;
}

export interface RolloutRecord {
  step: number;
  index: number;
  data: Record<string, unknown>;
}

export interface RunExport {
  format: 'webgrpo-run';
  version: 1;
  run: Omit<RunSummary, 'id' | 'lastStep'>;
  steps: StepRecord[];
  rollouts: RolloutRecord[];
}
