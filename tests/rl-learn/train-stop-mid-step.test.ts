// A stop during a step's log-prob scoring or its backward (not only during its rollouts), GRPO's or the
// SFT warm-up's, ends the run within two layers (the one in flight and the one queued ahead of it): the
// run ends 'stopped' with the previous step's checkpoint, the cut step is not recorded, and no layer of
// the cut call is submitted after the stop. A resume plays the step again and reproduces the
// uninterrupted run's steps (same seed). A stop in a generation's later micro-batch, after one of its
// optimizer steps ran, keeps the rule that checkpoints sit on generation boundaries.
//
// The stop is asked for at the trainer's own progress report of the phase (RunSpec.onProgress; in the
// warm-up, which reports none, at the backward's first submit), and delivered on the event loop's next
// turn (setImmediate): the cut call has begun and its first layer is on the GPU, however fast the
// adapter — never after a fixed wait. "Within two layers" is asserted as submits: none of the cut call's
// after the stop (its times: tests/engine/train-stop.test.ts). Before the stop reached score and
// backward, such a stop waited for the whole call and the step finished.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import type { Engine } from '../../src/engine/types.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { loadTokenizer, type TextTokenizer } from '../../src/model/tokenizer.ts';
import { configFromObject } from '../../src/rl/config.ts';
import type { Metrics } from '../../src/rl/grpo/metrics.ts';
import { deserializeTrainerState } from '../../src/rl/grpo/trainer-state.ts';
import type { Transcript } from '../../src/rl/grpo/sft.ts';
import { Run, type RunEvent, type RunOutcome, type RunProgress } from '../../src/rl/run.ts';
import { RunControl } from '../../src/rl/run-control.ts';
import type { RunState } from '../../src/rl/run-state.ts';
import { bindTask, builtinEnvUrls, resolveTask, type RunTask } from '../../src/rl/tasks/resolve-task.ts';
import { compactCatchTranscripts } from '../../src/rl/tasks/solvers.ts';

// WebGPU on a CPU adapter: longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

// Two generations of two micro-batches, one optimizer step each (so old log-probs are scored), long
// completions (a tiny untrained model rarely stops early), a checkpoint on every generation boundary.
const CONFIG = {
  train_mode: 'lora',
  lora_r: 4,
  lora_alpha: 8,
  seed: 11,
  num_generations: 2,
  per_device_train_batch_size: 2,
  steps_per_generation: 2,
  max_steps: 4,
  max_completion_length: 120,
  learning_rate: 5e-3,
  save_steps: 2,
  logging_steps: 1,
  sft_steps: 0,
};

let server: EnvServer | null = null;
let engine: Engine | null = null;
let tokenizer: TextTokenizer;
let task: RunTask;

beforeAll(async () => {
  const files = await makeTinyCheckpointFiles({ seed: 3, hidden: 32, layers: 4, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 });
  const text = (name: string) => new TextDecoder().decode(files.get(name)!);
  tokenizer = loadTokenizer(text('tokenizer.json'), text('tokenizer_config.json'));
  // One engine for every run: the runs after a cut call also show it was left usable.
  engine = await loadEngine(await openCheckpoint(files), { weightDtype: 'f32' });
  server = await createEnvServer({ port: 0 });
  task = bindTask(await resolveTask({ env: 'catch-compact' }), { builtinUrls: builtinEnvUrls(server.url), tokenizer });
});
afterAll(async () => {
  engine?.destroy();
  await server?.close();
});

interface Played {
  outcome: RunOutcome;
  steps: { step: number; metrics: Metrics }[];
  /** The warm-up's steps (run step numbers). */
  sft: number[];
  saved: RunState[];
}

/**
 * Plays a run to its end; `onProgress` and `onEvent` may stop it through the control they are given.
 * `config` and `transcripts`: a run with a warm-up (CONFIG has none).
 */
