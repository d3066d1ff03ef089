// The one owner of a training run, for the `train` CLI and the app's worker alike: a Run is built
// from a spec (engine, tokenizer, config, the task from tasks/resolve-task.ts, a checkpoint store, a
// control) and runs trainable mode → SFT warm-up → reference capture → GRPO, with a checkpoint when
// the warm-up pauses or stops, one when GRPO starts (the warmed-up policy and its KL reference) and
// the trainer's own. Steps are numbered once for the whole run: 1-based, SFT first, GRPO after.
// Pause and stop come through the injected control; the decode-slot plan is the run's own config's.
// Front ends add only transport: the CLI prints JSON lines, the worker maps events to the page.

import type { Engine, TrainableMode } from '../engine/types.ts';
import { peftAdapterFiles } from '../engine/peft-adapter.ts';
import { stoppableEngine } from '../engine/stoppable.ts';
import type { TextTokenizer } from '../model/tokenizer.ts';
import { deserializeTrainerState, serializeTrainerState, type TrainerState } from './grpo/trainer-state.ts';
import type { GRPOConfig } from './config.ts';
import { trainSft, type SftEvent, type Transcript } from './grpo/sft.ts';
import { referenceAfterWarmup, stepPlan, trainGRPO, type EngineState, type GrpoStepEvent, type TrainerProgress } from './grpo/trainer.ts';
import type { RunState, RunStateStore } from './run-state.ts';
import type { PauseCause, RunControlPort } from './run-control.ts';
import { plannedWorkload } from './run-limits.ts';
import type { Rollout, RolloutProgress } from './rollout/rollout.ts';
import { envRolloutSource } from './rollout/rollout-source.ts';
import type { RolloutVision } from './rollout/rollout-images.ts';
import { sftExamples, type RunTask } from './tasks/resolve-task.ts';
import { trainerEvaluator, type Evaluation } from './eval/trainer-eval.ts';

/** One SFT warm-up step (trainSft's event, numbered in the run, 1-based) with its wall-clock seconds. */
export interface SftStepEvent extends SftEvent {
  step_time: number;
}

/** One GRPO optimizer step, numbered in the run (SFT steps first), with its generation's rollouts. */
export type GrpoRunStepEvent = { phase: 'grpo'; rollouts: Rollout[] | null } & GrpoStepEvent;

/** The run started (or resumed), paused, or went on after a pause. */
export interface RunStatusEvent {
  phase: 'status';
  status: 'running' | 'paused';
  message?: string;
  /** Set when the run paused itself (see RunControl.pauseFor). */
  cause?: PauseCause;
}

export type RunEvent = SftStepEvent | GrpoRunStepEvent | RunStatusEvent;

export type RunOutcome = 'finished' | 'stopped';

/** Where a GRPO step is: its rollouts' live counts, then the trainer's log-prob passes and micro-batches. */
export type RunProgress = ({ phase: 'rollouts' } & RolloutProgress) | TrainerProgress;

export interface RunSpec {
  /** The engine at the run's starting weights; the run sets its trainable mode. */
  engine: Engine;
  tokenizer: TextTokenizer;
  /** A vision-language model's images (its engine loaded with the vision tower): rollouts expand them, scoring and training embed them. */
  vision?: RolloutVision;
  /** The run's config; sft_steps is its warm-up length (the launcher sets a resumed run's to its checkpoint's). */
  config: GRPOConfig;
  task: RunTask;
  /** The warm-up transcripts, asked for only when a warm-up runs. */
  sftTranscripts: () => Promise<Transcript[]>;
  /** Where checkpoints go; without one nothing is saved (and a pause cannot be resumed). */
  store?: RunStateStore;
  /** The checkpoint to continue from. */
  resume?: RunState;
  control: RunControlPort;
  /** Progress within each GRPO step (counts only; the CLI shows it on stderr). */
  onProgress?: (p: RunProgress) => void;
  /**
   * Each generation's rollouts as soon as they are played, before they are trained on. Throwing (with
   * a pause or stop requested on the control) drops the generation: the trainer saves the last step's
   * state and returns, and the generation is played again on resume.
   */
  onRollouts?: (rollouts: readonly Rollout[]) => void | Promise<void>;
  /** The held-out split TRL's eval loop plays (eval_strategy steps / eval_on_start); without it there is none. */
  evaluation?: Evaluation;
}

