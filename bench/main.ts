// `webgrpo bench [env-server|engine|train|rollouts|all]`: runs the benchmarks in bench/ and prints one JSON
// object per benchmark. With `--out DIR` each result is also written to DIR/<name>.json; the numbers
// in BENCHMARKS.md come from these files (with the machine and adapter they name). The benchmarks'
// own entry: src/cli/main.ts loads this file by path, so the production CLI imports no bench code.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseCli, str, type OptionTable } from '../src/cli/args.ts';
import { ADAPTER_HELP, announceAdapter } from '../src/cli/adapter-line.ts';

/** A benchmark over its options as split once here (parseCli): flag → text, a bare boolean flag → 'true'. */
type Bench = (opts: Record<string, string>) => Promise<unknown>;

/** The engine benches' model options (bench/engine/common.ts benchCheckpoint): a folder, a named shape, or a generated shape. */
const MODEL_OPTIONS = ['model', 'shape', 'arch', 'hidden', 'layers', 'heads', 'kvHeads', 'headDim', 'intermediate', 'vocab',
  'linearKeyHeads', 'linearValueHeads', 'linearKeyHeadDim', 'linearValueHeadDim', 'fullAttentionInterval'];
const stringOptions = (keys: string[]): OptionTable => Object.fromEntries(keys.map((k) => [k, { type: 'string' as const }]));