async function play(opts: {
  resume?: RunState;
  config?: Record<string, unknown>;
  transcripts?: Transcript[];
  onProgress?: (p: RunProgress, control: RunControl) => void;
  onEvent?: (e: RunEvent, control: RunControl) => void;
} = {}): Promise<Played> {
  const control = new RunControl();
  const saved: RunState[] = [];
  const run = new Run({
    engine: engine!, tokenizer, config: configFromObject(opts.config ?? CONFIG), task, sftTranscripts: async () => opts.transcripts ?? [],
    store: { save: async (s) => (saved.push(s), `memory ${s.runStep}`) },
    control,
    ...(opts.resume ? { resume: opts.resume } : {}),
    ...(opts.onProgress ? { onProgress: (p: RunProgress) => opts.onProgress!(p, control) } : {}),
  });
  const steps: Played['steps'] = [];
  const sft: number[] = [];
  const events = run.events();
  for (;;) {
    const r = await events.next();
    if (r.done) return { outcome: r.value, steps, sft, saved };
    if (r.value.phase === 'grpo') steps.push({ step: r.value.step, metrics: r.value.metrics });
    if (r.value.phase === 'sft') sft.push(r.value.step);
    opts.onEvent?.(r.value, control);
  }
}

/**
 * The labels of the command encoders the engine's device creates (one per submit) while `body` runs;
 * `onSubmit` hears of each as it is created.
 */
async function watchSubmits<T>(body: (labels: string[]) => Promise<T>, onSubmit?: (label: string, labels: string[]) => void): Promise<T> {
  const device = engine!.gpu.device;
  const labels: string[] = [];
  const create = device.createCommandEncoder.bind(device);
  device.createCommandEncoder = (desc?: GPUCommandEncoderDescriptor) => {
    labels.push(desc?.label ?? '');
    onSubmit?.(desc?.label ?? '', labels);
    return create(desc);
  };
  try {
    return await body(labels);
  } finally {
    device.createCommandEncoder = create;
  }
}

/**
 * Stops the run on the next turn of the event loop after the `nth` progress report that `matches`
 * (1-based); returns the submits' labels from that report on, split at the stop.
 */
async function stopAt(matches: (p: RunProgress) => boolean, nth: number): Promise<Played & { sinceReport: string[]; afterStop: string[] }> {
  return watchSubmits(async (labels) => {
    let seen = 0;
    let reportedAt = -1;
    let stoppedAt = -1;
    const played = await play({
      onProgress: (p, control) => {
        if (!matches(p) || ++seen !== nth) return;
        reportedAt = labels.length;
        setImmediate(() => {
          stoppedAt = labels.length;
          control.stop();
        });
      },
    });
    expect(stoppedAt, 'the stop was asked for').toBeGreaterThanOrEqual(0);
    return { ...played, sinceReport: labels.slice(reportedAt, stoppedAt), afterStop: labels.slice(stoppedAt) };
  });
}

/** A step's metrics without its clock readings (step_time, tokens_per_second). */
function untimed(m: Metrics): Metrics {
  return Object.fromEntries(Object.entries(m).filter(([k]) => k !== 'step_time' && k !== 'tokens_per_second'));
}

const isBackward = (p: RunProgress) => p.phase === 'optimize' && p.stage === 'backward';
const isOldLogprobs = (p: RunProgress) => p.phase === 'logprobs' && p.of === 'old' && p.done === 0;
/** Submits of layer work: the backward's (train …) and the scoring's (score …). */
const layerWork = (labels: string[], prefix: string) => labels.filter((l) => l.startsWith(prefix));

