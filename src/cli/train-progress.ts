// What `train` shows on stderr while it works, and how Ctrl-C reaches the engine: the engine handed
// to the run is a thin wrapper that reports decode steps and micro-batches as progress and, once the
// run is aborted, stops a generation at its next decode step (so a stop takes seconds, not a batch).

import type { Engine } from '../engine/types.ts';
import type { RunEvent } from '../rl/run-example.ts';
import { eta, formatDuration, Progress, type ProgressTask } from './progress.ts';

function abortError(): Error {
  const err = new Error('stopped');
  err.name = 'AbortError';
  return err;
}

export interface EngineHooks {
  signal: AbortSignal;
  /** One decode step of a generation batch, `live` sequences still decoding. */
  onDecode(live: number): void;
  /** One micro-batch's backward pass. */
  onBackward(): void;
}

/** `engine` with generation stoppable by `hooks.signal` and progress hooks; everything else passes through. */
export function watchedEngine(engine: Engine, hooks: EngineHooks): Engine {
  return {
    get config() {
      return engine.config;
    },
    get gpu() {
      return engine.gpu;
    },
    get weightDtype() {
      return engine.weightDtype;
    },
    newSequence: () => engine.newSequence(),
    releaseSequence: (seq) => engine.releaseSequence(seq),
    generate: (req) => {
      if (hooks.signal.aborted) return Promise.reject(abortError());
      return engine.generate({
        ...req,
        onStep: (info) => {
          req.onStep?.(info);
          hooks.onDecode(info.live);
          if (hooks.signal.aborted) throw abortError();
        },
      });
    },
    score: (req) => engine.score(req),
    backward: async (req) => {
      await engine.backward(req);
      hooks.onBackward();
    },
    zeroGrad: () => engine.zeroGrad(),
    step: (opt) => engine.step(opt),
    setTrainable: (mode) => engine.setTrainable(mode),
    saveState: () => engine.saveState(),
    loadState: (state) => engine.loadState(state),
    exportAdapter: (name) => engine.exportAdapter(name),
    loadAdapter: (source) => engine.loadAdapter(source),
    readGrads: () => engine.readGrads(),
    destroy: () => engine.destroy(),
  };
}

/**
 * Progress of a training run: the SFT warm-up's steps with an ETA, and for each GRPO step its
 * rollouts (decode steps so far) and optimization (micro-batches of the step), with the run's ETA from
 * the mean time of the steps done.
 */
export class TrainProgress implements Omit<EngineHooks, 'signal'> {
  private sft: ProgressTask | null = null;
  private grpoStart = 0;
  private grpoStepsDone = 0;
  private stepStart = 0;
  private decodeSteps = 0;
  private micro = 0;
  private nextStep = 1;
  private totalSteps: number | null = null;
  private lastLine = 0;

  constructor(
    private readonly out: Progress,
    /** Micro-batches (backward passes) per GRPO step. */
    private readonly microPerStep: number,
    private readonly logIntervalMs = 5000,
  ) {}

  sftStarting(steps: number): void {
    this.out.line(`SFT warm-up: ${steps} steps`);
    this.sft = this.out.task('SFT warm-up', steps);
  }

  /** Call with each run event, after it was printed on stdout. */
  event(e: RunEvent): void {
    if (e.phase === 'sft') {
      this.sft?.update(e.step, `loss ${e.loss.toFixed(4)}`);
      if (e.step === e.totalSteps) this.sft?.end();
      return;
    }
    const now = performance.now();
    if (this.grpoStepsDone === 0) this.grpoStart = this.stepStart;
    this.grpoStepsDone++;
    this.totalSteps = e.totalSteps;
    this.nextStep = e.step + 1;
    const elapsed = (now - this.grpoStart) / 1000;
    const left = eta(elapsed, this.grpoStepsDone, this.grpoStepsDone + (e.totalSteps - e.step));
    this.out.line(`GRPO step ${e.step}/${e.totalSteps} done in ${formatDuration((now - this.stepStart) / 1000)}${e.step < e.totalSteps && left !== null ? `, run ETA ${formatDuration(left)}` : ''}`);
    this.stepStart = now;
    this.decodeSteps = 0;
    this.micro = 0;
  }

  /** totalSteps: null until the trainer says (num_train_epochs runs). */
  grpoStarting(totalSteps: number | null, firstStep: number): void {
    this.totalSteps = totalSteps;
    this.nextStep = firstStep;
    this.stepStart = performance.now();
  }

  onDecode(live: number): void {
    this.decodeSteps++;
    this.status(`rollouts, ${this.decodeSteps} decode steps (${live} ${live === 1 ? "sequence" : "sequences"} still decoding)`);
  }

  onBackward(): void {
    this.micro++;
    this.status(`optimizing, micro-batch ${this.micro}/${this.microPerStep}`);
  }

  private status(what: string): void {
    if (this.sft && this.grpoStepsDone === 0 && this.stepStart === 0) return; // SFT's own task reports
    const now = performance.now();
    if (now - this.lastLine < this.logIntervalMs) return;
    this.lastLine = now;
    const inStep = (now - this.stepStart) / 1000;
    const mean = this.grpoStepsDone > 0 ? (this.stepStart - this.grpoStart) / 1000 / this.grpoStepsDone : null;
    const typical = mean !== null ? `; steps take ~${formatDuration(mean)}` : '';
    this.out.line(`GRPO step ${this.nextStep}/${this.totalSteps ?? '?'}: ${what}, ${formatDuration(inStep)} into the step${typical}`);
  }
}
