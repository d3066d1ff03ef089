// The contract between the page (UI only) and the trainer worker (engine + trainer), carried by
// comlink. Everything crossing it is structured-clone data or a comlink proxy of callbacks.
import type { GpuInfo } from '../src/engine/gpu.ts';
import type { LoadProgress, ModelConfig } from '../src/model/types.ts';
import type { DatasetRow } from '../src/rl/rollout/env.ts';
import type { ToolSchema } from '../src/rl/rollout/schema.ts';
import type { PauseCause } from '../src/rl/run-control.ts';
import type { RunProgress } from '../src/rl/run.ts';
import type { EvalSummary, PairedDifference } from '../src/rl/eval/summary.ts';
import type { Trajectory } from '../src/rl/eval/trajectory.ts';

export type { PauseCause };

export type BuiltinEnvName = 'echo' | 'catch' | 'wordle' | 'browsergym';

export type ModelChoice = (
  | { kind: 'demo' }
  | { kind: 'tiny' }
  | { kind: 'hub'; repo: string; revision: string; endpoint?: string }
  | { kind: 'files'; files: File[] }
) & {
  /** Storage of the weights on the GPU: 'auto' (the checkpoint's own precision, src/engine/weight-precision.ts) by default. */
  weightDtype?: 'auto' | 'f16' | 'f32';
};

export interface ProbeResult {
  webgpu: boolean;
  error?: string;
  adapter?: GpuInfo;
  f16?: boolean;
  maxBufferSize?: number;
  maxStorageBufferBindingSize?: number;
  /** The adapter emulates a GPU on the CPU: its memory is the machine's RAM. */
  software?: boolean;
}

export interface MemoryItem {
  name: string;
  bytes: number;
}

export interface ModelInfo {
  name: string;
  layers: number;
  hidden: number;
  vocab: number;
  params: number;
  weightDtype: 'f16' | 'f32';
  /** Why the weights sit in weightDtype, with the log-prob error it costs (weight-precision.ts). */
  weightPrecision?: string;
  memory: MemoryItem[];
  totalBytes: number;
  fits: boolean;
  message?: string;
  /** The model's config: the setup page plans memory for the config as typed (run-limits.ts). */
  config: ModelConfig;
}

/** One training step as the UI and the run store see it. */
export interface UiStepEvent {
  step: number;
  totalSteps: number;
  phase: 'sft' | 'grpo';
  metrics: Record<string, number | null>;
  rollouts: RolloutView[];
}

/** A screenshot kept with a stored rollout: a PNG or JPEG data URL and its size. */
export interface RolloutTurnImage {
  src: string;
  width: number;
  height: number;
}

export interface RolloutTurn {
  role: 'prompt' | 'assistant' | 'tool' | 'env';
  text: string;
  name?: string;
  /** The images the turn carried (a tool's screenshots), as kept for viewing. */
  images?: RolloutTurnImage[];
  /** Images the turn carried that were not kept (past the run's storage budget for screenshots). */
  omittedImages?: number;
}

/** A rollout, flattened for display. */
export interface RolloutView {
  group: number;
  index: number;
  /** Segments of the conversation, in order. */
  turns: RolloutTurn[];
  reward: number | null;
  advantage: number;
  rewards: Record<string, number | null>;
  error?: string;
  /** The last tool results were rolled back: with them the completion needed `tokens`, over `budget`. */
  overBudget?: { tokens: number; budget: number };
}

/** An environment-class module as the run store keeps it (env.envClass): its text and where it came from. */
export interface EnvClassText {
  /** A file name, or "your environment" for pasted text (named in its errors). */
  source: string;
  text: string;
}

/** What the setup page shows of an environment class before Start (workers/env-class-preview.ts). One environment of the module (TRL's dict form has several) and the tools the model is offered in it. */
export interface PreviewEnvironment {
  /** null: the module's one class; else its name in the dict form (a row's `environment` column). */
  name: string | null;
  className: string;
  /** The schemas the chat template gets, sorted as the rollout sorts them. */
  tools: ToolSchema[];
  /** Each tool as the Qwen3 template writes it into the system prompt (`{{ tool | tojson }}`). */
  toolJson: string[];
}

export type EnvClassPreview =
  | {
      ok: true;
      /** The run's task name: the class's name (or the module's, in the dict form). */
      name: string;
      environments: PreviewEnvironment[];
      /** Reward sources by metric name (`rewards/<name>/mean`). */
      rewards: string[];
      /** The module's own dataset: its row count and first row's prompt; null: the environment owns the data (reset supplies the prompt). */
      dataset: { rows: number; firstPrompt: DatasetRow['prompt'] } | null;
      /** The module's `config` export (GRPOConfig keys). */
      config: Record<string, unknown>;
    }
  | { ok: false; error: string };

