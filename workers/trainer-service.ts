// The trainer worker's API (workers/api.ts) as a plain class, so Node tests can drive it
// without a browser: comlink's target (workers/trainer.worker.ts), the model and engine it holds,
// per-run checkpoint storage, and the run's events mapped to the page's. What a run is — its config,
// task, weight precision and memory plan — the launcher decides (src/rl/launch.ts, launch-model.ts);
// the run itself — warm-up, reference, GRPO, checkpoints, pause and stop — is src/rl/run.ts's Run, as in the CLI.

import type { EvalProgress, EvalResult, ModelChoice, ModelInfo, ProbeResult, RunOptions, TrainerWorkerApi, WorkerEvents } from './api.ts';
import type { LoadPlan } from '../src/engine/engine.ts';
import { getGpu, type Gpu } from '../src/engine/gpu.ts';
import type { Engine, TrainableMode } from '../src/engine/types.ts';
import type { LoadProgress } from '../src/model/types.ts';
import type { TextTokenizer } from '../src/model/tokenizer.ts';
import { configFromObject, type GRPOConfig } from '../src/rl/config.ts';
import { bindRun, resolveRun, type ConfigLayer, type ResolvedRun, type RunBinding, type RunRequest } from '../src/rl/launch.ts';
import { splitRows } from '../src/rl/eval/eval-rows.ts';
import { seedSpace } from '../src/rl/eval/seed-space.ts';
import type { Evaluation } from '../src/rl/eval/trainer-eval.ts';
import { layerConfig } from '../src/rl/launch-config.ts';
import { loadModelEngine, planModelLoad } from '../src/rl/launch-model.ts';
import { jsonSafe } from '../src/rl/grpo/metrics.ts';
import { rewardWeights } from '../src/rl/grpo/rewards.ts';
import { parseTranscripts } from '../src/rl/grpo/sft.ts';
import { adapterFiles, Run, trainableMode, type RunEvent } from '../src/rl/run.ts';
import { RunControl } from '../src/rl/run-control.ts';
import type { Rollout } from '../src/rl/rollout/rollout.ts';
import { checkpointVision } from '../src/rl/rollout/checkpoint-vision.ts';
import type { RolloutVision } from '../src/rl/rollout/rollout-images.ts';
import { envServerUnreachable, envTrouble } from './env-outage.ts';
import { builtinEnvUrls, solverEpisodes, solverTranscripts, type RunTask } from '../src/rl/tasks/resolve-task.ts';
import { modelTierOf, presetConfig } from '../src/rl/tasks/presets.ts';
import { envClassRunTask } from './env-class-run.ts';
import { evaluate, withAdapters } from './evaluate.ts';
import { trackGpuMemory, type GpuMemoryMeter } from './gpu-memory.ts';
import { loadModelChoice, type LoadedModel } from './load-model.ts';
import type { RunState } from '../src/rl/run-state.ts';
import type { RunStates } from './run-states.ts';
import { rolloutViews } from './rollout-views.ts';
import { stepProgressReporter } from './step-progress.ts';
import { ScreenshotBudget } from './stored-screenshots.ts';
import { trainedChat, trainedChatMetadata, type TrainedChat } from '../src/export/trained-chat.ts';
import { exportFullModel, exportTransformersJs, packRunState, unpackRunState, type NamedFile } from './run-files.ts';

const MIB = 1024 * 1024;

export interface TrainerServiceOptions {
  checkpoints: RunStates;
  /** The WebGPU device (default: getGpu()). */
  gpu?: () => Promise<Gpu>;
}

interface ReadyModel {
  loaded: LoadedModel;
  engine: Engine;
  /** The weight precision and memory plan the engine was loaded with, decided once (a reload uses the same). */
  plan: LoadPlan;
  /** A vision-language checkpoint's images (its engine loaded with the vision tower); undefined for a text model. */
  vision: RolloutVision | undefined;
  /**
   * Full fine-tuning trained the engine's base weights in place since they were uploaded: the next
   * run must not start from them (see TrainerService.startingPoint).
   */
  baseTrained: boolean;
  /** What the last run on these weights rendered its chats with: every export carries it. */
  chat: TrainedChat | null;
}

