// `npm run build:demo-model`: makes the app's built-in demo model with webgrpo's own pipeline, no
// download. The built-in tiny model (a random Qwen3 at toy size, byte tokenizer) is fine-tuned (SFT)
// on the scripted solvers' transcripts of catch (compact variant) and echo, then written in Hugging
// Face layout to models/demo/. The transcripts are deliberately imperfect — catch moves are partly
// random, echoes partly cut short — so the model speaks both tasks' tool-call format but plays them
// only partly right (catch rate ~0.1–0.3, echoes shorter than asked): the room GRPO visibly fills.
// Every random choice is seeded: the same command writes the same weights on the same adapter.
// Options: --out DIR (default models/demo), --sft-steps N, --eval-episodes N (default 64; 0 = skip).
// Faster on a CPU with Mesa's lavapipe: VK_ICD_FILENAMES=/opt/lavapipe/lvp_icd.json npm run build:demo-model

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEnvServer } from '../../env-server/server.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { writeSafetensors } from '../../src/model/safetensors.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { loadTokenizer } from '../../src/model/tokenizer.ts';
import { configFromObject } from '../../src/rl/config.ts';
import { DEMO_MODEL_FILES, DEMO_MODEL_OPTIONS, DEMO_RECIPE } from '../../src/model/demo-model.ts';
import { rolloutRewards } from '../../src/rl/grpo/rewards.ts';
import { runRollouts } from '../../src/rl/rollout/rollout.ts';
import { tokenizeTranscript, trainSft, type SftExample } from '../../src/rl/grpo/sft.ts';
import { compactCatchTranscripts, echoTranscripts } from '../../src/rl/tasks/solvers.ts';
import { bindTask, resolveTask, type RunTask } from '../../src/rl/tasks/resolve-task.ts';

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
  return n;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const outIndex = process.argv.indexOf('--out');