/** `gpu`: the bench runs on Node's WebGPU adapter (named on the first stderr line); peer's runs in Chromium. */
const BENCHES: Record<string, { load: () => Promise<Bench>; help: string; options: OptionTable; gpu?: true }> = {
  'env-server': {
    load: async () => {
      const { benchEnvServer, parseBenchEnvServerOptions } = await import('./env-server/run.ts');
      return (opts) => benchEnvServer(parseBenchEnvServerOptions(opts));
    },
    help: 'N concurrent sessions × M echo steps on loopback: steps/s, p50/p99 latency, leaks',
    options: { sessions: { type: 'string' }, steps: { type: 'string' }, cap: { type: 'string' }, env: { type: 'string' }, queue: { type: 'boolean' }, 'no-queue': { type: 'boolean' } },
  },
  browsergym: {
    load: async () => {
      const { benchBrowserGym, parseBenchBrowserGymOptions } = await import('./env-server/browsergym.ts');
      const { benchBrowserGymTasks, parseBenchBrowserGymTasksArgs } = await import('./env-server/browsergym-tasks.ts');
      return ({ 'per-task': perTask, ...opts }) =>
        perTask === 'true' ? benchBrowserGymTasks(parseBenchBrowserGymTasksArgs(opts)) : benchBrowserGym(parseBenchBrowserGymOptions(opts));
    },
    help: 'browsergym sessions at the cap: resets/s, steps/s, p50/p99, Chromium RSS per session, leaked contexts; --per-task [--tasks a,b] [--miniwob DIR|URL] [--rounds N]: per task at 1 and 8 sessions, reset/step p50/p99 and reply bytes',
    options: { sessions: { type: 'string' }, cap: { type: 'string' }, steps: { type: 'string' }, 'per-task': { type: 'boolean' }, tasks: { type: 'string' }, miniwob: { type: 'string' }, rounds: { type: 'string' } },
  },
  'browsergym-load': {
    load: async () => {
      const { benchBrowserGymLoad, parseBenchBrowserGymLoadArgs } = await import('./env-server/browsergym-load.ts');
      return (opts) => benchBrowserGymLoad(parseBenchBrowserGymLoadArgs(opts));
    },
    help: 'N sessions at once each win click-test with the right bid next to a training job (or CPU hogs): wins x/N per round, reset/click p50/p99, clean error text',
    options: { sessions: { type: 'string' }, rounds: { type: 'string' }, miniwob: { type: 'string' }, load: { type: 'string' } },
  },
  engine: {
    load: async () => (await import('./engine/forward.ts')).benchEngineForward as Bench,
    gpu: true,
    help: 'prefill/decode tokens/s for B=1 and B=8, dispatches per decode step, best matmul GFLOP/s',
    options: stringOptions([...MODEL_OPTIONS, 'matmulSize', 'weights', 'matmul', 'attention', 'halfLoads', 'prompt', 'newTokens', 'rounds']),
  },
  decode: {
    load: async () => (await import('./engine/decode-loop.ts')).benchDecodeLoop as Bench,
    gpu: true,
    help: 'the decode loop through both rollout schedulers: awaited host↔GPU round trips per token, buffers created per step, host ms per step (Qwen3-0.6B shapes)',
    options: stringOptions([...MODEL_OPTIONS, 'batch', 'prompt', 'newTokens', 'weights']),
  },
  'half-loads': {
    load: async () => (await import('./engine/half-loads.ts')).benchHalfLoads as Bench,
    gpu: true,
    help: 'f16 weights read natively (array<f16>) vs unpacked from u32: forward matmul, backward GEMM, LoRA train step',
    options: Object.fromEntries(['rows', 'bwdRows', 'rounds', 'trainStep', 'N', 'K', 'batch', 'seqLen', 'r'].map((k) => [k, { type: 'string' }])),
  },
  kernels: {
    load: async () => (await import('./engine/profile.ts')).benchKernels as Bench,
    gpu: true,
    help: 'GPU time per kernel family (LoRA train step, decode B=1/B=8): FLOPs, bytes, GFLOP/s, GB/s, share of peak',
    options: stringOptions([...MODEL_OPTIONS, 'weights', 'r', 'batch', 'seqLen', 'prompt', 'decodeBatches', 'method', 'peakSize', 'copyMiB', 'reps', 'train']),
  },
  train: {
    // --vision on: a vision-language step (its own module: it builds on train-step.ts's FLOP count).
    load: async () => async (opts) => (opts.vision === 'on'
      ? (await import('./engine/vision-train-step.ts')).benchVisionTrainStep(opts)
      : (await import('./engine/train-step.ts')).benchTrainStep(opts)),
    gpu: true,
    help: 'train-step time and achieved GFLOP/s vs the matmul peak; --vision on: a Qwen3.5 VL step with images, the tower\'s shares',
    options: stringOptions([...MODEL_OPTIONS, 'mode', 'weights', 'r', 'alpha', 'batch', 'seqLen', 'steps',
      'vision', 'visionDepth', 'visionHidden', 'visionIntermediate', 'visionHeads', 'visionPositions', 'images', 'imageSize', 'tower', 'reps']),
  },
  'kv-cache': {
    load: async () => (await import('./engine/kv-cache.ts')).benchKvCache as Bench,
    gpu: true,
    help: 'decode tokens/s at B=1 and B=8 with an f16 KV cache against the f32 one (same run, ratio); needs shader-f16',
    options: stringOptions([...MODEL_OPTIONS, 'prompt', 'newTokens', 'weights', 'rounds']),
  },
  memory: {
    load: async () => (await import('./engine/memory-plans.ts')).benchMemoryPlans as Bench,
    help: 'the memory plan at the real shapes (no GPU): 0.6B/0.8B with f32 vs f16 KV, the seeds\' Qwen3.5-2B run, the longest completion per GPU size',
    options: stringOptions(['r', 'patches', 'prompt']),
  },
  rollouts: {
    load: async () => (await import('./rollouts/run.ts')).benchRollouts as Bench,
    gpu: true,
    help: 'multi-turn catch or browsergym episodes/s, env steps, GPU-busy fraction, decode batch sizes: lockstep vs continuous under env latency',
    options: Object.fromEntries(['task', 'tasks', 'env', 'model', 'episodes', 'seed', 'sft-steps', 'sft-lr', 'scheduler', 'latency', 'latency-seed', 'max-batch'].map((k) => [k, { type: 'string' }])),
  },
  peer: {
    load: async () => (await import('./peer/run.ts')).benchPeer as Bench,
    help: 'our engine vs transformers.js (our ONNX export) in one headless Chromium: prefill/decode tok/s at B=1 and B=8, ratio, log-prob agreement',
    options: Object.fromEntries(['model', 'lora', 'prompt', 'tokens', 'batches', 'device', 'reps'].map((k) => [k, { type: 'string' }])),
  },
  'rollouts-bound': {
    load: async () => (await import('./rollouts/simulate.ts')).benchRolloutsBound as Bench,
    help: 'simulated lockstep vs continuous under the relay latency (Monte Carlo): the ratio continuous can reach',
    options: Object.fromEntries(['episodes', 'slots', 'turns', 'tokens-per-turn', 'decode-fixed-ms', 'decode-per-seq-ms', 'resets', 'runs', 'target'].map((k) => [k, { type: 'string' }])),
  },
};