/** The run shape the memory plan is shown for when a model loads: the setup page's default preset for this model. */
function defaultRunConfig(model: LoadedModel): GRPOConfig {
  return configFromObject(presetConfig('catch', modelTierOf(model.checkpoint.config)));
}

function parameterCount(model: LoadedModel): number {
  let n = 0;
  for (const t of model.checkpoint.tensors.values()) n += t.shape.reduce((a, b) => a * b, 1);
  return n;
}

export class TrainerService implements TrainerWorkerApi {
  private gpuPromise: Promise<Gpu> | null = null;
  private meter: GpuMemoryMeter | null = null;
  private model: ReadyModel | null = null;
  private control: RunControl | null = null;

  constructor(private readonly options: TrainerServiceOptions) {}

  private async gpu(): Promise<Gpu> {
    this.gpuPromise ??= (this.options.gpu ?? (() => getGpu()))();
    try {
      const gpu = await this.gpuPromise;
      this.meter ??= trackGpuMemory(gpu.device);
      return gpu;
    } catch (err) {
      this.gpuPromise = null; // let a later call try again (e.g. after the user fixed chrome://flags)
      throw err;
    }
  }

  async probe(): Promise<ProbeResult> {
    try {
      const gpu = await this.gpu();
      return {
        webgpu: true,
        adapter: gpu.adapterInfo,
        f16: gpu.f16,
        maxBufferSize: gpu.limits.maxBufferSize,
        maxStorageBufferBindingSize: gpu.limits.maxStorageBufferBindingSize,
        software: gpu.software,
      };
    } catch (err) {
      return { webgpu: false, error: (err as Error).message };
    }
  }

  async loadModel(choice: ModelChoice, events: Pick<WorkerEvents, 'onProgress'>): Promise<ModelInfo> {
    if (this.control) throw new Error('A run is training in this tab: stop it before loading another model');
    const gpu = await this.gpu();
    // Through comlink each callback is a message on its own channel: wait for the last progress report
    // to be delivered before answering, or it could land after the answer and show a stale bar.
    let delivered: Promise<unknown> = Promise.resolve();
    const onProgress = (p: LoadProgress) => {
      delivered = Promise.resolve(events.onProgress(p));
    };
    const loaded = await loadModelChoice(choice, onProgress);
    if (choice.weightDtype === 'f16' && !gpu.f16) throw new Error('f16 weights need the shader-f16 feature, which this GPU adapter does not have: choose auto or f32');
    // A vision-language checkpoint loads with its tower and processor, so its runs read screenshots
    // (a vision_config that cannot be used, config.visionError, leaves a text model without one).
    const vision = await checkpointVision(loaded.checkpoint, loaded.name);
    // The precision (weight-precision.ts: the checkpoint's own, f16 only where the plan needs it) and the
    // memory plan, for the setup page's default run on this model: decided once, shown, and loaded with.
    const plan = await planModelLoad(loaded.checkpoint, gpu, { wanted: choice.weightDtype ?? 'auto', config: defaultRunConfig(loaded), vision: vision !== undefined });
    const cfg = loaded.checkpoint.config;
    const info: ModelInfo = {
      name: loaded.name,
      layers: cfg.numLayers,
      hidden: cfg.hiddenSize,
      vocab: cfg.vocabSize,
      params: parameterCount(loaded),
      weightDtype: plan.precision.stored,
      weightPrecision: plan.precision.reason,
      memory: plan.memory.items.map((i) => ({ name: i.name, bytes: i.bytes })),
      totalBytes: plan.memory.totalBytes,
      fits: plan.memory.fits,
      message: plan.memory.message,
      config: cfg,
    };
    this.model?.engine.destroy();
    this.model = null;
    // A model that cannot fit is described but not uploaded: allocating it would only lose the device.
    if (!plan.memory.fits) {
      await delivered;
      return info;
    }
    const engine = await loadModelEngine(loaded.checkpoint, gpu, plan, { vision: vision !== undefined, onProgress });
    this.model = { loaded, engine, plan, vision, baseTrained: false, chat: null };
    await delivered;
    return { ...info, weightDtype: engine.weightDtype };
  }

  private ready(): ReadyModel {
    if (!this.model) throw new Error('No model is loaded: load one on the setup page first');
    return this.model;
  }