describe('a stop in the middle of a step', () => {
  let whole: Played;
  beforeAll(async () => {
    whole = await play();
  });

  it('the uninterrupted run: 4 steps, checkpoints at the start and on both generation boundaries', () => {
    expect(whole.outcome).toBe('finished');
    expect(whole.steps.map((s) => s.step)).toEqual([1, 2, 3, 4]);
    expect(whole.saved.map((s) => s.runStep)).toEqual([0, 2, 4]);
  });

  /** The run resumed from the stopped run's last checkpoint plays steps 3 and 4 as the whole run did. */
  async function expectResumeReproduces(stopped: Played): Promise<void> {
    const resumed = await play({ resume: stopped.saved.at(-1)! });
    expect(resumed.outcome).toBe('finished');
    expect(resumed.steps.map((s) => s.step)).toEqual([3, 4]);
    resumed.steps.forEach((s, i) => expect(untimed(s.metrics), `step ${s.step}`).toEqual(untimed(whole.steps[2 + i]!.metrics)));
  }

  it('during the backward of a generation\'s first micro-batch: stopped within two layers, the step not recorded, the previous checkpoint; a resume replays it', async () => {
    // The third backward is step 3's: generation 2's first micro-batch.
    const stopped = await stopAt(isBackward, 3);
    expect(stopped.outcome).toBe('stopped');
    expect(stopped.steps.map((s) => s.step)).toEqual([1, 2]);
    // The checkpoint on the generation boundary (after step 2), saved again at the stop: weights of step 2.
    expect(stopped.saved.map((s) => s.runStep)).toEqual([0, 2, 2]);
    expect(deserializeTrainerState(stopped.saved.at(-1)!.files).counters.step).toBe(2);
    // The backward's first layer went to the GPU before the stop (its second queued ahead of it); nothing
    // of it after (no layer, no step).
    expect(layerWork(stopped.sinceReport, 'train ')).toEqual(['train forward + LM head backward part 1', 'train forward + LM head backward part 2']);
    expect(layerWork(stopped.afterStop, 'train ')).toEqual([]);
    await expectResumeReproduces(stopped);
  });

  it('during the old log-prob scoring: stopped within two layers, the generation dropped, the previous checkpoint; a resume replays it', async () => {
    // The second generation's old log-prob pass (before step 3).
    const stopped = await stopAt(isOldLogprobs, 2);
    expect(stopped.outcome).toBe('stopped');
    expect(stopped.steps.map((s) => s.step)).toEqual([1, 2]);
    expect(stopped.saved.map((s) => s.runStep)).toEqual([0, 2, 2]);
    expect(layerWork(stopped.sinceReport, 'score')).toEqual(['score part 1', 'score part 2']);
    expect(layerWork(stopped.afterStop, 'score')).toEqual([]);
    expect(layerWork(stopped.afterStop, 'train ')).toEqual([]);
    await expectResumeReproduces(stopped);
  });

  it('during a later micro-batch\'s backward, after the generation\'s first optimizer step: no checkpoint inside the generation', async () => {
    // The fourth backward is step 4's, after step 3's optimizer step: the weights hold step 3, which no
    // checkpoint on a generation boundary has, so the last checkpoint stays the one after step 2.
    const stopped = await stopAt(isBackward, 4);
    expect(stopped.outcome).toBe('stopped');
    expect(stopped.steps.map((s) => s.step)).toEqual([1, 2, 3]);
    expect(stopped.saved.map((s) => s.runStep)).toEqual([0, 2]);
    expect(layerWork(stopped.afterStop, 'train ')).toEqual([]);
    // Step 3 is played again on resume, with the numbers it had.
    expect(untimed(stopped.steps[2]!.metrics)).toEqual(untimed(whole.steps[2]!.metrics));
    await expectResumeReproduces(stopped);
  });
});

describe('a stop in the middle of a warm-up step', () => {
  it('cuts the SFT backward within two layers: the warm-up step not taken, the checkpoint after the last one; a resume finishes the warm-up and trains', async () => {
    const transcripts = await compactCatchTranscripts({ baseUrl: `${server!.url}/envs/catch`, episodes: 8, seed: 11 });
    const config = { ...CONFIG, sft_steps: 3, sft_batch_size: 4, max_steps: 2 };
    // Armed once the first warm-up step is out: the stop comes on the next turn of the event loop after
    // the second step's backward submitted its first layer (no fixed wait).
    let armed: RunControl | null = null;
    let stoppedAt = -1;
    const { played, labels } = await watchSubmits(
      async (labels) => ({ labels, played: await play({ config, transcripts, onEvent: (e, control) => { if (e.phase === 'sft' && e.step === 1) armed = control; } }) }),
      (label, labels) => {
        const control = armed;
        if (!control || !label.startsWith('train ')) return;
        armed = null;
        setImmediate(() => {
          stoppedAt = labels.length;
          control.stop();
        });
      },
    );
    expect(stoppedAt, 'the stop was asked for').toBeGreaterThanOrEqual(0);
    expect(played.outcome).toBe('stopped');
    expect(played.sft).toEqual([1]);
    expect(played.steps).toEqual([]);
    // Nothing of the cut backward went to the GPU after the stop, and no optimizer step ran.
    expect(layerWork(labels.slice(stoppedAt), 'train ')).toEqual([]);
    // The checkpoint is the state after the one warm-up step taken.
    expect(played.saved.map((s) => [s.runStep, s.sftStepsDone])).toEqual([[1, 1]]);
    const resumed = await play({ config, transcripts, resume: played.saved.at(-1)! });
    expect(resumed.outcome).toBe('finished');
    expect(resumed.sft).toEqual([2, 3]);
    expect(resumed.steps.map((s) => s.step)).toEqual([4, 5]);
  });
});