const out = outIndex >= 0 ? process.argv[outIndex + 1]! : join(ROOT, 'models', 'demo');
const sftSteps = flag('sft-steps', DEMO_RECIPE.sftSteps);
const evalEpisodes = flag('eval-episodes', 64);
const t0 = performance.now();
const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(0)}s`;

const tiny = await makeTinyModel(DEMO_MODEL_OPTIONS);
const text = (name: string) => new TextDecoder().decode(tiny.files.get(name)!);
const tokenizer = loadTokenizer(text('tokenizer.json'), text('tokenizer_config.json'));
const engine = await loadEngine(await openCheckpoint(tiny.files), { weightDtype: 'f32' });
const server = await createEnvServer({ port: 0 });
const urls = { catch: `${server.url}/envs/catch`, echo: `${server.url}/envs/echo` };
console.error(`build:demo-model — ${engine.gpu.adapterInfo.description || engine.gpu.adapterInfo.vendor || 'WebGPU'}, ${tiny.config.numLayers} layers, hidden ${tiny.config.hiddenSize}, writing ${out}`);

/** The demo model's task for `env` (catch plays as compact catch, as for every tiny model). */
async function demoTask(env: 'catch' | 'echo'): Promise<RunTask> {
  return bindTask(await resolveTask({ env, url: urls[env], tier: 'tiny' }), { tokenizer });
}

/** The mean catch rate and echo reward of the current weights, sampled as GRPO samples (temperature 1). */
async function measure(episodes: number): Promise<{ catchRate: number; echoReward: number; echoFull: number }> {
  const result = { catchRate: NaN, echoReward: NaN, echoFull: NaN };
  for (const env of ['catch', 'echo'] as const) {
    const task = await demoTask(env);
    task.episodes.reseed(DEMO_RECIPE.evalSeed);
    const config = configFromObject({ ...DEMO_RECIPE.rollout[env], seed: DEMO_RECIPE.evalSeed });
    const rows = Array.from({ length: episodes }, (_, i) => task.dataset[i % task.dataset.length]!);
    const rollouts = await runRollouts({ engine, tokenizer, rows, envFactory: task.envFactory, config, seed: DEMO_RECIPE.evalSeed, template: task.template });
    const R = await rolloutRewards(task.rewardFuncs, rollouts, { globalStep: 0 });
    const first = [...R[0]!].map((x) => (Number.isFinite(x) ? x : 0));
    if (env === 'catch') result.catchRate = first.filter((x) => x > 0).length / first.length;
    else {
      result.echoReward = first.reduce((a, b) => a + b, 0) / first.length;
      // the full quoted text is 1.2–1.9 reward; count echoes that reached at least 1.0
      result.echoFull = first.filter((x) => x >= 1).length / first.length;
    }
  }
  return result;
}

try {
  engine.setTrainable({ kind: 'full' });
  const catchRuns = await compactCatchTranscripts({ baseUrl: urls.catch, episodes: DEMO_RECIPE.catchEpisodes, seed: DEMO_RECIPE.seed, randomActions: DEMO_RECIPE.catchRandomActions });
  const echoRuns = await echoTranscripts({ baseUrl: urls.echo, episodes: DEMO_RECIPE.echoEpisodes, seed: DEMO_RECIPE.seed, partial: DEMO_RECIPE.echoPartial });
  const catchTask = await demoTask('catch');
  const echoTask = await demoTask('echo');
  const examples: SftExample[] = [
    ...catchRuns.map((t) => tokenizeTranscript(t, { tokenizer, template: catchTask.template, tools: catchTask.tools, chatTemplateKwargs: DEMO_RECIPE.rollout.catch.chat_template_kwargs })),
    ...echoRuns.map((t) => tokenizeTranscript(t, { tokenizer, template: echoTask.template, tools: echoTask.tools, chatTemplateKwargs: DEMO_RECIPE.rollout.echo.chat_template_kwargs })),
  ];
  console.error(`${elapsed()} ${catchRuns.length} catch + ${echoRuns.length} echo transcripts, ${examples.reduce((n, e) => n + e.ids.length, 0)} tokens`);
  let lastLoss = NaN;
  const phases = [
    { steps: sftSteps, learningRate: DEMO_RECIPE.sftLearningRate, seed: DEMO_RECIPE.seed },
    { steps: DEMO_RECIPE.sftAnnealSteps, learningRate: DEMO_RECIPE.sftAnnealLearningRate, seed: DEMO_RECIPE.seed + 1 },
  ];
  for (const phase of phases) {
    for await (const e of trainSft({
      engine,
      examples,
      ...phase,
      batchSize: DEMO_RECIPE.sftBatchSize,
      optimizer: { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 },
    })) {
      lastLoss = e.loss;
      if (e.step % 10 === 0 || e.step === e.totalSteps) console.error(`${elapsed()} sft (lr ${phase.learningRate}) ${e.step}/${e.totalSteps} loss ${e.loss.toFixed(3)}`);
    }
  }

  const state = await engine.saveState();
  const weights = state.tensors.filter((t) => !/\.(exp_avg|exp_avg_sq)$/.test(t.name));
  const expected = [...(await openCheckpoint(tiny.files)).tensors.keys()].sort();
  const got = weights.map((t) => t.name).sort();
  if (JSON.stringify(expected) !== JSON.stringify(got)) throw new Error(`the engine's full-mode state does not name the checkpoint's tensors:\n${got.join(', ')}\nvs\n${expected.join(', ')}`);

  const measured = evalEpisodes > 0 ? await measure(evalEpisodes) : null;
  if (measured) console.error(`${elapsed()} measured over ${evalEpisodes} sampled episodes each: catch rate ${measured.catchRate.toFixed(3)}, echo reward ${measured.echoReward.toFixed(3)} (full-length echoes ${measured.echoFull.toFixed(3)})`);

  await mkdir(out, { recursive: true });
  for (const name of DEMO_MODEL_FILES) {
    if (name === 'model.safetensors') {
      const bytes = writeSafetensors(
        weights.map((t) => ({ name: t.name, dtype: 'F32' as const, shape: t.shape, data: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength) })),
        { format: 'pt' },
      );
      await writeFile(join(out, name), bytes);
    } else if (name === 'recipe.json') {
      const recipe = { made_by: 'npm run build:demo-model (bench/demo/build-model.ts)', base: DEMO_MODEL_OPTIONS, ...DEMO_RECIPE, sftSteps, final_sft_loss: lastLoss, measured, eval_episodes: evalEpisodes };
      await writeFile(join(out, name), JSON.stringify(recipe, null, 2) + '\n');
    } else {
      await writeFile(join(out, name), tiny.files.get(name)!);
    }
  }
  console.error(`${elapsed()} wrote ${DEMO_MODEL_FILES.join(', ')} to ${out}`);
} finally {
  engine.destroy();
  await server.close();
}