export { plannedWorkload } from './run-limits.ts';

export function trainableMode(c: GRPOConfig): TrainableMode {
  if (c.train_mode === 'full') return { kind: 'full', ...(c.freeze_vision_tower ? { freezeVisionTower: true } : {}) };
  const vision = c.vision_lora_target_modules;
  return { kind: 'lora', lora: { r: c.lora_r, alpha: c.lora_alpha, targetModules: c.lora_target_modules, ...(vision.length > 0 ? { visionTargetModules: vision } : {}), seed: c.seed } };
}

/**
 * A vision-language run's `images/tokens_per_rollout`: image placeholder tokens in a rollout's context
 * (prompt + completion), averaged over the generation. What the vision tower embedded: 0 means no
 * screenshot reached the model (e.g. no tool call returned one).
 */
function imageTokensPerRollout(rollouts: readonly Rollout[]): number {
  if (rollouts.length === 0) return 0;
  return rollouts.reduce((n, r) => n + r.images.reduce((m, im) => m + im.length, 0), 0) / rollouts.length;
}

const MOMENT = /\.(exp_avg|exp_avg_sq)$/;

/**
 * Starts AdamW afresh (zero moments, step 0) while keeping the weights: GRPO after the SFT warm-up
 * gets its own optimizer, as two separate TRL trainers would.
 */
export async function resetOptimizer(engine: Engine): Promise<void> {
  const state = await engine.saveState();
  const moments = state.tensors.filter((t) => MOMENT.test(t.name));
  if (moments.length === 0) throw new Error('resetOptimizer: the engine state has no AdamW moments (*.exp_avg / *.exp_avg_sq)');
  for (const t of moments) t.data.fill(0);
  await engine.loadState({ tensors: state.tensors, step: 0 });
}

export class Run {
  private readonly c: GRPOConfig;
  /** SFT steps of the run: config.sft_steps, the one field that says it. */
  private readonly sftSteps: number;
  private readonly grpoSteps: number;
  /** The engine whose long calls a stop cuts short (src/engine/stoppable.ts); evaluation keeps the engine itself. */
  private readonly stoppable: Engine;
  /** The newest checkpoint's files: a GRPO segment after a pause continues from them. */
  private lastSaved: Map<string, Uint8Array> | null = null;
  private pendingRollouts: Rollout[] | null = null;
  /** num_tokens at the previous GRPO step (tokens_per_second is the step's share). */
  private lastNumTokens = 0;

  constructor(private readonly spec: RunSpec) {
    // Stop cuts the step in flight short (its step is not recorded): a generation at the next decode
    // step, a log-prob pass or backward (GRPO's or the warm-up's) at the next layer. Pause waits for
    // the step's end.
    this.stoppable = stoppableEngine(spec.engine, () => spec.control.request === 'stop');
    this.c = spec.config;
    this.sftSteps = spec.config.sft_steps;
    // A resumed run's numbering is its checkpoint's: another warm-up length would redo steps it did, or skip some.
    if (spec.resume && spec.resume.sftSteps !== this.sftSteps) {
      throw new Error(`Run: the checkpoint is of a run with ${spec.resume.sftSteps} SFT steps, the config says sft_steps ${this.sftSteps} (src/rl/launch.ts resolveRun sets a resumed run's from its checkpoint)`);
    }
    this.grpoSteps = stepPlan(this.c, spec.task.dataset.length).totalSteps;
  }

  get totalSteps(): number {
    return this.sftSteps + this.grpoSteps;
  }

  /** The run's events; returns how it ended. */
  async *events(): AsyncGenerator<RunEvent, RunOutcome> {
    const { engine, resume } = this.spec;
    engine.setTrainable(trainableMode(this.c));
    yield { phase: 'status', status: 'running', ...(resume ? { message: `resuming from step ${resume.runStep}` } : {}) };
    const checkpoint = resume ? deserializeTrainerState(resume.files) : undefined;
    const sftDone = resume?.sftStepsDone ?? 0;
    if (sftDone < this.sftSteps) {
      // Mid-warm-up: restore the weights, finish the warm-up, then GRPO starts from its beginning.
      if (checkpoint) await engine.loadState(checkpoint.engine);
      if ((yield* this.sftPhase(sftDone)) === 'stopped') return 'stopped';
      // KL is measured against the policy GRPO starts from: the warmed-up one.
      return yield* this.grpoPhase(undefined, await referenceAfterWarmup(engine, this.c, true));
    }
    return yield* this.grpoPhase(checkpoint);
  }

