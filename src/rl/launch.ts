// The one launcher: a run request (the model, the env or an env class, the config layers, a resume)
// turned into a prepared run. Each value is decided here, once, and the front ends only carry it:
//   - the model string (`--model`) is read once (model/checkpoint.ts locateModel) and sized from its
//     config.json alone (the preset's tier) before any weight is downloaded;
//   - the task is resolved once (tasks/resolve-task.ts, or the request's env class) and bound once;
//   - the config is layered once with its provenance (launch-config.ts): TRL's defaults ← the task's
//     preset for the model's tier ← the request's layers, then the launcher's own two rules — warm-up
//     transcripts given with sft_steps 0 get DEFAULT_SFT_STEPS, and a resumed run keeps its checkpoint's
//     warm-up length (sft_steps is the one field that says how long the warm-up is);
//   - the weight precision and the memory plan are decided once (launch-model.ts, engine planLoad).
// `webgrpo train` (src/cli/train.ts) and `webgrpo eval` call resolveRun then prepareRun (or launch, both
// at once); the app's worker (workers/trainer-service.ts) holds its model already loaded and calls
// resolveRun with that model's config, then bindRun.

import { locateModel, readModelConfig, UnknownModelError, type ModelLocation } from '../model/checkpoint.ts';
import { qwen3ParamCount } from '../model/qwen3-tensors.ts';
import type { TextTokenizer } from '../model/tokenizer.ts';
import type { ModelConfig } from '../model/types.ts';
import { layerConfig, overrideKey, type ConfigLayer, type ResolvedConfig } from './launch-config.ts';
import type { DatasetRow } from './rollout/env.ts';
import type { RolloutVision } from './rollout/rollout-images.ts';
import type { RunState } from './run-state.ts';
import { modelTierOf, presetConfig, type ModelTier } from './tasks/presets.ts';
import { bindTask, resolveTask, type BindOptions, type ResolvedTask, type RunTask, type TaskChoice } from './tasks/resolve-task.ts';

export type { ConfigLayer, ResolvedConfig } from './launch-config.ts';

/** Warm-up steps when transcripts are given (`--sft`, `--sft-solver`) but sft_steps is 0. */
export const DEFAULT_SFT_STEPS = 50;

/** The provenance of sft_steps on a resumed run. */
export const RESUMED_SFT_SOURCE = 'checkpoint';

/** A model named by one string, read once: where it is and how big (for the presets' tier). */
export interface RunModel {
  /** Null for a string that names no model: opening it fails with `unknown` (after the other arguments are checked). */
  location: ModelLocation | null;
  /** Its config.json, or null when that could not be read before opening (then `unknown` says why). */
  config: ModelConfig | null;
  tier: ModelTier;
  params: number | null;
  unknown?: string;
}

/**
 * `--model` read once: a mistyped folder fails here, by name. A string that names no model, or a
 * config.json that cannot be fetched yet (no network), counts as full-size: opening reports it.
 */
export async function locateRunModel(model: string): Promise<RunModel> {
  let location: ModelLocation;
  try {
    location = await locateModel(model);
  } catch (err) {
    if (!(err instanceof UnknownModelError)) throw err;
    return { location: null, config: null, tier: 'full-size', params: null, unknown: err.message };
  }
  try {
    const config = await readModelConfig(location);
    return { location, config, tier: modelTierOf(config), params: qwen3ParamCount(config) };
  } catch (err) {
    return { location, config: null, tier: 'full-size', params: null, unknown: (err as Error).message };
  }
}

/**
 * An environment class (TRL's environment_factory, `--env-class FILE.mjs` or pasted in the app): the
 * task it defines, resolved from the request's env choice. src/rl/tasks/ makes these; the request
 * carries one instead of an env name's built-in task.
 */
export type EnvClassTask = (choice: TaskChoice) => Promise<ResolvedTask>;

