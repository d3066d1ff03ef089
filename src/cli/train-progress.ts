// What `train` shows on stderr while it works, and how Ctrl-C reaches the engine: the run reports
// where each step is (run.ts RunProgress) and a ticker writes it; the engine handed to the run is a
// thin wrapper that, once the run is aborted, stops a generation at its next decode step (so a stop
// takes seconds, not a batch).

import type { Engine } from '../engine/types.ts';
import type { RunEvent, RunProgress } from '../rl/run-example.ts';
import { eta, formatDuration, Progress, type ProgressTask } from './progress.ts';

function abortError(): Error {
  const err = new Error('stopped');
  err.name = 'AbortError';
  return err;
}

export interface EngineHooks {
  signal: AbortSignal;
}

/** `engine` with generation stoppable by `hooks.signal`; everything else passes through. */
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
          if (hooks.signal.aborted) throw abortError();
        },
      });
    },
    openDecode: (opts) => {
      const session = engine.openDecode(opts);
      return {
        step: (items, steps) => (hooks.signal.aborted ? Promise.reject(abortError()) : session.step(items, steps)),
        close: () => session.close(),
      };
    },
    score: (req) => engine.score(req),
    backward: (req) => engine.backward(req),
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

function plural(n: number, word: string): string {
  return `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
}

const STAGES = { forward: 'log-prob forward', backward: 'backward', optimizer: 'AdamW step' } as const;

/** One phase of a GRPO step in words, with its counts. */
export function describeProgress(p: RunProgress): string {
  switch (p.phase) {
    case 'rollouts':
      return `rollouts: ${plural(p.decoding, 'sequence')} decoding, ${p.episodesDone}/${plural(p.episodes, 'episode')} done, ${plural(p.tokens, 'token')} sampled; env: ${plural(p.envCallsInFlight, 'call')} in flight, ${p.envCallsDone.toLocaleString('en-US')} done`;
    case 'logprobs':
      return `${p.of === 'old' ? 'old log-probs' : 'reference log-probs (KL)'}: ${p.done}/${plural(p.total, 'sequence')} scored`;
    case 'optimize':
      return `optimizing: micro-batch ${p.microBatch}/${p.microBatches}, ${STAGES[p.stage]}`;
  }
}

/**
 * Progress of a training run: the SFT warm-up's steps with an ETA, and for each GRPO step the phase it
 * is in with its counts (rollouts: sequences decoding, episodes done, tokens, env calls; log-prob
 * passes; micro-batches), with the run's ETA from the mean time of the steps done. A ticker writes the
 * current phase every `intervalMs` when it moved, and every `heartbeatMs` even when it did not (a long
 * backward), so a step is never silent for long and a log never floods.
 */
export class TrainProgress {
  private sft: ProgressTask | null = null;
  private grpoStart = 0;
  private grpoStepsDone = 0;
  private stepStart = 0;
  private inGrpo = false;
  private nextStep = 1;
  private totalSteps: number | null = null;
  private current: RunProgress | null = null;
  private moved = false;
  private lastLine = 0;
  private ticker: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly out: Progress,
    private readonly intervalMs = 5000,
    private readonly heartbeatMs = 30_000,
  ) {}

  /** Starts the ticker (it never keeps the process alive). */
  start(): void {
    this.ticker ??= setInterval(() => this.tick(), this.intervalMs);
    this.ticker.unref?.();
  }

  stop(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
  }

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
    this.line(`GRPO step ${e.step}/${e.totalSteps} done in ${formatDuration((now - this.stepStart) / 1000)}${e.step < e.totalSteps && left !== null ? `, run ETA ${formatDuration(left)}` : ''}`);
    this.stepStart = now;
    this.current = null;
    this.moved = false;
  }

  /** totalSteps: null until the trainer says (num_train_epochs runs). */
  grpoStarting(totalSteps: number | null, firstStep: number): void {
    this.inGrpo = true;
    this.totalSteps = totalSteps;
    this.nextStep = firstStep;
    this.stepStart = performance.now();
  }

  /** The run's progress within a step (RunOptions.onProgress). */
  onProgress(p: RunProgress): void {
    this.current = p;
    this.moved = true;
  }

  /** What the ticker runs: the current phase's line, if it moved (or the heartbeat is due). */
  tick(): void {
    if (!this.inGrpo || !this.current) return;
    const now = performance.now();
    if (!this.moved && now - this.lastLine < this.heartbeatMs) return;
    this.moved = false;
    const inStep = (now - this.stepStart) / 1000;
    const mean = this.grpoStepsDone > 0 ? (this.stepStart - this.grpoStart) / 1000 / this.grpoStepsDone : null;
    const typical = mean !== null ? `; steps take ~${formatDuration(mean)}` : '';
    this.line(`GRPO step ${this.nextStep}/${this.totalSteps ?? '?'}: ${describeProgress(this.current)} (${formatDuration(inStep)} into the step${typical})`);
  }

  private line(text: string): void {
    this.lastLine = performance.now();
    this.out.line(text);
  }
}
