// The launcher's model side: a resolved run's checkpoint opened, its tokenizer and images (vision
// wiring), the task bound to them, the config checked against the adapter's limits, and the engine
// loaded — the weight precision and the memory plan decided once, by the engine's planLoad, for the
// run's own workload (plannedWorkload). The engine modules load on demand, so a front end that only
// resolves (`train --help`, an argument error) stays instant.

import { adapterLimits, type Gpu } from '../engine/gpu.ts';
import type { LoadPlan, WebGpuEngine } from '../engine/engine.ts';
import type { WeightChoice } from '../engine/weight-precision.ts';
import { modelLocationName, openCheckpoint, type ModelLocation, type OpenedCheckpoint } from '../model/checkpoint.ts';
import { loadCheckpointTokenizer, type TextTokenizer } from '../model/tokenizer.ts';
import type { LoadProgress } from '../model/types.ts';
import type { GRPOConfig } from './config.ts';
import { bindRun, locateRunModel, resolveRun, type ResolvedRun, type RunBinding, type RunModel, type RunRequest } from './launch.ts';
import { checkpointVision } from './rollout/checkpoint-vision.ts';
import type { RolloutVision } from './rollout/rollout-images.ts';
import { plannedWorkload, runLimitErrors, runLimitMessage } from './run-limits.ts';
import type { ResolvedTask, RunTask } from './tasks/resolve-task.ts';

/** How a run stores its weights: full fine-tuning trains them, so in f32; otherwise as asked. */
export function runWeightChoice(config: Pick<GRPOConfig, 'train_mode'>, wanted: WeightChoice): WeightChoice {
  return config.train_mode === 'full' ? 'f32' : wanted;
}

/**
 * The weight precision and memory plan of loading `ckpt` for `config`'s workload on `gpu`, decided
 * once: the app's model card shows them, and loadModelEngine loads with them.
 */
export async function planModelLoad(ckpt: OpenedCheckpoint, gpu: Pick<Gpu, 'limits' | 'f16' | 'software'>, o: { wanted: WeightChoice; config: GRPOConfig; vision: boolean }): Promise<LoadPlan> {
  const { planLoad } = await import('../engine/engine.ts');
  // The weights as asked, not runWeightChoice's: a loaded model serves many runs, and full fine-tuning
  // promotes f16 weights to f32 masters when it starts.
  return planLoad(ckpt, gpu, { weightDtype: o.wanted, plan: plannedWorkload(o.config), vision: o.vision });
}

/** Loads `ckpt` with the plan planModelLoad decided (a plan that does not fit is refused by loadEngine). */
export async function loadModelEngine(ckpt: OpenedCheckpoint, gpu: Gpu, plan: LoadPlan, o: { vision: boolean; onProgress?: (p: LoadProgress) => void }): Promise<WebGpuEngine> {
  const { loadEngine } = await import('../engine/engine.ts');
  return loadEngine(ckpt, { gpu, decided: plan, weightDtype: plan.precision.stored, vision: o.vision, ...(o.onProgress ? { onProgress: o.onProgress } : {}) });
}

export interface PrepareOptions extends Pick<RunBinding, 'builtinUrls' | 'datasetSize'> {
  /** Weight storage asked for ('auto': weight-precision.ts's rule). */
  weightDtype: WeightChoice;
  /** Memory a software adapter may use in all: its memory is the machine's RAM (Node: os.totalmem()). */
  softwareMemoryBytes?: number;
  /** A Hub repo's or URL's download. */
  onDownload?: (p: LoadProgress) => void;
  /** The weights' upload to the GPU. */
  onUpload?: (p: LoadProgress) => void;
}

/** A run ready to train or evaluate: the resolved request with its model loaded and its task bound. */
export interface PreparedRun extends Omit<ResolvedRun, 'task'> {
  /** Where the model was opened from. */
  location: ModelLocation;
  /** The task as resolved (name, preset, solver, URL); `task` is it bound to the model and env URLs. */
  resolvedTask: ResolvedTask;
  checkpoint: OpenedCheckpoint;
  tokenizer: TextTokenizer;
  /** A vision-language checkpoint's images (its engine loaded with the tower); undefined for a text model. */
  vision?: RolloutVision;
  task: RunTask;
  engine: WebGpuEngine;
}

/** Opens `model`, binds `run`'s task to it, and loads the engine for `run`'s config. */
export async function prepareRun(model: RunModel, run: ResolvedRun, o: PrepareOptions): Promise<PreparedRun> {
  const { location } = model;
  if (!location) throw new Error(model.unknown);
  const checkpoint = await openCheckpoint(location, o.onDownload ? { onProgress: o.onDownload } : {});
  const tokenizer = await loadCheckpointTokenizer(checkpoint, modelLocationName(location));
  // A vision-language checkpoint trains with its vision tower: screenshots are embedded, not dropped.
  const vision = await checkpointVision(checkpoint, 'train');
  const task = bindRun(run, { tokenizer, model: checkpoint.config, ...(vision ? { vision } : {}), ...(o.builtinUrls ? { builtinUrls: o.builtinUrls } : {}), ...(o.datasetSize !== undefined ? { datasetSize: o.datasetSize } : {}) });
  const weightDtype = runWeightChoice(run.config, o.weightDtype);
  // The config against the adapter's limits before any weight is uploaded (the setup page's check).
  const limits = await adapterLimits();
  const budget = limits?.software && o.softwareMemoryBytes !== undefined ? { budgetBytes: o.softwareMemoryBytes } : {};
  const tooBig = limits && runLimitMessage(runLimitErrors(run.config, { config: checkpoint.config, weightDtype: weightDtype === 'f16' ? 'f16' : 'f32' }, { ...limits, ...budget }));
  if (tooBig) throw new Error(tooBig);
  const { loadEngine } = await import('../engine/engine.ts');
  // The memory plan is checked for one generation batch; its sequence count caps every decode batch.
  const engine = await loadEngine(checkpoint, { weightDtype, plan: plannedWorkload(run.config), vision: vision !== undefined, ...(o.onUpload ? { onProgress: o.onUpload } : {}) });
  return { ...run, location, resolvedTask: run.task, checkpoint, tokenizer, ...(vision ? { vision } : {}), task, engine };
}

/** All of it from a model string: for a front end with nothing to do between (`webgrpo eval`). */
export async function launch(model: string, request: RunRequest, o: PrepareOptions): Promise<PreparedRun & { model: RunModel }> {
  const located = await locateRunModel(model);
  const run = await resolveRun(request, located.config);
  return { ...(await prepareRun(located, run, o)), model: located };
}