  pause(): void {
    this.control?.pause();
  }

  resume(): void {
    this.control?.resume();
  }

  stop(): void {
    this.control?.stop();
  }

  async checkpointStep(runId: string): Promise<number | null> {
    return (await this.options.checkpoints.load(runId))?.runStep ?? null;
  }

  /**
   * Puts the engine where a run starts: exactly the checkpoint's weights, with fresh trainable state of
   * `mode`. A LoRA run leaves the base weights alone and setTrainable makes new adapters and a new
   * optimizer, so only after full fine-tuning are the weights uploaded again (from the checkpoint
   * already in memory, the same upload as a clean load, so the run equals one in a fresh tab bit for
   * bit). The run then sets the trainable mode (and a resumed one loads its checkpoint over it).
   */
  private async startingPoint(model: ReadyModel, mode: TrainableMode): Promise<void> {
    if (model.baseTrained) {
      model.engine.destroy();
      try {
        model.engine = await loadModelEngine(model.loaded.checkpoint, await this.gpu(), model.plan, { vision: model.vision !== undefined });
      } catch (err) {
        this.model = null;
        throw new Error(`Could not upload the weights of ${model.loaded.name} again for the new run (${(err as Error).message}): load the model again on the setup page`);
      }
      model.baseTrained = false;
    }
    // Marked before the run starts: a run that fails mid-step has trained the weights just the same.
    if (mode.kind === 'full') model.baseTrained = true;
  }

  async train(opts: RunOptions, events: WorkerEvents): Promise<void> {
    const model = this.ready();
    if (this.control) throw new Error('A run is already training in this tab');
    const control = (this.control = new RunControl());
    try {
      const resume = opts.resume ? await this.options.checkpoints.load(opts.runId) : undefined;
      if (resume === null) throw new Error(`No checkpoint is kept in this browser for run ${opts.runId}: it cannot be resumed here`);
      const { tokenizer, checkpoint } = model.loaded;
      const resolved = await resolveRun(runRequest(opts, resume), checkpoint.config);
      const { config } = resolved;
      // The page's own env-server serves the built-in envs an environment class names with envUrl().
      const task = bindRun(resolved, { tokenizer, model: checkpoint.config, builtinUrls: builtinEnvUrls(new URL(opts.envUrl).origin), ...(model.vision ? { vision: model.vision } : {}) });
      await this.startingPoint(model, trainableMode(config));
      model.chat = trainedChat(config, task);
      // A checkpoint must never get ahead of the steps the page holds: the trainer saves step k's
      // checkpoint before it hands step k over, and a reload in between would resume after a step the
      // run store never got (stored steps [0, 2]). So a checkpoint past the last step the page has
      // taken (`delivered`, run numbering) waits here and is written once the page has that step.
      let delivered = resume?.runStep ?? 0;
      const held: { ckpt: RunState | null } = { ckpt: null };
      const run = new Run({
        engine: model.engine,
        tokenizer,
        ...(model.vision ? { vision: model.vision } : {}),
        config,
        task,
        sftTranscripts: async () => (opts.sftJsonl !== undefined ? parseTranscripts(opts.sftJsonl, 'uploaded SFT data') : solverTranscripts(task, solverEpisodes(config), config.seed)),
        store: {
          save: async (ckpt) => {
            if (ckpt.runStep <= delivered) await this.options.checkpoints.save(opts.runId, ckpt);
            else held.ckpt = ckpt;
            return `browser storage: run ${opts.runId}, step ${ckpt.runStep}`;
          },
        },
        resume,
        control,
        ...(config.eval_strategy === 'steps' || config.eval_on_start ? { evaluation: heldOutEvaluation(resolved, { tokenizer, model: checkpoint.config, ...(model.vision ? { vision: model.vision } : {}) }) } : {}),
        onRollouts: (rollouts) => pauseIfEnvServerGone(rollouts, opts.envUrl, control),
        ...(events.onStepProgress ? { onProgress: stepProgressReporter((p) => void events.onStepProgress!(p)) } : {}),
        // TRL's eval loop on the task's held-out split (an MCP env has none of its own: no evaluation).
        ...((config.eval_strategy === 'steps' || config.eval_on_start) && resolved.task.name !== 'mcp'
          ? { evaluation: { task: bindRun(resolved, { tokenizer, model: checkpoint.config, ...(model.vision ? { vision: model.vision } : {}), split: 'eval' }), rows: splitRows(resolved.task, 'eval'), seedOf: seedSpace(resolved.task.env, 'eval') } }
          : {}),
      });
      const toUi = uiEvents({ events, config, task, tokenizer, meter: this.meter });
      const steps = run.events();
      for (let r = await steps.next(); ; r = await steps.next()) {
        if (r.done) {
          events.onStatus({ status: r.value });
          break;
        }
        // The page has the step once its handler returned (it queues the step in localStorage).
        await toUi(r.value);
        if (r.value.phase === 'status') continue;
        delivered = r.value.step;
        const due = held.ckpt;
        if (due !== null && due.runStep <= delivered) {
          held.ckpt = null;
          await this.options.checkpoints.save(opts.runId, due);
        }
      }
    } catch (err) {
      events.onStatus({ status: 'failed', message: (err as Error).message });
      throw err;
    } finally {
      this.control = null;
    }
  }