/**
 * A run the page starts or resumes: the launcher's request (src/rl/launch.ts RunRequest) as
 * structured-clone data, the trainer service turns it into one.
 */
export interface RunOptions {
  runId: string;
  /**
   * TRL-named config (GRPOConfig fields + webgrpo's lora_* keys), the preset merged in by the page.
   * Its sft_steps is the warm-up's length (0 = none); a resumed run keeps its checkpoint's.
   */
  config: Record<string, unknown>;
  /** Base URL of the environment (built-in or proxied), e.g. http://127.0.0.1:8000/envs/catch */
  envUrl: string;
  /**
   * What the run trains on (src/rl/tasks/resolve-task.ts): a built-in task's name (echo, catch, wordle,
   * browsergym:TASK, browsergym-vlm, …) or 'mcp' (the user's `prompts` on an MCP env's tools). The env
   * that plays it is the server at envUrl.
   */
  task: string;
  prompts?: DatasetRow[];
  /** The user's environment class (its module's text, stored with the run): the task instead of `task`'s built-in one. */
  envClass?: EnvClassText;
  /** Uploaded SFT transcripts (JSONL of message lists), used instead of the scripted solver's when given. */
  sftJsonl?: string;
  /** Continue from the checkpoint kept for this run (after a reload or crash). */
  resume: boolean;
}

/** How often the worker reports a step's progress to the page at most (each report crosses the worker boundary). */
export const STEP_PROGRESS_MS = 500;

export interface WorkerEvents {
  onProgress(p: LoadProgress): void;
  /** Across the worker boundary a call the trainer awaits before it keeps the step's checkpoint (trainer-service.ts). */
  onStep(e: UiStepEvent): void;
  /** Where the GRPO step running now is (its phase and counts), at most every STEP_PROGRESS_MS and at each phase change. */
  onStepProgress?(p: RunProgress): void;
  /**
   * `cause` 'env-server-unreachable': the run paused itself because the env-server stopped answering
   * (its state is kept); the page retries and resumes it once the server answers again.
   */
  onStatus(s: { status: 'running' | 'paused' | 'finished' | 'failed' | 'stopped'; message?: string; cause?: PauseCause }): void;
}

/** Where an evaluation is: which policy plays (round of rounds) and its episodes over. */
export interface EvalProgress {
  policy: 'base' | 'trained';
  round: number;
  rounds: number;
  done: number;
  total: number;
}

/** The trained policy against its base on the same held-out episodes (workers/evaluate.ts). */
export interface EvalResult {
  task: string;
  episodes: number;
  base: EvalSummary;
  trained: EvalSummary;
  /** trained − base, per episode, with its 95% interval. */
  paired: { success: PairedDifference; reward: PairedDifference };
  /** The first episodes of each, for the trajectory viewer. */
  trajectories: { base: Trajectory[]; trained: Trajectory[] };
}

export interface TrainerWorkerApi {
  probe(): Promise<ProbeResult>;
  loadModel(choice: ModelChoice, events: Pick<WorkerEvents, 'onProgress'>): Promise<ModelInfo>;
  train(opts: RunOptions, events: WorkerEvents): Promise<void>;
  pause(): void;
  resume(): void;
  stop(): void;
  /** Step of the checkpoint kept for this run, or null. */
  checkpointStep(runId: string): Promise<number | null>;
  exportAdapter(): Promise<{ name: string; bytes: Uint8Array }[]>;
  /** The fully fine-tuned model in Hugging Face layout (train_mode = full): config, model.safetensors, tokenizer. */
  exportModel(): Promise<{ name: string; bytes: Uint8Array }[]>;
  /** The trained model as ONNX in the layout transformers.js loads (adapter merged): onnx/model.onnx, config, tokenizer. */
  exportOnnx(): Promise<{ name: string; bytes: Uint8Array }[]>;
  /** The run's kept trainer checkpoint packed as files (for the run store), or null when none is kept here. */
  exportCheckpoint(runId: string): Promise<{ name: string; bytes: Uint8Array }[] | null>;
  /** Keeps a packed trainer checkpoint (e.g. from the run store) for this run, so it can resume here. */
  importCheckpoint(runId: string, files: { name: string; bytes: Uint8Array }[]): Promise<number>;
  /** Greedy, on the task's held-out split: the trained policy and its base (adapters off, or after full fine-tuning the starting weights uploaded again). */
  evaluate(opts: { envUrl: string; task: string; prompts?: DatasetRow[]; episodes: number; config: Record<string, unknown> }, events?: { onProgress(p: EvalProgress): void }): Promise<EvalResult>;
}
