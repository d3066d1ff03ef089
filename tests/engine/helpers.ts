// Shared fixtures of the engine tests: small Qwen3 configs, in-memory checkpoints built from the
// float64 reference's random weights, and an engine loaded from them.
import type { Checkpoint, DType, ModelConfig, TensorInfo } from '../../src/model/types.ts';
import { qwen3ArchitectureFields } from '../../src/model/config.ts';
import { encodeFromFloat32, dtypeSize } from '../../src/model/safetensors.ts';
import { randomRefWeights, type RefWeights } from '../../src/engine/reference/weights.ts';
import { loadEngine, type LoadEngineOptions, type WebGpuEngine } from '../../src/engine/engine.ts';
import type { Gpu } from '../../src/engine/gpu.ts';

export function tinyConfig(over: Partial<ModelConfig> = {}): ModelConfig {
  const base = {
    vocabSize: 96,
    hiddenSize: 32,
    intermediateSize: 64,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 8,
    rmsNormEps: 1e-6,
    ropeTheta: 10000,
    tieWordEmbeddings: true,
    maxPositionEmbeddings: 4096,
    bosTokenId: null,
    eosTokenIds: [],
    raw: {},
    ...over,
  };
  // Qwen3 unless the test says otherwise; the per-layer fields follow numLayers/headDim.
  return { ...qwen3ArchitectureFields(base.numLayers, base.headDim), ...base };
}

/** A checkpoint held in memory whose tensors are the reference weights stored as `dtype`. */
export function memoryCheckpoint(config: ModelConfig, w: RefWeights, dtype: DType = 'F32'): Checkpoint {
  const tensors = new Map<string, TensorInfo>();
  // Linears are [out, in]; derive from the config instead of guessing from the size.
  const { hiddenSize: D, intermediateSize: F, numHeads: H, numKvHeads: K, headDim: d, vocabSize: V } = config;
  const shapeOf = (name: string, n: number): number[] => {
    if (name.endsWith('norm.weight')) return [n];
    if (name.includes('q_proj')) return [H * d, D];
    if (name.includes('k_proj') || name.includes('v_proj')) return [K * d, D];
    if (name.includes('o_proj')) return [D, H * d];
    if (name.includes('gate_proj') || name.includes('up_proj')) return [F, D];
    if (name.includes('down_proj')) return [D, F];
    return [V, D];
  };
  for (const [name, data] of w) {
    const shape = shapeOf(name, data.length);
    tensors.set(name, { name, dtype, shape, byteLength: data.length * dtypeSize(dtype) });
  }
  return {
    config,
    tensors,
    readTensor: async (name) => encodeFromFloat32(dtype, Float32Array.from(w.get(name)!)),
    readText: async () => null,
  };
}

export async function tinyEngine(gpu: Gpu, config: ModelConfig, seed: number, opts: LoadEngineOptions = {}): Promise<{ engine: WebGpuEngine; weights: RefWeights }> {
  const weights = randomRefWeights(config, seed);
  const engine = await loadEngine(memoryCheckpoint(config, weights), { gpu, weightDtype: 'f32', ...opts });
  return { engine, weights };
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** Deterministic token ids in [0, V). */
export function someIds(n: number, V: number, salt: number): number[] {
  return Array.from({ length: n }, (_, i) => (i * 37 + salt * 11 + ((i * i) % 7)) % V);
}

/**
 * The adapter this test file runs on, for test titles: the per-adapter vitest projects set
 * WEBGPU_ADAPTER (and getGpu fails when Dawn returns a different adapter); elsewhere Vulkan's default.
 */
// (Also bundled into the browser tests' entries, where there is no `process`.)
export const ADAPTER = (typeof process !== 'undefined' ? process.env.WEBGPU_ADAPTER : undefined) ?? 'default adapter';

/** `title [adapter]`: every GPU test names the adapter it ran on. */
export const onAdapter = (title: string): string => `${title} [${ADAPTER}]`;