const HELP = `usage: webgrpo bench [${Object.keys(BENCHES).join('|')}|all] [--out DIR] [--KEY VALUE …]

${Object.entries(BENCHES).map(([k, b]) => `  ${k.padEnd(11)} ${b.help}`).join('\n')}
Options are passed to the benchmark: env-server --sessions N --steps M --cap N --queue|--no-queue;\n  engine --weights --matmul --attention --matmulSize M,N,K;\n  decode --batch N --prompt N --newTokens N --layers N (Qwen3-0.6B shapes by default);
  engine, decode, kernels, train: --shape qwen3-0.6b|qwen3.5-0.8b|qwen3.5-2b (real shapes, random weights) or --arch qwen3|qwen3_5 --hidden … --fullAttentionInterval N;
  kernels --train off (decode steps only);\n  kernels --method auto|timestamp|serial --batch --seqLen --prompt --decodeBatches 1,8 --peakSize M,N,K; train --mode lora|full --weights;\n  train --vision on [--visionDepth --visionHidden --visionIntermediate --visionHeads --visionPositions] --images N --imageSize WxH --tower frozen|lora|both --reps N;\n  half-loads --rounds N --rows 1,8,128 --bwdRows 128 --trainStep off;\n  memory --r N --patches N --prompt N;\n  kv-cache --prompt N --newTokens N --weights f16|f32 --rounds N;\n  rollouts --task catch|browsergym --tasks mix|a,b --env URL --episodes N --max-batch N --scheduler lockstep|continuous|both --latency on|off --model DIR --sft-steps N --sft-lr X;\n  peer --model DIR --lora DIR --prompt N --tokens N --batches 1,8 --device webgpu|wasm --reps N;\n  rollouts-bound --episodes N,N… --slots N --turns N|N,N… --decode-fixed-ms X --decode-per-seq-ms X --runs N;\n  browsergym-load --sessions N --rounds N --miniwob DIR|URL --load train|hogs:N|none.

${ADAPTER_HELP}`;

export async function run(argv: string[]): Promise<number> {
  const which = argv[0] && !argv[0].startsWith('-') ? argv[0] : 'all';
  const names = which === 'all' ? Object.keys(BENCHES) : [which];
  for (const n of names) if (!BENCHES[n]) throw new Error(`unknown benchmark '${n}'\n\n${HELP}`);
  // The flags of the benchmarks that run (all of them for `all`), each passed on as a string.
  const options: OptionTable = Object.assign({ out: { type: 'string' } }, ...names.map((n) => BENCHES[n]!.options));
  const p = parseCli(argv.slice(which === argv[0] ? 1 : 0), options);
  if (p.help) {
    console.log(HELP);
    return 0;
  }
  const outDir = str(p, 'out') ?? null;
  const opts: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.values)) if (k !== 'out' && v !== undefined) opts[k] = String(v);
  if (names.some((n) => BENCHES[n]!.gpu)) await announceAdapter('bench');
  const machine = { cpus: os.cpus().length, cpu: os.cpus()[0]?.model ?? '', memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, platform: `${os.platform()} ${os.release()}` };
  for (const name of names) {
    console.error(`webgrpo bench: running ${name}…`);
    const result = { bench: name, date: new Date().toISOString(), machine, result: await (await BENCHES[name].load())(opts) };
    console.log(JSON.stringify(result));
    if (outDir) {
      fs.mkdirSync(outDir, { recursive: true });
      fs.writeFileSync(path.join(outDir, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
    }
  }
  return 0;
}
