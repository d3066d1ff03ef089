// `webgrpo bench rollouts`: one generation batch of multi-turn episodes (compact catch, or browsergym's
// web tasks) played by each rollout scheduler on the same model in one run, against the env behind a
// latency-injecting relay (latency-relay.ts: 100–400 ms per reply, 1 in 20 by 2 s). Reports per
// scheduler: episodes/s, env steps, the GPU-busy fraction (time inside engine.generate / wall time),
// the decode batch-size histogram, and whether both schedulers sampled the same tokens.
//
// Options (strings, from `webgrpo bench rollouts --KEY VALUE`; checked in options.ts):
//   task         catch|browsergym (default catch): the compact catch task on /envs/catch, or the
//                browsergym task (TRL's tools and prompt) on /envs/browsergym
//   tasks        browsergym only: the MiniWoB task mix, `mix` (default) or a comma list
//   env          base URL of an env serving the task (default: an in-process env-server)
//   episodes     episodes per batch (default 16)
//   scheduler    lockstep|continuous|both (default both)
//   latency      on|off (default on); latency-seed (default 1)
//   model        checkpoint folder/repo; default: the tiny generated Qwen3 of the learning test after an
//                SFT warm-up on the task's scripted transcripts (so that it plays multi-turn episodes)
//   sft-steps    warm-up steps for the generated model (default 70 catch, 200 browsergym); sft-lr its
//                learning rate (2e-2)
//   seed         sampling and game seed (default 42)
//   max-batch    decode slots of both schedulers, the memory plan's sequence count (default: episodes):
//                lockstep plays waves of this many episodes, continuous refills a slot when its episode ends

import { createBrowserGymEnv } from '../../env-server/envs/browsergym/index.ts';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { adapterName } from '../../src/engine/gpu.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { loadCheckpointTokenizer, loadTokenizer, type TextTokenizer } from '../../src/model/tokenizer.ts';
import type { Checkpoint } from '../../src/model/types.ts';
import { envToolSchemas } from '../../src/rl/rollout/env.ts';
import { emptyRolloutStats, type RolloutStats } from '../../src/rl/rollout/episode.ts';
import { runRollouts, type Rollout, type RolloutSchedulerName } from '../../src/rl/rollout/rollout.ts';
import { rolloutChatTemplate } from '../../src/rl/rollout/templates/select.ts';
import { trainSft, tokenizeTranscript } from '../../src/rl/grpo/sft.ts';
import { seededEpisodes } from '../../src/rl/tasks/solvers.ts';
import { DEFAULT_LATENCY, startLatencyRelay, type LatencyRelay } from './latency-relay.ts';
import { parseBenchRolloutsOptions, type BenchTask } from './options.ts';

function histogram(sizes: number[]): Record<string, number> {
  const h: Record<string, number> = {};
  for (const s of [...sizes].sort((a, b) => a - b)) h[s] = (h[s] ?? 0) + 1;
  return h;
}

function report(scheduler: RolloutSchedulerName, rollouts: Rollout[], stats: RolloutStats) {
  const wallS = stats.wallMs / 1000;
  const turns = rollouts.map((r) => r.completion.filter((m) => m.role === 'assistant').length);
  const sequencesDecoded = stats.decodeBatchSizes.reduce((a, b) => a + b, 0);
  return {
    scheduler,
    episodes: rollouts.length,
    wall_s: Number(wallS.toFixed(3)),
    episodes_per_s: Number((rollouts.length / wallS).toFixed(3)),
    env_steps: stats.envSteps,
    gpu_busy_fraction: Number((stats.generateMs / stats.wallMs).toFixed(3)),
    decode_steps: stats.decodeBatchSizes.length,
    decode_batch_histogram: histogram(stats.decodeBatchSizes),
    // The decode cost model the simulation (simulate.ts) takes: GPU ms per step at this mean batch.
    generate_ms_per_decode_step: Number((stats.generateMs / Math.max(1, stats.decodeBatchSizes.length)).toFixed(2)),
    mean_decode_batch: Number((sequencesDecoded / Math.max(1, stats.decodeBatchSizes.length)).toFixed(2)),
    mean_turns: Number((turns.reduce((a, b) => a + b, 0) / rollouts.length).toFixed(2)),
    turns_histogram: histogram(turns),
    turns_per_episode: turns,
    // `bench rollouts-bound --tokens-per-turn`: sampled (not tool-suffix) tokens per model turn.
    sampled_tokens_per_turn: Number((rollouts.reduce((a, r) => a + r.toolMask.reduce((x, m) => x + m, 0), 0) / Math.max(1, turns.reduce((a, b) => a + b, 0))).toFixed(1)),
    tool_calls: rollouts.reduce((a, r) => a + r.toolCalls, 0),
    tool_failures: rollouts.reduce((a, r) => a + r.toolFailures, 0),
    unscorable: rollouts.filter((r) => r.error).length,
    // What the model does: the first episode's messages after the prompt, each cut to 160 characters.
    first_episode: rollouts[0]?.completion.map((m) => `${m.role}: ${JSON.stringify(m.role === 'assistant' && m.tool_calls ? m.tool_calls : m.content).slice(0, 160)}`),
  };
}

