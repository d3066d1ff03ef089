// Decode-loop benchmark (`webgrpo bench decode`): what one generated token costs the host, measured
// through the rollout schedulers themselves (rollout-lockstep.ts and rollout-continuous.ts) driving
// single-turn episodes without tools on the real engine. A wrapped device (gpu-counter.ts) counts
// awaited host↔GPU round trips per generated token, buffers created per decode step after the first,
// and host ms per decode step (from the GPU's last reply to the step's submit: result handling,
// scheduling, encoding and the submit itself). The default model is a random Qwen3 at Qwen3-0.6B
// shapes; both schedulers must produce the same tokens (each episode samples from its own stream).
//
// Options (strings, from `webgrpo bench decode --KEY VALUE`):
//   model | shape qwen3-0.6b|qwen3.5-0.8b|qwen3.5-2b (default qwen3-0.6b) | hidden, layers, … (override the shape's fields)
//   batch     sequences decoded together (default 4)
//   prompt    prompt tokens per sequence (default 8)
//   newTokens decoded tokens per sequence (default 8)
//   weights   auto|f16|f32 (default auto)

import { getGpu, adapterName } from '../../src/engine/gpu.ts';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import { runContinuous } from '../../src/rl/rollout/rollout-continuous.ts';
import { runLockstep } from '../../src/rl/rollout/rollout-lockstep.ts';
import { emptyRolloutStats, type Episode, type EpisodeDriver, type Rollout, type TurnRequest } from '../../src/rl/rollout/episode.ts';
import { RolloutCounter } from '../../src/rl/rollout/progress.ts';
import { benchCheckpoint, num } from './common.ts';
import { countGpu, type GpuCounter } from './gpu-counter.ts';

type Scheduler = 'lockstep' | 'continuous';

/**
 * B single-turn episodes of `newTokens` sampled tokens each, no stop ids, no tools. `joinAfter(i)`:
 * episode i's reset answers once that many decode steps ran (default 0: all start together), so the
 * continuous scheduler's batch grows between steps.
 */
export async function playEpisodes(engine: WebGpuEngine, scheduler: Scheduler, B: number, prompt: number, newTokens: number, counter: GpuCounter,
  joinAfter: (index: number) => number = () => 0) {
  const V = engine.config.vocabSize;
  const outputs: number[][] = Array.from({ length: B }, () => []);
  let steps = 0;
  /** Resets that answer once `after` decode steps ran. */
  const waiting: { after: number; resolve: () => void }[] = [];
  const episodes = Array.from({ length: B }, (_, index): Episode => ({
    index, rollout: {} as Rollout, tools: [], pendingCalls: [], iterations: 0, deadline: Infinity, failedCalls: new Map(), lastTurn: [0, 0],
  }));
  const driver: EpisodeDriver = {
    engine,
    sampling: { temperature: 1, topP: 1, topK: 0, seed: 7 },
    stopIds: [],
    maxIterations: 1,
    firstTurn: async (episode): Promise<TurnRequest> => {
      const after = joinAfter(episode.index);
      if (steps < after) await new Promise<void>((resolve) => waiting.push({ after, resolve }));
      return { episode, first: true, maxNewTokens: newTokens, append: Array.from({ length: prompt }, (_, i) => (i * 31 + episode.index * 17 + 3) % V) };
    },
    fold: (request, out) => outputs[request.episode.index]!.push(...out.tokens),
    toolTurn: async () => null,
    timeOut: () => undefined,
    releaseSequence: (episode) => episode.seq && engine.releaseSequence(episode.seq),
    endEpisode: async (episode) => driver.releaseSequence(episode),
    // No env server: no session limit, nothing waits for a session.
    sessionLimit: () => Infinity,
    waitingForSession: () => false,
    sessionChange: () => new Promise<void>(() => undefined),
    stats: emptyRolloutStats(),
    progress: new RolloutCounter(B, () => undefined),
  };
  const decodeStep = driver.progress.decodeStep.bind(driver.progress);
  driver.progress.decodeStep = (n) => {
    steps++;
    decodeStep(n);
    for (const w of waiting.filter((x) => x.after <= steps)) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve();
    }
  };
  counter.reset();
  if (scheduler === 'lockstep') await runLockstep(episodes, driver, { maxBatchSize: B });
  else await runContinuous(episodes, driver, { maxBatchSize: B, batchWindowMs: 0 });
  const c = counter.counts;
  const tokens = outputs.reduce((n, o) => n + o.length, 0);
  // The first submit of the run prefills the prompts, under both schedulers.
  const firstDecodeSubmit = 1;
  const afterFirst = c.buffersCreated - c.buffersAtSubmit[firstDecodeSubmit]!;
  return {
    scheduler,
    B,
    steps,
    tokens,
    submits: c.submits,
    roundTripsPerToken: c.roundTrips / tokens,
    buffersCreatedPerStepAfterFirst: afterFirst / (steps - 1),
    roundTripsPerStep: c.roundTrips / steps,
    // Host time of every decode submit (a chain of steps is one), per step.
    hostMsPerStep: c.hostMsBeforeSubmit.slice(firstDecodeSubmit).reduce((a, b) => a + b, 0) / steps,
    batchSizes: driver.stats.decodeBatchSizes,
    outputs,
  };
}

export async function benchDecodeLoop(opts: Record<string, string> = {}) {
  const B = num(opts, 'batch', 4);
  const prompt = num(opts, 'prompt', 8);
  const newTokens = num(opts, 'newTokens', 8);
  if (newTokens < 3) throw new Error('bench decode: --newTokens must be ≥ 3 (steps after the first are measured)');
  const gpu = await getGpu();
  const counter = countGpu(gpu.device);
  const { ckpt, source } = await benchCheckpoint(opts.model ? opts : { shape: 'qwen3-0.6b', ...opts }, 'bf16');
  const engine = await loadEngine(ckpt, { gpu, weightDtype: (opts.weights ?? 'auto') as 'auto' | 'f16' | 'f32', plan: { numSequences: B, maxTokensPerSequence: prompt + newTokens } });
  try {
    await playEpisodes(engine, 'lockstep', 1, 4, 3, counter); // compiles every pipeline once
    // …and one run of the measured size grows what grows once: the per-sequence pools (Qwen3.5's
    // linear-state slots and snapshots double when more sequences generate at once) and each chained
    // step's own scratch buffers, so the measured runs see only per-step work.
    await playEpisodes(engine, 'lockstep', B, prompt, newTokens, counter);
    const runs: Awaited<ReturnType<typeof playEpisodes>>[] = [];
    for (const scheduler of ['lockstep', 'continuous'] as const) {
      for (const b of [1, B]) runs.push(await playEpisodes(engine, scheduler, b, prompt, newTokens, counter));
    }
    const sameTokens = [1, B].every((b) => {
      const [l, c] = runs.filter((r) => r.B === b);
      return JSON.stringify(l!.outputs) === JSON.stringify(c!.outputs);
    });
    if (!sameTokens) throw new Error('bench decode: the lockstep and continuous schedulers sampled different tokens');
    return {
      adapter: adapterName(gpu.adapterInfo),
      software: gpu.software,
      model: source,
      weightDtype: engine.weightDtype,
      prompt,
      newTokens,
      sameTokens,
      dispatchesPerDecodeStep: engine.stats.dispatchesPerDecodeStep,
      runs: runs.map(({ outputs: _, ...r }) => r),
    };
  } finally {
    counter.restore();
    engine.destroy();
    gpu.device.destroy();
  }
}
