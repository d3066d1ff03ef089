// `npm run demo:catch`: a tiny generated Qwen3 learns catch end to end on this machine's WebGPU
// (SwiftShader without a GPU): scripted-solver transcripts → SFT warm-up → GRPO against the built-in
// catch env (compact observations), printing each step and, at the end, the reward curve.
// Options: --steps N (GRPO steps, default 30), --sft-steps N (default 70), --seed S (default 42), --out DIR.

import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEnvServer } from '../../env-server/server.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { loadTokenizer } from '../../src/model/tokenizer.ts';
import { configFromObject } from '../../src/rl/config.ts';
import { plannedWorkload, Run } from '../../src/rl/run.ts';
import { folderRunStates } from '../../src/rl/run-state.ts';
import { RunControl } from '../../src/rl/run-control.ts';
import { bindTask, builtinEnvUrls, resolveTask } from '../../src/rl/tasks/resolve-task.ts';
import { compactCatchTranscripts } from '../../src/rl/tasks/solvers.ts';

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
  return n;
}

/** One character per value, ▁ (0) to █ (1). */
function sparkline(values: number[]): string {
  const bars = '▁▂▃▄▅▆▇█';
  return values.map((v) => bars[Math.max(0, Math.min(bars.length - 1, Math.round(v * (bars.length - 1))))]).join('');
}

/** A small ASCII plot: one row per reward level (1.0 at the top), one column per step. */
function asciiPlot(values: number[], rows = 8): string {
  const lines: string[] = [];
  for (let r = rows; r >= 0; r--) {
    const level = r / rows;
    const cells = values.map((v) => (Math.abs(v - level) <= 0.5 / rows ? '●' : v > level ? '│' : ' ')).join('');
    lines.push(`${level.toFixed(2).padStart(5)} ┤${cells}`);
  }
  lines.push(`      └${'─'.repeat(values.length)} step`);
  return lines.join('\n');
}

const steps = flag('steps', 30);
const sftSteps = flag('sft-steps', 70);
const seed = flag('seed', 42);
const outIndex = process.argv.indexOf('--out');
const out = outIndex >= 0 ? process.argv[outIndex + 1]! : await mkdtemp(join(tmpdir(), 'webgrpo-demo-catch-'));

const files = await makeTinyCheckpointFiles({ seed: 0, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 });
const ckpt = await openCheckpoint(files);
const text = (name: string) => new TextDecoder().decode(files.get(name)!);
const tokenizer = loadTokenizer(text('tokenizer.json'), text('tokenizer_config.json'));
const config = configFromObject({
  train_mode: 'full',
  seed,
  sft_steps: sftSteps,
  sft_batch_size: 2,
  sft_learning_rate: 2e-2,
  max_steps: steps,
  num_generations: 8,
  per_device_train_batch_size: 16,
  temperature: 0.7,
  learning_rate: 5e-4,
  lr_scheduler_type: 'constant',
  max_completion_length: 400,
  save_steps: 10,
});
const plan = plannedWorkload(config);
const engine = await loadEngine(ckpt, { weightDtype: 'f32', plan });
const server = await createEnvServer({ port: 0 });
const catchUrl = `${server.url}/envs/catch`;
console.log(`demo:catch — tiny Qwen3 (${engine.gpu.software ? 'software WebGPU' : 'WebGPU'}), env ${catchUrl}, checkpoints in ${out}`);

try {
  const transcripts = await compactCatchTranscripts({ baseUrl: catchUrl, episodes: 48, seed });
  const catchRates: number[] = [];
  const task = bindTask(await resolveTask({ env: 'catch-compact' }), { builtinUrls: builtinEnvUrls(server.url), tokenizer });
  const run = new Run({ engine, tokenizer, config, task, sftTranscripts: async () => transcripts, store: folderRunStates(out), control: new RunControl() });
  for await (const e of run.events()) {
    if (e.phase === 'status') continue;
    if (e.phase === 'sft') {
      console.log(`sft  ${String(e.step).padStart(3)}/${e.totalSteps}  loss ${e.loss.toFixed(3)}`);
      continue;
    }
    // The total reward is caught (0/1) + progress (0..1); the curve shows the catch rate alone.
    const caught = e.metrics['rewards/caught/mean'] ?? 0;
    catchRates.push(caught);
    console.log(
      `grpo ${String(e.step).padStart(3)}/${e.totalSteps}  reward ${(e.metrics.reward ?? 0).toFixed(3)}  caught ${caught.toFixed(3)}  ${sparkline(catchRates)}  ` +
        `len ${e.metrics['completions/mean_length']!.toFixed(0)}  calls ${e.metrics['tools/call_frequency']!.toFixed(1)}  ${e.metrics.step_time!.toFixed(1)}s`,
    );
  }
  console.log(`\ncatch rate (rewards/caught/mean) per GRPO step:\n${asciiPlot(catchRates)}\n${sparkline(catchRates)}`);
} finally {
  engine.destroy();
  await server.close();
}
