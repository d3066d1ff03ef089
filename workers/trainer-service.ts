// The trainer worker's API (src/app/worker-api.ts) as a plain class, so Node tests can drive it
// without a browser. A thin handler over src/: it loads the model and engine, wires the task, SFT
// warm-up and GRPO loop of src/rl together, turns their events into the page's StepEvents, and keeps
// checkpoints per run. No training logic lives here.

import type { EvalRow, ModelChoice, ModelInfo, ProbeResult, RunOptions, StepEvent, TrainerWorkerApi, WorkerEvents } from '../src/app/worker-api.ts';
import { loadEngine } from '../src/engine/engine.ts';
import { getGpu, type Gpu } from '../src/engine/gpu.ts';
import { stoppableEngine } from '../src/engine/stoppable.ts';
import { planMemory, type MemoryPlan } from '../src/engine/memory-plan.ts';
import type { Engine, TrainableMode } from '../src/engine/types.ts';
import type { LoadProgress } from '../src/model/types.ts';
import { deserializeCheckpoint, serializeCheckpoint, type CheckpointStore, type TrainerCheckpoint } from '../src/rl/grpo/checkpoint.ts';
import { configFromObject, DEFAULT_CONFIG, type GRPOConfig } from '../src/rl/config.ts';
import { jsonSafe } from '../src/rl/grpo/metrics.ts';
import type { Rollout } from '../src/rl/rollout/rollout.ts';
import { rewardWeights } from '../src/rl/grpo/rewards.ts';
import { adapterFiles, grpo, plannedWorkload, trainableMode, warmUp } from '../src/rl/run.ts';
import { referenceAfterWarmup, runPlan, type EngineState, type StepEvent as TrainerStepEvent } from '../src/rl/grpo/trainer.ts';
import { envServerUnreachable, envTrouble } from './env-outage.ts';
import { evaluate } from './evaluate.ts';
import { trackGpuMemory, type GpuMemoryMeter } from './gpu-memory.ts';
import { loadModelChoice, type LoadedModel } from './load-model.ts';
import { modelTierOf, presetConfig } from '../src/rl/tasks/presets.ts';
import { RunControl } from './run-control.ts';
import type { RunCheckpoints, StoredCheckpoint } from './run-checkpoints.ts';
import { rolloutViews } from './rollout-views.ts';
import { exportFullModel, exportTransformersJs, packCheckpoint, unpackCheckpoint, type NamedFile } from './run-files.ts';
import { runTask, sftExamples, type RunTask } from './run-task.ts';

const MIB = 1024 * 1024;

export interface TrainerServiceOptions {
  checkpoints: RunCheckpoints;
  /** The WebGPU device (default: getGpu()). */
  gpu?: () => Promise<Gpu>;
}

interface ReadyModel {
  loaded: LoadedModel;
  engine: Engine;
  /** The weight storage the engine was loaded with (a reload uses the same). */
  weightDtype: 'f16' | 'f32';
  /** The sequence count the load-time memory plan was checked for: every run's decode-slot cap. */
  plannedSequences: number;
  /**
   * Full fine-tuning trained the engine's base weights in place since they were uploaded: the next
   * run must not start from them (see TrainerService.startingPoint).
   */
  baseTrained: boolean;
}

/** The run shape the memory plan is shown for when a model loads: the setup page's default preset for this model. */
function defaultRunConfig(model: LoadedModel): GRPOConfig {
  return configFromObject(presetConfig('catch', modelTierOf(model.checkpoint.config)));
}

/** Tiny-tier models (the built-in ones) play catch through its compact variant. */
function isTiny(model: LoadedModel): boolean {
  return modelTierOf(model.checkpoint.config) === 'tiny';
}