/** The generated tiny model of the learning test (warmed up by the caller). */
async function generatedModel(task: BenchTask, sftSteps: number, lr: number): Promise<{ ckpt: Checkpoint; tokenizer: TextTokenizer; source: string; warm: boolean }> {
  const files = await makeTinyCheckpointFiles({ seed: 0, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 });
  const text = (name: string) => new TextDecoder().decode(files.get(name)!);
  return {
    ckpt: await openCheckpoint(files),
    tokenizer: loadTokenizer(text('tokenizer.json'), text('tokenizer_config.json')),
    source: `generated tiny Qwen3 + ${sftSteps} SFT steps (lr ${lr}) on ${WARMUP_EPISODES} scripted ${task.name} transcripts`,
    warm: sftSteps > 0,
  };
}

/** Scripted episodes the warm-up trains on (the learning test's 48). */
const WARMUP_EPISODES = 48;

export async function benchRollouts(raw: Record<string, string> = {}) {
  const opts = parseBenchRolloutsOptions(raw);
  const { task: bench, episodes, seed, maxBatch } = opts;
  const task = await bench.task();
  const chatTemplateKwargs = (task.config.chat_template_kwargs ?? null) as Record<string, unknown> | null;
  let server: EnvServer | null = null;
  let relay: LatencyRelay | null = null;
  try {
    let envUrl = opts.env;
    if (!envUrl) {
      // An episode holds an env session from its reset (when it gets a decode slot) to its end, so about
      // --max-batch are open at once; the caps, the server's and browsergym's own (a browser context per
      // session), leave room for every episode anyway, so that a session still closing never refuses a
      // reset and skews one scheduler. Element actions get 10 s instead of BrowserGym's 500 ms: on a
      // busy machine a timed-out click would be an env error one scheduler sees and the other not.
      const envs = bench.env === 'browsergym'
        ? { browsergym: createBrowserGymEnv({ maxConcurrentEnvs: Math.max(8, episodes), actionTimeoutMs: 10_000, axtree: 'classic' }) }
        : undefined;
      server = await createEnvServer({ port: 0, maxConcurrentEnvs: Math.max(64, episodes), ...(envs ? { envs } : {}) });
      envUrl = `${server.url}/envs/${bench.env}`;
    }
    const model = opts.model
      ? await (async () => {
        const ckpt = await openCheckpoint(opts.model!);
        return { ckpt, tokenizer: await loadCheckpointTokenizer(ckpt, `bench rollouts: ${opts.model}`), source: opts.model!, warm: false };
      })()
      : await generatedModel(bench, opts.sftSteps, opts.sftLearningRate);
    const { tokenizer } = model;
    // The plan is checked for the decode slots, not the episodes: a larger batch plays through them.
    const engine = await loadEngine(model.ckpt, { weightDtype: 'f32', plan: { numSequences: maxBatch, maxTokensPerSequence: bench.maxTokensPerSequence } });
    try {
      const open = seededEpisodes(seed);
      let warmup: { transcripts: number; mean_tokens: number; final_loss: number | null } | null = null;
      if (model.warm) {
        // Untimed: teach the random model the tool-call format so its episodes are multi-turn.
        engine.setTrainable({ kind: 'full' });
        const transcripts = await bench.transcripts(envUrl, WARMUP_EPISODES, seed);
        const tools = envToolSchemas(task.envFactory({ [bench.env]: envUrl }, open)());
        const template = task.template ?? rolloutChatTemplate(tokenizer, { hasTools: tools.length > 0 });
        const examples = transcripts.map((t) => tokenizeTranscript(t, { tokenizer, template, tools, chatTemplateKwargs }));
        const optimizer = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 };
        let loss: number | null = null;
        for await (const e of trainSft({ engine, examples, steps: opts.sftSteps, batchSize: 2, learningRate: opts.sftLearningRate, seed, optimizer })) loss = e.loss;
        warmup = { transcripts: examples.length, mean_tokens: Math.round(examples.reduce((a, e) => a + e.ids.length, 0) / Math.max(1, examples.length)), final_loss: loss === null ? null : Number(loss.toFixed(3)) };
      }
      const latency = opts.latency ? { ...DEFAULT_LATENCY, seed: opts.latencySeed } : null;
      relay = latency ? await startLatencyRelay(envUrl, latency) : null;
      const envFactory = task.envFactory({ [bench.env]: relay?.url ?? envUrl }, open);
      const rows = task.dataset(episodes);
      const config = { max_completion_length: bench.maxCompletionLength, temperature: 0.7, top_p: 1, top_k: 0, chat_template_kwargs: chatTemplateKwargs };
      const results = [];
      const tokens: number[][][] = [];
      for (const scheduler of opts.schedulers) {
        open.reseed(seed); // the same games for every scheduler
        const stats = emptyRolloutStats();
        const rollouts = await runRollouts({
          engine, tokenizer, rows, envFactory, seed, template: task.template, stats,
          config: { ...config, rollout_scheduler: scheduler }, maxBatchSize: maxBatch,
        });
        results.push(report(scheduler, rollouts, stats));
        tokens.push(rollouts.map((r) => r.completionIds));
      }
      const byName = Object.fromEntries(results.map((r) => [r.scheduler, r]));
      return {
        task: bench.name,
        model: model.source,
        ...(warmup ? { warmup } : {}),
        adapter: adapterName(engine.gpu.adapterInfo),
        env: envUrl,
        latency: latency ?? 'off',
        max_batch: maxBatch,
        schedulers: results,
        ...(byName.lockstep && byName.continuous
          ? {
            speedup_episodes_per_s: Number((byName.continuous.episodes_per_s / byName.lockstep.episodes_per_s).toFixed(2)),
            tokens_identical: JSON.stringify(tokens[0]) === JSON.stringify(tokens[1]),
          }
          : {}),
      };
    } finally {
      engine.destroy();
    }
  } finally {
    await relay?.close();
    await server?.close();
  }
}