  /** The SFT warm-up from step `done`, in segments split by pauses; the optimizer is reset when it completes. */
  private async *sftPhase(alreadyDone: number): AsyncGenerator<RunEvent, 'done' | 'stopped'> {
    const { engine, control, tokenizer, task } = this.spec;
    const c = this.c;
    const transcripts = await this.spec.sftTranscripts();
    if (transcripts.length === 0) throw new Error('sft_steps > 0 needs warm-up transcripts (--sft FILE, --sft-solver, or the task\'s scripted solver)');
    const examples = sftExamples(task, transcripts, tokenizer, c);
    let done = alreadyDone;
    while (done < this.sftSteps) {
      let t0 = performance.now();
      for await (const e of trainSft({
        engine: this.stoppable,
        examples,
        steps: this.sftSteps - done,
        batchSize: c.sft_batch_size,
        learningRate: c.sft_learning_rate,
        // A resumed warm-up draws fresh batches rather than replaying the first ones.
        seed: c.seed + done,
        optimizer: { beta1: c.adam_beta1, beta2: c.adam_beta2, eps: c.adam_epsilon, weightDecay: c.weight_decay, maxGradNorm: c.max_grad_norm },
        signal: control.signal,
      })) {
        const now = performance.now();
        done++;
        yield { phase: 'sft', step: done, totalSteps: this.totalSteps, loss: e.loss, tokens: e.tokens, grad_norm: e.grad_norm, learning_rate: e.learning_rate, step_time: (now - t0) / 1000 };
        t0 = now;
      }
      if (done === this.sftSteps) {
        await resetOptimizer(engine);
        return 'done';
      }
      if (this.spec.store) await this.save({ runStep: done, sftSteps: this.sftSteps, sftStepsDone: done, files: this.trainerFiles({ step: 0, generation: 0, numTokens: 0, totalSteps: this.grpoSteps }, await engine.saveState()) });
      if (!(yield* this.pausedThenResumed())) return 'stopped';
    }
    return 'done';
  }

  /** GRPO from `resumeFrom` (or its start), in segments split by pauses. */
  private async *grpoPhase(resumeFrom: TrainerState | undefined, reference?: EngineState): AsyncGenerator<RunEvent, RunOutcome> {
    const { engine, tokenizer, task, control } = this.spec;
    const c = this.c;
    const saveState = (step: number, files: Map<string, Uint8Array>) => this.save({ runStep: this.sftSteps + step, sftSteps: this.sftSteps, sftStepsDone: this.sftSteps, files });
    let resume = resumeFrom;
    this.lastNumTokens = resume?.counters.numTokens ?? 0;
    // GRPO's start is a checkpoint too: a reload during the first GRPO step keeps the warm-up and its reference.
    if (!resume && this.spec.store) await saveState(0, this.trainerFiles({ step: 0, generation: 0, numTokens: 0, totalSteps: this.grpoSteps }, await engine.saveState(), reference));
    for (;;) {
      const source = envRolloutSource({
        engine: this.stoppable,
        tokenizer,
        envFactory: task.envFactory,
        episodes: task.episodes,
        config: c,
        template: task.template,
        // The run's own plan: no decode batch exceeds the sequence count its memory plan was checked for.
        maxBatchSize: plannedWorkload(c).numSequences,
        onProgress: this.spec.onProgress && ((p) => this.spec.onProgress!({ phase: 'rollouts', ...p })),
        ...(this.spec.vision ? { imageTokenizer: this.spec.vision.imageTokenizer } : {}),
      });
      let last = resume?.counters.step ?? 0;
      try {
        for await (const e of trainGRPO({
          engine: this.stoppable,
          config: c,
          dataset: task.dataset,
          rollouts: async (req) => {
            const rollouts = await source.rollouts(req);
            await this.spec.onRollouts?.(rollouts);
            this.pendingRollouts = rollouts;
            return rollouts;
          },
          prefetch: source.prefetch,
          rewardFuncs: task.rewardFuncs,
          saveState: this.spec.store ? saveState : undefined,
          resume,
          reference,
          signal: control.signal,
          decode: (ids) => tokenizer.decode(ids),
          onProgress: this.spec.onProgress,
          ...(this.spec.vision ? { imageInputs: this.spec.vision.scoreImages } : {}),
          // The unstoppable engine: a stop waits for an evaluation to finish rather than failing it.
          ...(this.spec.evaluation ? { evaluate: trainerEvaluator({ engine, tokenizer, config: c, evaluation: this.spec.evaluation, ...(this.spec.vision ? { imageTokenizer: this.spec.vision.imageTokenizer } : {}) }) } : {}),
        })) {
          last = e.step;
          yield this.grpoEvent(e);
        }
      } finally {
        // A stopped run may leave a prefetched generation's sessions open: closed in the background (a
        // reset without a timeout may never answer, and stopping must not wait for it).
        void source.close();
      }
      if (last >= this.grpoSteps || !control.signal.aborted) return 'finished';
      if (!(yield* this.pausedThenResumed())) return 'stopped';
      if (!this.lastSaved) throw new Error('the run was paused with no checkpoint store to continue from');
      resume = deserializeTrainerState(this.lastSaved);
    }
  }