function memoryPlanFor(model: LoadedModel, gpu: Gpu, weightDtype: 'f16' | 'f32', config: GRPOConfig): MemoryPlan {
  return planMemory({
    config: model.checkpoint.config,
    weightDtype,
    ...plannedWorkload(config),
    limits: { maxStorageBufferBindingSize: gpu.limits.maxStorageBufferBindingSize, maxBufferSize: gpu.limits.maxBufferSize },
  });
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
    // f16 storage where the adapter has shader-f16 (full fine-tuning promotes what it trains to f32).
    const plannedDtype = gpu.f16 && choice.weightDtype !== 'f32' ? 'f16' : 'f32';
    if (choice.weightDtype === 'f16' && !gpu.f16) throw new Error('f16 weights need the shader-f16 feature, which this GPU adapter does not have: choose auto or f32');
    const planned = defaultRunConfig(loaded);
    const plan = memoryPlanFor(loaded, gpu, plannedDtype, planned);
    const cfg = loaded.checkpoint.config;
    const info: ModelInfo = {
      name: loaded.name,
      layers: cfg.numLayers,
      hidden: cfg.hiddenSize,
      vocab: cfg.vocabSize,
      params: parameterCount(loaded),
      weightDtype: plannedDtype,
      memory: plan.items.map((i) => ({ name: i.name, bytes: i.bytes })),
      totalBytes: plan.totalBytes,
      fits: plan.fits,
      message: plan.message,
      config: cfg,
    };
    this.model?.engine.destroy();
    this.model = null;
    // A model that cannot fit is described but not uploaded: allocating it would only lose the device.
    if (!plan.fits) {
      await delivered;
      return info;
    }
    const engine = await loadEngine(loaded.checkpoint, { gpu, onProgress, weightDtype: plannedDtype });
    this.model = { loaded, engine, weightDtype: plannedDtype, plannedSequences: plannedWorkload(planned).numSequences, baseTrained: false };
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
   * bit). A resumed run then loads its checkpoint over this.
   */
  private async startingPoint(model: ReadyModel, mode: TrainableMode): Promise<void> {
    if (model.baseTrained) {
      model.engine.destroy();
      try {
        model.engine = await loadEngine(model.loaded.checkpoint, { gpu: await this.gpu(), weightDtype: model.weightDtype });
      } catch (err) {
        this.model = null;
        throw new Error(`Could not upload the weights of ${model.loaded.name} again for the new run (${(err as Error).message}): load the model again on the setup page`);
      }
      model.baseTrained = false;
    }
    model.engine.setTrainable(mode);
    // Marked as soon as the mode is set: a run that fails mid-step has trained the weights just the same.
    if (mode.kind === 'full') model.baseTrained = true;
  }

  async train(opts: RunOptions, events: WorkerEvents): Promise<void> {
    const model = this.ready();
    if (this.control) throw new Error('A run is already training in this tab');
    const control = (this.control = new RunControl());
    try {
      const config = configFromObject(withoutUnknownKeys(opts.config));
      const task = await runTask({ envName: opts.envName, envUrl: opts.envUrl, tokenizer: model.loaded.tokenizer, tinyModel: isTiny(model.loaded), prompts: opts.prompts });
      const session = new RunSession(model, config, task, opts, events, control, this.options.checkpoints, this.meter);
      await this.startingPoint(model, trainableMode(config));
      const outcome = await session.run();
      events.onStatus({ status: outcome });
    } catch (err) {
      events.onStatus({ status: 'failed', message: (err as Error).message });
      throw err;
    } finally {
      this.control = null;
    }
  }

  async exportAdapter(): Promise<{ name: string; bytes: Uint8Array }[]> {
    const { engine, loaded } = this.ready();
    return adapterFiles(engine, loaded.name);
  }

  async exportModel(): Promise<NamedFile[]> {
    const { engine, loaded } = this.ready();
    return exportFullModel(engine, loaded);
  }

  async exportOnnx(): Promise<NamedFile[]> {
    const { engine, loaded } = this.ready();
    return exportTransformersJs(engine, loaded);
  }

  async exportCheckpoint(runId: string): Promise<NamedFile[] | null> {
    const stored = await this.options.checkpoints.load(runId);
    return stored ? packCheckpoint(stored) : null;
  }

  async importCheckpoint(runId: string, files: NamedFile[]): Promise<number> {
    const ckpt = unpackCheckpoint(files);
    await this.options.checkpoints.save(runId, ckpt);
    return ckpt.runStep;
  }

  async evaluate(opts: Parameters<TrainerWorkerApi['evaluate']>[0]): Promise<EvalRow[]> {
    const { engine, loaded } = this.ready();
    if (this.control && !this.control.paused) throw new Error('Evaluation needs the GPU to itself: wait for the run to finish, or pause it');
    const config = configFromObject(withoutUnknownKeys(opts.config));
    return evaluate({ engine, tokenizer: loaded.tokenizer, tinyModel: isTiny(loaded), config, envName: opts.envName, envUrl: opts.envUrl, prompts: opts.prompts, episodes: opts.episodes });
  }
}

/** A stored run config may carry keys of a newer or older webgrpo; the trainer only takes its own. */
function withoutUnknownKeys(config: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(config).filter(([k]) => k in DEFAULT_CONFIG));
}

type Outcome = 'finished' | 'stopped';