  async exportAdapter(): Promise<{ name: string; bytes: Uint8Array }[]> {
    const { engine, loaded, chat } = this.ready();
    return adapterFiles(engine, loaded.name, chat ? trainedChatMetadata(chat) : {});
  }

  async exportModel(): Promise<NamedFile[]> {
    const { engine, loaded, chat } = this.ready();
    return exportFullModel(engine, loaded, chat);
  }

  async exportOnnx(): Promise<NamedFile[]> {
    const { engine, loaded, chat } = this.ready();
    return exportTransformersJs(engine, loaded, chat);
  }

  async exportCheckpoint(runId: string): Promise<NamedFile[] | null> {
    const stored = await this.options.checkpoints.load(runId);
    return stored ? packRunState(stored) : null;
  }

  async importCheckpoint(runId: string, files: NamedFile[]): Promise<number> {
    const ckpt = unpackRunState(files);
    await this.options.checkpoints.save(runId, ckpt);
    return ckpt.runStep;
  }

  async evaluate(opts: Parameters<TrainerWorkerApi['evaluate']>[0], events?: Parameters<TrainerWorkerApi['evaluate']>[1]): Promise<EvalResult> {
    const model = this.ready();
    if (this.control && !this.control.paused) throw new Error('Evaluation needs the GPU to itself: wait for the run to finish, or pause it');
    const layer = runConfigLayer(opts.config);
    const mode = trainableMode(layerConfig([layer]).config);
    const { tokenizer, checkpoint } = model.loaded;
    return evaluate({
      tokenizer,
      model: checkpoint.config,
      ...(model.vision ? { vision: model.vision } : {}),
      config: layer,
      task: opts.task,
      envUrl: opts.envUrl,
      ...(opts.prompts ? { prompts: opts.prompts } : {}),
      episodes: opts.episodes,
      ...(events ? { onProgress: (p: EvalProgress) => void events.onProgress(p) } : {}),
      policies: async (policy, play) => {
        if (mode.kind !== 'full') return play(withAdapters(model.engine, policy === 'trained'));
        if (policy === 'trained' || !model.baseTrained) return play(model.engine);
        return this.playStartingWeights(model, mode, play);
      },
    });
  }

  /**
   * After full fine-tuning the base weights are gone from the engine: the trained ones (with their
   * optimizer moments) are copied to the host, the run's starting weights uploaded again as a new run
   * does (startingPoint), the base played, and the trained state loaded back over them — the engine
   * ends as it was, so downloads and a second evaluation see the trained model.
   */
  private async playStartingWeights<T>(model: ReadyModel, mode: TrainableMode, play: (engine: Engine) => Promise<T>): Promise<T> {
    const trained = await model.engine.saveState();
    model.engine.destroy();
    const gpu = await this.gpu();
    try {
      model.engine = await loadModelEngine(model.loaded.checkpoint, gpu, model.plan, { vision: model.vision !== undefined });
    } catch (err) {
      this.model = null;
      throw new Error(`Could not upload the base weights of ${model.loaded.name} again to evaluate them (${(err as Error).message}): load the model again on the setup page`);
    }
    try {
      return await play(model.engine);
    } finally {
      model.engine.setTrainable(mode);
      await model.engine.loadState(trained);
    }
  }
}