  /** A GRPO step in the run's numbering, with its throughput; a generation's rollouts go with the first of its steps. */
  private grpoEvent(e: GrpoStepEvent): GrpoRunStepEvent {
    const rollouts = this.pendingRollouts;
    this.pendingRollouts = null;
    const numTokens = e.metrics.num_tokens ?? this.lastNumTokens;
    const tokensPerSecond = (numTokens - this.lastNumTokens) / (e.metrics.step_time ?? NaN);
    this.lastNumTokens = numTokens;
    return {
      phase: 'grpo',
      ...e,
      metrics: { ...e.metrics, tokens_per_second: tokensPerSecond, ...(this.spec.vision && rollouts ? { 'images/tokens_per_rollout': imageTokensPerRollout(rollouts) } : {}) },
      step: this.sftSteps + e.step,
      totalSteps: this.sftSteps + e.totalSteps,
      completions: e.completions.map((s) => ({ ...s, step: this.sftSteps + s.step })),
      ...(e.evals ? { evals: e.evals.map((v) => ({ ...v, step: this.sftSteps + v.step })) } : {}),
      rollouts,
    };
  }

  /** After a segment stopped early: reports the pause and waits; false = the run was stopped. */
  private async *pausedThenResumed(): AsyncGenerator<RunEvent, boolean> {
    const { control } = this.spec;
    const why = control.cause;
    if (control.request === 'pause') yield { phase: 'status', status: 'paused', ...(why ? { cause: why.cause, message: why.message } : {}) };
    const resumed = await control.waitWhilePaused();
    if (resumed) yield { phase: 'status', status: 'running' };
    return resumed;
  }

  private trainerFiles(counters: TrainerState['counters'], engine: EngineState, reference?: EngineState): Map<string, Uint8Array> {
    return serializeTrainerState({ counters, config: this.c, engine, ...(reference ? { reference } : {}) });
  }

  /** Only with a store: serializing the engine state is a full read-back, not worth doing for nothing. */
  private async save(ckpt: RunState): Promise<string> {
    if (!this.spec.store) throw new Error('Run.save: no checkpoint store');
    this.lastSaved = ckpt.files;
    return this.spec.store.save(ckpt);
  }
}

/**
 * The PEFT adapter as files (adapter_config.json, adapter_model.safetensors), the same from every front
 * end; `metadata` goes into the weights file's header (src/export/trained-chat.ts: the run's chat).
 */
export async function adapterFiles(engine: Engine, baseModelName: string, metadata: Readonly<Record<string, string>> = {}): Promise<{ name: string; bytes: Uint8Array }[]> {
  return [...peftAdapterFiles(await engine.exportAdapter(baseModelName), metadata)].map(([name, bytes]) => ({ name, bytes }));
}