/** What a front end asks for: the task and the config layers (the model is named apart: see launch). */
export interface RunRequest {
  /** A task name or an OpenEnv base URL (tasks/resolve-task.ts TaskChoice.env). */
  env: string;
  /** The env's base URL when `env` is a name; absent: the in-process env-server serves it. */
  envUrl?: string;
  /** An environment class, resolved instead of `env`'s built-in task. */
  envClass?: EnvClassTask;
  /** The generic MCP task's prompts. */
  prompts?: () => Promise<DatasetRow[]>;
  /** Task names of a MiniWoB++ folder the in-process browsergym serves. */
  miniwobNames?: readonly string[];
  /**
   * The task's preset for the model's tier lies under `config` (the CLI); false where the front end's
   * config holds it already (the app's page merged the preset into the run's stored config).
   */
  preset: boolean;
  /** Config layers over TRL's defaults (and the preset), lowest first. */
  config: readonly ConfigLayer[];
  /** Warm-up transcripts come with the request: named by this source, they make sft_steps 0 into DEFAULT_SFT_STEPS. */
  warmUpGiven?: string;
  /** The checkpoint the run continues from. */
  resume?: RunState;
}

/** The request resolved: the task, and the config with where each key came from. */
export interface ResolvedRun extends ResolvedConfig {
  tier: ModelTier;
  task: ResolvedTask;
  resume?: RunState;
}

/** The task the request names: its env class's, or the built-in resolver's. */
function requestTask(request: RunRequest, tier: ModelTier): Promise<ResolvedTask> {
  const choice: TaskChoice = { env: request.env, tier, ...(request.envUrl !== undefined ? { url: request.envUrl } : {}), ...(request.prompts ? { prompts: request.prompts } : {}), ...(request.miniwobNames ? { miniwobNames: request.miniwobNames } : {}) };
  return request.envClass ? request.envClass(choice) : resolveTask(choice);
}

/**
 * The preset layer: the built-in task's preset for the tier (the app's, src/rl/tasks/presets.ts), or the
 * example's own settings. The app's presets turn log_completions on for its rollout viewer; a front end
 * without that viewer keeps TRL's default (off).
 */
function presetLayer(task: ResolvedTask, tier: ModelTier): ConfigLayer {
  const { log_completions: _appOnly, ...values } = task.preset ? presetConfig(task.preset, tier) : task.task.config;
  return { source: task.preset ? 'preset' : 'task', values };
}

/** The request's task and config, for a model of `model`'s config (null: unknown, taken as full-size). */
export async function resolveRun(request: RunRequest, model: ModelConfig | null): Promise<ResolvedRun> {
  const tier = model ? modelTierOf(model) : 'full-size';
  const task = await requestTask(request, tier);
  let resolved = layerConfig(request.preset ? [presetLayer(task, tier), ...request.config] : request.config);
  if (request.warmUpGiven && resolved.config.sft_steps === 0) resolved = overrideKey(resolved, 'sft_steps', DEFAULT_SFT_STEPS, request.warmUpGiven);
  // A resumed run is as long as it was when it started: a warm-up it did is not done again, nor one added.
  if (request.resume) resolved = overrideKey(resolved, 'sft_steps', request.resume.sftSteps, RESUMED_SFT_SOURCE);
  return { ...resolved, tier, task, ...(request.resume ? { resume: request.resume } : {}) };
}

export interface RunBinding extends Pick<BindOptions, 'builtinUrls' | 'datasetSize' | 'split'> {
  tokenizer: TextTokenizer;
  /** The model's images, when it reads them (a vision-language checkpoint loaded with its tower). */
  vision?: RolloutVision;
  /** The model's config: why its vision tower cannot be used (visionError) is named when a vision task is refused. */
  model: ModelConfig;
}

/** The resolved task bound to its env URLs and the model: what a Run trains and an evaluation plays. */
export function bindRun(run: ResolvedRun, b: RunBinding): RunTask {
  return bindTask(run.task, {
    tokenizer: b.tokenizer,
    readsImages: b.vision !== undefined,
    ...(b.builtinUrls ? { builtinUrls: b.builtinUrls } : {}),
    ...(b.datasetSize !== undefined ? { datasetSize: b.datasetSize } : {}),
    ...(b.split ? { split: b.split } : {}),
    ...(b.model.visionError ? { visionError: b.model.visionError } : {}),
  });
}