/** One train() call: SFT warm-up, then GRPO, with pause/stop and per-run checkpoints. */
class RunSession {
  /** SFT steps of the run: from the options, or from the checkpoint when resuming. */
  private sftTotal: number;
  private readonly grpoTotal: number;
  /** The latest generation's rollouts, until their step is reported. */
  private pendingRollouts: Rollout[] | null = null;
  private lastNumTokens = 0;

  /** `model`'s engine is at the run's starting point already (TrainerService.startingPoint). */
  constructor(
    private readonly model: ReadyModel,
    private readonly config: GRPOConfig,
    private readonly task: RunTask,
    private readonly opts: RunOptions,
    private readonly events: WorkerEvents,
    private readonly control: RunControl,
    private readonly checkpoints: RunCheckpoints,
    private readonly meter: GpuMemoryMeter | null,
  ) {
    if (!Number.isInteger(opts.sftSteps) || opts.sftSteps < 0) throw new Error(`sftSteps must be a non-negative integer, got ${opts.sftSteps}`);
    this.sftTotal = opts.sftSteps;
    this.grpoTotal = runPlan(this.config, this.task.dataset.length).totalSteps;
  }

  private get totalSteps(): number {
    return this.sftTotal + this.grpoTotal;
  }

  async run(): Promise<Outcome> {
    const { engine } = this.model;
    let stored: StoredCheckpoint | null = null;
    if (this.opts.resume) {
      stored = await this.checkpoints.load(this.opts.runId);
      if (!stored) throw new Error(`No checkpoint is kept in this browser for run ${this.opts.runId}: it cannot be resumed here`);
      // The run's own plan, whatever the resuming page asked: its steps keep their numbers.
      this.sftTotal = stored.sftSteps;
    }
    this.events.onStatus({ status: 'running', message: stored ? `resuming from step ${stored.runStep}` : undefined });
    const checkpoint = stored ? deserializeCheckpoint(stored.files) : undefined;
    const sftDone = stored?.sftStepsDone ?? 0;
    if (sftDone < this.sftTotal) {
      // Mid-warm-up: restore the weights, finish the warm-up, then GRPO starts from its beginning.
      if (checkpoint) await engine.loadState(checkpoint.engine);
      if ((await this.sftPhase(sftDone)) === 'stopped') return 'stopped';
      return this.grpoPhase(undefined, await referenceAfterWarmup(engine, this.config, this.sftTotal > 0));
    }
    return this.grpoPhase(checkpoint);
  }

  private gpuMemoryMib(): number | null {
    return this.meter ? this.meter.takePeak() / MIB : null;
  }

  private async saveSftCheckpoint(sftDone: number): Promise<void> {
    const files = serializeCheckpoint({
      counters: { step: 0, generation: 0, numTokens: 0, totalSteps: this.grpoTotal },
      config: this.config,
      engine: await this.model.engine.saveState(),
    });
    await this.checkpoints.save(this.opts.runId, { runStep: sftDone, sftSteps: this.sftTotal, sftStepsDone: sftDone, files });
  }

  private async sftPhase(alreadyDone: number): Promise<'stopped' | 'done'> {
    const { engine, loaded } = this.model;
    const c = this.config;
    const examples = await sftExamples({ task: this.task, envUrl: this.opts.envUrl, config: c, tokenizer: loaded.tokenizer, jsonl: this.opts.sftJsonl });
    let done = alreadyDone;
    while (done < this.sftTotal) {
      let t0 = performance.now();
      const steps = warmUp({ engine, config: c, examples, steps: this.sftTotal, done, signal: this.control.signal });
      for await (const e of steps) {
        const stepTime = (performance.now() - t0) / 1000;
        t0 = performance.now();
        this.events.onStep({
          step: done,
          totalSteps: this.totalSteps,
          phase: 'sft',
          metrics: jsonSafe({
            loss: e.loss,
            grad_norm: e.grad_norm,
            learning_rate: e.learning_rate,
            step_time: stepTime,
            tokens_per_second: e.tokens / stepTime,
            gpu_memory_mib: this.gpuMemoryMib() ?? NaN,
          }),
          rollouts: [],
        });
        done++;
      }
      // warmUp() reset the optimizer for GRPO when the warm-up completed.
      if (done === this.sftTotal) return 'done';
      await this.saveSftCheckpoint(done);
      if (!(await this.pausedThenResumed())) return 'stopped';
    }
    return 'done';
  }

