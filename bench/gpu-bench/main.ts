// The one-run GPU benchmark (`npm run build:gpu-bench` packs it with Node, Dawn and the Vulkan
// loader into one archive). On a machine with a real GPU, for a few minutes and without network:
//   1. parity: a small random Qwen3 scored on the GPU (f16 and f32 weights) against the float64
//      reference; the run fails when any logprob differs by more than 1e-4;
// then for each shape of --shapes (default: Qwen3-0.6B, Qwen3.5-0.8B, then Qwen3.5-2B, the seeds' model; random weights at the real
// shapes, generated on the spot, none carried):
//   2. engine: prefill and decode tokens/s at B = 1 and B = 8, f16 weights, plus the matmul peak
//      (f32 and real halves, output checked);
//   3. memory: the memory plan at G = 8 × 1024 tokens, LoRA r = 16 on every linear, this adapter's limits;
//   4. decode: host round trips, buffers and host ms per generated token through both rollout
//      schedulers at B = 1 and B = 8 (bench/engine/decode-loop.ts);
//   5. train: one LoRA r = 16 training step (every linear, f16 frozen weights) at B = 1 and B = 8, with
//      the bytes allocated against the plan for that step;
//   6. kernels: GPU time per kernel family of a LoRA train step (B = 1) and a decode step (B = 1, 8),
//      with FLOPs, bytes and share of the matmul / bandwidth peak (bench/engine/profile.ts).
// Writes one JSON file (--out, default gpu-bench-results.json; keys `<shape>/<step>`) and prints a short summary.
// --small runs the same steps at toy shapes of both architectures (to test the archive on a CPU adapter). The work options
// keep the shapes and cut the tokens (a CPU adapter needs ~1 s per 0.6B token): --prompt N,
// --newTokens N, --rounds N (engine), --seqLen N, --trainBatches 1,8, --steps N (train),
// --matmulSize M,N,K (the peak probe), --kernelReps N (profiled repeats). --layers N keeps every width of each
// shape and cuts its depth (a CPU adapter cannot hold 2B's 24 layers in minutes; 4 keeps Qwen3.5's 3 linear : 1 full).
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { adapterName, getGpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { refScore } from '../../src/engine/reference/qwen3.ts';
import { randomRefWeights } from '../../src/engine/reference/weights.ts';
import type { DType, ModelConfig } from '../../src/model/types.ts';
import { decodeToFloat32, encodeFromFloat32, dtypeSize } from '../../src/model/safetensors.ts';
import type { Checkpoint, TensorInfo } from '../../src/model/types.ts';
import { qwen3ArchitectureFields } from '../../src/model/config.ts';
import { refWeightShapes } from '../../src/engine/reference/weights.ts';
import { benchEngineForward } from '../engine/forward.ts';
import { benchDecodeLoop } from '../engine/decode-loop.ts';
import { benchCheckpoint, SHAPES } from '../engine/common.ts';
import { planMemory } from '../../src/engine/memory-plan.ts';
import { modelLinears } from '../../src/model/qwen3-tensors.ts';
import { benchTrainStep } from '../engine/train-step.ts';
import { benchKernels } from '../engine/profile.ts';

/** Toy shapes of both architectures (`--small`: tests the archive on a CPU adapter); Qwen3.5 keeps its 3 linear : 1 full layer pattern. */
const SMALL: Record<string, Record<string, string>> = {
  'small-qwen3': { hidden: '64', layers: '2', heads: '4', kvHeads: '2', headDim: '16', intermediate: '128', vocab: '512' },
  'small-qwen3.5': {
    arch: 'qwen3_5', hidden: '64', layers: '4', heads: '4', kvHeads: '2', headDim: '16', intermediate: '128', vocab: '512',
    linearKeyHeads: '2', linearValueHeads: '4', linearKeyHeadDim: '16', linearValueHeadDim: '16', fullAttentionInterval: '4',
  },
};

/** The memory plan's reference workload (BENCHMARKS.md): G = 8 sequences of 1024 tokens, LoRA r = 16 on every linear, f16 weights. */
async function memoryPlanAt(shape: Record<string, string>, limits: { maxStorageBufferBindingSize: number; maxBufferSize: number }) {
  const { ckpt, source } = await benchCheckpoint(shape, 'bf16'); // the engine step's model, generated once
  const plan = planMemory({
    config: ckpt.config, weightDtype: 'f16', mode: { kind: 'lora', r: 16, targets: modelLinears(ckpt.config) }, numSequences: 8, maxTokensPerSequence: 1024, limits,
  });
  return { model: source, workload: 'G = 8 × 1024 tokens, LoRA r = 16 on every linear, f16 weights', params: plan.params, trainableParams: plan.trainableParams,
    items: plan.items, totalBytes: plan.totalBytes, fits: plan.fits, message: plan.message };
}

/** The parity model: small enough for the float64 reference, with GQA and a tied head. */
const PARITY: ModelConfig = {
  vocabSize: 256, hiddenSize: 64, intermediateSize: 128, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 16,
  rmsNormEps: 1e-6, ropeTheta: 1e6, tieWordEmbeddings: true, maxPositionEmbeddings: 4096, bosTokenId: null, eosTokenIds: [], raw: {},
  ...qwen3ArchitectureFields(2, 16),
};

function memoryCheckpoint(config: ModelConfig, seed: number, dtype: DType): { ckpt: Checkpoint; weights: Map<string, Float64Array> } {
  const raw = randomRefWeights(config, seed);
  // The reference sees exactly the stored values (bf16-rounded).
  const weights = new Map<string, Float64Array>();
  const shapes = refWeightShapes(config);
  const tensors = new Map<string, TensorInfo>();
  const bytes = new Map<string, Uint8Array>();
  for (const [name, data] of raw) {
    const enc = encodeFromFloat32(dtype, Float32Array.from(data));
    bytes.set(name, enc);
    weights.set(name, Float64Array.from(decodeToFloat32({ name, dtype }, enc)));
    tensors.set(name, { name, dtype, shape: shapes.get(name)!, byteLength: data.length * dtypeSize(dtype) });
  }
  return { ckpt: { config, tensors, readTensor: async (n) => bytes.get(n)!, readText: async () => null }, weights };
}

async function parity() {
  const { ckpt, weights } = memoryCheckpoint(PARITY, 11, 'BF16');
  const ids = Array.from({ length: 24 }, (_, i) => (i * 37 + 5) % PARITY.vocabSize);
  const ref = refScore(PARITY, weights, { ids, scoreFrom: 1 }, 1);
  const out: Record<string, number> = {};
  for (const weightDtype of ['f16', 'f32'] as const) {
    const engine = await loadEngine(ckpt, { weightDtype });
    try {
      const got = await engine.score({ sequences: [{ ids, scoreFrom: 1 }], temperature: 1 });
      out[`${weightDtype}MaxAbsLogprobDiff`] = Math.max(...Array.from(got.logprobs[0]!, (v, i) => Math.abs(v - ref.logprobs[i]!)));
      out[`${weightDtype}MaxAbsEntropyDiff`] = Math.max(...Array.from(got.entropy[0]!, (v, i) => Math.abs(v - ref.entropy[i]!)));
    } finally {
      engine.destroy();
    }
  }
  const worst = Math.max(...Object.values(out));
  return { model: 'random Qwen3, hidden 64, 2 layers, GQA 4/2, bf16 checkpoint', tokens: ids.length, ...out, tolerance: 1e-4, pass: worst <= 1e-4 };
}

async function main(): Promise<number> {
  const work = ['prompt', 'newTokens', 'rounds', 'seqLen', 'trainBatches', 'steps', 'matmulSize', 'kernelReps'] as const;
  const { values } = parseArgs({
    options: {
      small: { type: 'boolean', default: false },
      shapes: { type: 'string', default: Object.keys(SHAPES).join(',') },
      out: { type: 'string', default: 'gpu-bench-results.json' },
      layers: { type: 'string' },
      ...Object.fromEntries(work.map((k) => [k, { type: 'string' as const }])),
    },
  });
  const shapes = values.small ? SMALL : Object.fromEntries(values.shapes!.split(',').map((name) => {
    if (!SHAPES[name]) throw new Error(`gpu-bench: --shapes lists ${name}; known: ${Object.keys(SHAPES).join(', ')}`);
    return [name, SHAPES[name]!];
  }));
  if (values.layers !== undefined) {
    if (!/^[1-9][0-9]*$/.test(values.layers)) throw new Error(`gpu-bench: --layers must be a positive integer, got ${values.layers}`);
    for (const name of Object.keys(shapes)) shapes[name] = { ...shapes[name]!, layers: values.layers };
  }
  const gpu = await getGpu();
  const adapter = { name: adapterName(gpu.adapterInfo), ...gpu.adapterInfo, f16: gpu.f16, subgroupSizes: gpu.subgroupSizes, maxStorageBufferBindingSize: gpu.limits.maxStorageBufferBindingSize, maxBufferSize: gpu.limits.maxBufferSize };
  const limits = { maxStorageBufferBindingSize: gpu.limits.maxStorageBufferBindingSize, maxBufferSize: gpu.limits.maxBufferSize };
  gpu.device.destroy();
  const results: Record<string, unknown> = { date: new Date().toISOString(), shapes: Object.keys(shapes), adapter };
  const save = () => writeFileSync(values.out!, JSON.stringify(results, null, 2) + '\n');
  const step = async (name: string, run: () => Promise<unknown>) => {
    const t0 = performance.now();
    console.error(`gpu-bench: ${name}…`);
    try {
      results[name] = await run();
    } catch (err) {
      results[name] = { error: String((err as Error)?.stack ?? err) };
    }
    console.error(`gpu-bench: ${name} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    save();
  };
  await step('parity', parity);
  const defaults = values.small
    ? { prompt: '16', newTokens: '4', rounds: '2', seqLen: '16', trainBatches: '1,8', steps: '2', matmulSize: '64,256,256', kernelReps: '3' }
    : { prompt: '128', newTokens: '32', rounds: '2', seqLen: '256', trainBatches: '1,8', steps: '2', matmulSize: '256,3072,1024', kernelReps: '3' };
  const sizes = Object.fromEntries(work.map((k) => [k, (values as Record<string, unknown>)[k] as string | undefined ?? defaults[k]])) as typeof defaults;
  results.work = { ...sizes, layers: values.layers ?? 'full' };
  // Every step of one shape, then the next (each shape's random model is generated once, at its first step).
  for (const [name, shape] of Object.entries(shapes)) {
    await step(`${name}/engine`, () => benchEngineForward({ ...shape, weights: 'f16', prompt: sizes.prompt, newTokens: sizes.newTokens, rounds: sizes.rounds, matmulSize: sizes.matmulSize }));
    await step(`${name}/memory`, () => memoryPlanAt(shape, limits));
    await step(`${name}/decode`, () => benchDecodeLoop({ ...shape, weights: 'f16', batch: '8', prompt: sizes.prompt, newTokens: String(Math.max(3, Number(sizes.newTokens))) }));
    for (const batch of sizes.trainBatches.split(',')) {
      await step(`${name}/train_b${batch}`, () => benchTrainStep({ ...shape, mode: 'lora', r: '16', alpha: '32', batch, seqLen: sizes.seqLen, steps: sizes.steps, weights: 'f16' }));
    }
    await step(`${name}/kernels`, () => benchKernels({
      ...shape, weights: 'f16', batch: '1', seqLen: sizes.seqLen, prompt: sizes.prompt, decodeBatches: '1,8', reps: sizes.kernelReps, peakSize: sizes.matmulSize,
    }));
  }
  const failed = Object.entries(results).filter(([, v]) => typeof v === 'object' && v !== null && ('error' in v || (v as { pass?: boolean }).pass === false));
  console.log(JSON.stringify({ out: values.out, adapter: adapter.name, failed: failed.map(([k]) => k) }));
  return failed.length === 0 ? 0 : 1;
}

main().then((code) => { process.exitCode = code; }, (err) => { console.error(err); process.exitCode = 1; });
