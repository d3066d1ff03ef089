// `webgrpo bench rollouts`: one generation batch of multi-turn catch episodes played by each rollout
// scheduler on the same model in one run, against the catch env behind a latency-injecting relay
// (latency-relay.ts: 100–400 ms per reply, 1 in 20 by 2 s). Reports per scheduler: episodes/s, env
// steps, the GPU-busy fraction (time inside engine.generate / wall time), the decode batch-size
// histogram, and whether both schedulers sampled the same tokens.
//
// Options (strings, from `webgrpo bench rollouts --KEY VALUE`):
//   env          base URL of a catch env (default: an in-process env-server's /envs/catch)
//   episodes     episodes per batch (default 16)
//   scheduler    lockstep|continuous|both (default both)
//   latency      on|off (default on); latency-seed (default 1)
//   model        checkpoint folder/repo; default: the tiny generated Qwen3 of the learning test after an
//                SFT warm-up on scripted catch transcripts (so that it plays multi-turn episodes)
//   sft-steps    warm-up steps for the generated model (default 70)
//   seed         sampling and game seed (default 42)
//   max-batch    continuous scheduler's decode batch cap (default: episodes)

import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { loadCheckpointTokenizer, loadTokenizer, type TextTokenizer } from '../../src/model/tokenizer.ts';
import type { Checkpoint } from '../../src/model/types.ts';
import { COMPACT_CATCH_TASK } from '../../src/rl/tasks/compact-catch.ts';
import { envToolSchemas } from '../../src/rl/rollout/env.ts';
import { emptyRolloutStats, type RolloutStats } from '../../src/rl/rollout/episode.ts';
import { runRollouts, type Rollout, type RolloutScheduler } from '../../src/rl/rollout/rollout.ts';
import { trainSft, tokenizeTranscript } from '../../src/rl/grpo/sft.ts';
import { compactCatchTranscripts, seededEpisodes } from '../../src/rl/tasks/solvers.ts';
import { DEFAULT_LATENCY, startLatencyRelay, type LatencyRelay } from './latency-relay.ts';

function int(opts: Record<string, string>, key: string, dflt: number): number {
  if (opts[key] === undefined) return dflt;
  const v = Number(opts[key]);
  if (!Number.isInteger(v) || v < 0) throw new Error(`bench rollouts: --${key} must be a non-negative integer, got '${opts[key]}'`);
  return v;
}

function histogram(sizes: number[]): Record<string, number> {
  const h: Record<string, number> = {};
  for (const s of [...sizes].sort((a, b) => a - b)) h[s] = (h[s] ?? 0) + 1;
  return h;
}

function report(scheduler: RolloutScheduler, rollouts: Rollout[], stats: RolloutStats) {
  const wallS = stats.wallMs / 1000;
  return {
    scheduler,
    episodes: rollouts.length,
    wall_s: Number(wallS.toFixed(3)),
    episodes_per_s: Number((rollouts.length / wallS).toFixed(3)),
    env_steps: stats.envSteps,
    gpu_busy_fraction: Number((stats.generateMs / stats.wallMs).toFixed(3)),
    decode_steps: stats.decodeBatchSizes.length,
    decode_batch_histogram: histogram(stats.decodeBatchSizes),
    mean_turns: Number((rollouts.reduce((n, r) => n + r.completion.filter((m) => m.role === 'assistant').length, 0) / rollouts.length).toFixed(2)),
    unscorable: rollouts.filter((r) => r.error).length,
  };
}

/** The generated tiny model of the learning test, warmed up on scripted catch transcripts. */
async function generatedModel(sftSteps: number): Promise<{ ckpt: Checkpoint; tokenizer: TextTokenizer; source: string; warm: boolean }> {
  const files = await makeTinyCheckpointFiles({ seed: 0, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 });
  const text = (name: string) => new TextDecoder().decode(files.get(name)!);
  return { ckpt: await openCheckpoint(files), tokenizer: loadTokenizer(text('tokenizer.json'), text('tokenizer_config.json')), source: `generated tiny Qwen3 + ${sftSteps} SFT steps on catch transcripts`, warm: sftSteps > 0 };
}

export async function benchRollouts(opts: Record<string, string> = {}) {
  const episodes = int(opts, 'episodes', 16);
  const seed = int(opts, 'seed', 42);
  const sftSteps = int(opts, 'sft-steps', 70);
  const which = opts.scheduler ?? 'both';
  if (!['lockstep', 'continuous', 'both'].includes(which)) throw new Error(`bench rollouts: --scheduler must be lockstep, continuous or both, got '${which}'`);
  const schedulers: RolloutScheduler[] = which === 'both' ? ['lockstep', 'continuous'] : [which as RolloutScheduler];
  const latency = (opts.latency ?? 'on') === 'on';
  let server: EnvServer | null = null;
  let relay: LatencyRelay | null = null;
  try {
    let envUrl = opts.env;
    if (!envUrl) {
      server = await createEnvServer({ port: 0 });
      envUrl = `${server.url}/envs/catch`;
    }
    const model = opts.model
      ? await (async () => {
        const ckpt = await openCheckpoint(opts.model!);
        return { ckpt, tokenizer: await loadCheckpointTokenizer(ckpt, `bench rollouts: ${opts.model}`), source: opts.model!, warm: false };
      })()
      : await generatedModel(sftSteps);
    const { tokenizer } = model;
    const engine = await loadEngine(model.ckpt, { weightDtype: 'f32', plan: { numSequences: episodes, maxTokensPerSequence: 512 } });
    try {
      const task = COMPACT_CATCH_TASK;
      const open = seededEpisodes(seed);
      if (model.warm) {
        // Untimed: teach the random model the tool-call format so its episodes are multi-turn.
        engine.setTrainable({ kind: 'full' });
        const transcripts = await compactCatchTranscripts({ baseUrl: envUrl, episodes: 48, seed });
        const tools = envToolSchemas(task.envFactory({ catch: envUrl }, open)());
        const examples = transcripts.map((t) => tokenizeTranscript(t, { tokenizer, template: task.template!, tools, chatTemplateKwargs: null }));
        const optimizer = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 };
        for await (const e of trainSft({ engine, examples, steps: sftSteps, batchSize: 2, learningRate: 2e-2, seed, optimizer })) void e;
      }
      relay = latency ? await startLatencyRelay(envUrl, { ...DEFAULT_LATENCY, seed: int(opts, 'latency-seed', 1) }) : null;
      const envFactory = task.envFactory({ catch: relay?.url ?? envUrl }, open);
      const rows = task.dataset(episodes);
      const config = { max_completion_length: 400, temperature: 0.7, top_p: 1, top_k: 0, chat_template_kwargs: null };
      const results = [];
      const tokens: number[][][] = [];
      for (const scheduler of schedulers) {
        open.reseed(seed); // the same games for every scheduler
        const stats = emptyRolloutStats();
        const rollouts = await runRollouts({
          engine, tokenizer, rows, envFactory, seed, template: task.template, stats,
          config: { ...config, rollout_scheduler: scheduler }, maxBatchSize: int(opts, 'max-batch', episodes),
        });
        results.push(report(scheduler, rollouts, stats));
        tokens.push(rollouts.map((r) => r.completionIds));
      }
      const byName = Object.fromEntries(results.map((r) => [r.scheduler, r]));
      return {
        model: model.source,
        adapter: engine.gpu.software ? 'software' : 'hardware',
        env: envUrl,
        latency: latency ? { ...DEFAULT_LATENCY, seed: int(opts, 'latency-seed', 1) } : 'off',
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