  /** After a segment stopped early: reports the pause and waits; false = the user stopped the run. */
  private async pausedThenResumed(): Promise<boolean> {
    const why = this.control.cause;
    if (this.control.request === 'pause') this.events.onStatus(why ? { status: 'paused', cause: why.cause, message: why.message } : { status: 'paused' });
    const resumed = await this.control.waitWhilePaused();
    if (resumed) this.events.onStatus({ status: 'running' });
    return resumed;
  }

  private checkpointStore(): CheckpointStore {
    return {
      save: async (step, files) => {
        await this.checkpoints.save(this.opts.runId, { runStep: this.sftTotal + step, sftSteps: this.sftTotal, sftStepsDone: this.sftTotal, files });
        return `browser storage: run ${this.opts.runId}, step ${this.sftTotal + step}`;
      },
    };
  }

  private async grpoPhase(resumeFrom: TrainerCheckpoint | undefined, reference?: EngineState): Promise<Outcome> {
    const { engine, loaded } = this.model;
    const c = this.config;
    const weights = rewardWeights(c.reward_weights, this.task.rewardFuncs);
    let resume = resumeFrom;
    if (resume) this.lastNumTokens = resume.counters.numTokens;
    // The end of the warm-up is a checkpoint too: a reload during the first GRPO step keeps the SFT.
    else await this.checkpointStore().save(0, serializeCheckpoint({ counters: { step: 0, generation: 0, numTokens: 0, totalSteps: this.grpoTotal }, config: c, engine: await engine.saveState(), reference }));
    for (;;) {
      // The same orchestrator as the CLI (src/rl/run.ts): reseeded games, prefetched resets, trainGRPO.
      const steps = grpo({
        // Stop cuts the generation in flight short (its step is not recorded); pause waits for the step's end.
        engine: stoppableEngine(engine, () => this.control.request === 'stop'),
        tokenizer: loaded.tokenizer,
        config: c,
        task: this.task,
        onRollouts: async (rollouts) => {
          this.pendingRollouts = rollouts;
          await this.pauseIfEnvServerGone(rollouts);
        },
        // The sequence count the load-time memory plan was checked for: a larger generation plays in
        // waves / refilled slots of this many.
        maxBatchSize: this.model.plannedSequences,
        checkpointStore: this.checkpointStore(),
        resume,
        reference,
        signal: this.control.signal,
      });
      let last = resume?.counters.step ?? 0;
      for await (const e of steps) {
        this.events.onStep(this.grpoStepEvent(e, weights));
        last = e.step;
      }
      if (last >= this.grpoTotal || !this.control.signal.aborted) return 'finished';
      if (!(await this.pausedThenResumed())) return 'stopped';
      const stored = await this.checkpoints.load(this.opts.runId);
      if (!stored) throw new Error(`the checkpoint of run ${this.opts.runId} taken at the pause is gone`);
      resume = deserializeCheckpoint(stored.files);
    }
  }

  /**
   * A generation with env trouble, played while the env-server was down, is not trained on: the
   * run pauses itself (the step is played again on resume, from the checkpoint of the step before).
   * Throwing with the pause requested makes the trainer drop the generation (trainGRPO: an aborted
   * rollout call saves the last step's state and returns).
   */
  private async pauseIfEnvServerGone(rollouts: readonly Rollout[]): Promise<void> {
    const failure = envTrouble(rollouts);
    if (failure === null || this.control.request !== null) return;
    const unreachable = await envServerUnreachable(this.opts.envUrl);
    if (unreachable === null) return;
    this.pendingRollouts = null;
    this.control.pauseFor('env-server-unreachable', `${unreachable}: the run is paused with its state kept (in the last generation: ${failure})`);
    throw new Error(unreachable);
  }

  private grpoStepEvent(e: TrainerStepEvent, weights: number[]): StepEvent {
    const numTokens = e.metrics.num_tokens ?? this.lastNumTokens;
    const stepTime = e.metrics.step_time ?? NaN;
    const metrics = jsonSafe({
      ...e.metrics,
      tokens_per_second: (numTokens - this.lastNumTokens) / stepTime,
      gpu_memory_mib: this.gpuMemoryMib() ?? NaN,
    });
    this.lastNumTokens = numTokens;
    // A generation can span several optimizer steps: its rollouts are shown with the first of them.
    const rollouts = this.pendingRollouts;
    this.pendingRollouts = null;
    return {
      step: this.sftTotal + e.step - 1,
      totalSteps: this.totalSteps,
      phase: 'grpo',
      metrics,
      rollouts: rollouts
        ? rolloutViews({ rollouts, samples: e.completions, unscorable: e.unscorable, numGenerations: this.config.num_generations, rewardWeights: weights, tokenizer: this.model.loaded.tokenizer })
        : [],
    };
  }
}