/** The held-out split TRL's eval loop plays during a run (eval_strategy steps): the same rows and seeds Evaluate plays. */
function heldOutEvaluation(resolved: ResolvedRun, binding: RunBinding): Evaluation {
  const rows = resolved.task.name === 'mcp' ? resolved.task.task.dataset() : splitRows(resolved.task, 'eval');
  return { task: bindRun(resolved, { ...binding, split: 'eval' }), rows, seedOf: seedSpace(resolved.task.env, 'eval') };
}

/** The run's config as the page stored it, the preset merged in: a newer or older webgrpo's keys are dropped. */
function runConfigLayer(config: Record<string, unknown>): ConfigLayer {
  return { source: 'run config', values: config, dropUnknown: true };
}

/** The launcher's request of a run the page starts or resumes (its warm-up length is config.sft_steps). */
function runRequest(opts: RunOptions, resume: RunState | undefined): RunRequest {
  return {
    env: opts.task,
    envUrl: opts.envUrl,
    prompts: async () => opts.prompts ?? [],
    preset: false,
    config: [runConfigLayer(opts.config)],
    ...(opts.envClass ? { envClass: () => envClassRunTask(opts.envClass!) } : {}),
    ...(resume ? { resume } : {}),
  };
}

/**
 * The run's events as the page sees them: steps as 0-based rows of the run store (run step − 1)
 * with throughput, GPU memory and readable rollouts added; statuses as they are.
 */
function uiEvents(o: { events: WorkerEvents; config: GRPOConfig; task: RunTask; tokenizer: TextTokenizer; meter: GpuMemoryMeter | null }): (e: RunEvent) => Promise<void> {
  const weights = rewardWeights(o.config.reward_weights, o.task.rewardFuncs);
  const gpuMemoryMib = () => (o.meter ? o.meter.takePeak() / MIB : NaN);
  const screenshots = new ScreenshotBudget();
  // Across the worker boundary each handler is a call that resolves once the page's handler returned.
  return async (e) => {
    if (e.phase === 'status') {
      o.events.onStatus({ status: e.status, ...(e.message ? { message: e.message } : {}), ...(e.cause ? { cause: e.cause } : {}) });
    } else if (e.phase === 'sft') {
      const metrics = { loss: e.loss, grad_norm: e.grad_norm, learning_rate: e.learning_rate, step_time: e.step_time, tokens_per_second: e.tokens / e.step_time, gpu_memory_mib: gpuMemoryMib() };
      await o.events.onStep({ step: e.step - 1, totalSteps: e.totalSteps, phase: 'sft', metrics: jsonSafe(metrics), rollouts: [] });
    } else {
      await o.events.onStep({
        step: e.step - 1,
        totalSteps: e.totalSteps,
        phase: 'grpo',
        // TRL's eval loop ran with this step: its eval_* metrics are logged with the step's.
        metrics: jsonSafe({ ...e.metrics, ...Object.assign({}, ...(e.evals ?? []).map((v) => v.metrics)), gpu_memory_mib: gpuMemoryMib() }),
        rollouts: e.rollouts
          ? rolloutViews({ rollouts: e.rollouts, samples: e.completions, unscorable: e.unscorable, numGenerations: o.config.num_generations, rewardWeights: weights, tokenizer: o.tokenizer, screenshots })
          : [],
      });
    }
  };
}

/**
 * A generation with env trouble, played while the env-server was down, is not trained on: the run
 * pauses itself (the step is played again on resume, from the checkpoint of the step before).
 * Throwing with the pause requested makes the trainer drop the generation (trainGRPO: an aborted
 * rollout call saves the last step's state and returns).
 */
async function pauseIfEnvServerGone(rollouts: readonly Rollout[], envUrl: string, control: RunControl): Promise<void> {
  const failure = envTrouble(rollouts);
  if (failure === null || control.request !== null) return;
  const unreachable = await envServerUnreachable(envUrl);
  if (unreachable === null) return;
  control.pauseFor('env-server-unreachable', `${unreachable}: the run is paused with its state kept (in the last generation: ${failure})`);
  throw new Error(unreachable);
}
