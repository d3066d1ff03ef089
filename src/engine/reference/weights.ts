// Float64 weights of the CPU reference model, keyed by the Hugging Face tensor names of Qwen3
// (specs/qwen3.md §3) or Qwen3.5 (canonical model.* names, docs/qwen3_5.md), plus LoRA adapters keyed
// by the name of the base linear they adapt.

import { readTensorFloat32 } from '../../model/checkpoint.ts';
import { adaptedLinears, canonicalTensorName, layerLinears, linearShape, linearTensorName, qwen3TensorLayout, QWEN3_5_LINEARS, type ModelLinear } from '../../model/qwen3-tensors.ts';
import type { Checkpoint, ModelConfig } from '../../model/types.ts';
import { seededNormal } from './random.ts';

/** Every parameter tensor, row-major, `[out, in]` for linears as in nn.Linear. */
export type RefWeights = Map<string, Float64Array>;

/**
 * LoRA on some linears: y = W·x + scale·B·(A·x), scale = alpha / r.
 * A and B are keyed by the base linear's weight name, e.g. `model.layers.0.self_attn.q_proj.weight`.
 * A target adapts every layer that has that linear (Qwen3.5: in_proj_* only in linear-attention layers).
 */
export interface RefLora {
  r: number;
  alpha: number;
  targets: ModelLinear[];
  A: Map<string, Float64Array>; // each (r, in)
  B: Map<string, Float64Array>; // each (out, r)
}

/** Name → shape of every parameter of the model; `lm_head.weight` only when the head is untied. */
export function refWeightShapes(cfg: ModelConfig): Map<string, number[]> {
  checkConfig(cfg);
  return new Map(qwen3TensorLayout(cfg, !cfg.tieWordEmbeddings).map((t) => [t.name, t.shape]));
}

const numel = (shape: number[]): number => shape.reduce((a, b) => a * b, 1);
const isNormName = (name: string): boolean => name.endsWith('norm.weight');

/** Scale of the random linears (LoRA factors included). */
const RANDOM_MATRIX_STD = 0.05;
/** Norm weights are 1 plus this much noise, so that a wrong norm-weight gradient cannot hide. */
const RANDOM_NORM_NOISE_STD = 0.1;

/**
 * Deterministic random weights: norms ≈ 1 + N(0, 0.1²), linears ~ N(0, 0.05²), embedding and
 * untied LM head ~ N(0, 0.25/D). The final norm makes |h| ≈ √D, so logits have std ≈ 0.5 at any
 * width: clearly non-uniform, yet (tied) not so large that each token just predicts itself.
 */
export function randomRefWeights(cfg: ModelConfig, seed: number): RefWeights {
  const normal = seededNormal(seed);
  const w: RefWeights = new Map();
  const vocabStd = 0.5 / Math.sqrt(cfg.hiddenSize);
  const qwen35 = cfg.architecture === 'qwen3_5';
  for (const [name, shape] of refWeightShapes(cfg)) {
    const data = new Float64Array(numel(shape));
    const std = name === 'model.embed_tokens.weight' || name === 'lm_head.weight' ? vocabStd : RANDOM_MATRIX_STD;
    // Qwen3.5: the (1 + w) norms and A_log sit near 0 (scale ≈ 1, decay rate ≈ 1), dt_bias and the
    // gated norm near 1; the depthwise conv gets O(1) taps so q, k and v are not all but erased.
    const center = qwen35 ? (/\.linear_attn\.(norm\.weight|dt_bias)$/.test(name) ? 1 : isNormName(name) || name.endsWith('.A_log') ? 0 : null) : isNormName(name) ? 1 : null;
    if (center !== null) for (let i = 0; i < data.length; i++) data[i] = center + RANDOM_NORM_NOISE_STD * normal();
    else if (shape.length === 3) for (let i = 0; i < data.length; i++) data[i] = normal() / Math.sqrt(shape[2]);
    else for (let i = 0; i < data.length; i++) data[i] = std * normal();
    w.set(name, data);
  }
  return w;
}

/**
 * Reference weights from named float arrays (e.g. a checkpoint converted to f32, or the engine's
 * NamedTensor[]). With tied embeddings a stored `lm_head.weight` is ignored, as transformers does;
 * any other unknown name, a missing tensor or a wrong size is an error.
 */
export function refWeightsFromTensors(
  cfg: ModelConfig,
  tensors: Iterable<{ name: string; data: ArrayLike<number> }>,
): RefWeights {
  const shapes = refWeightShapes(cfg);
  const w: RefWeights = new Map();
  for (const { name, data } of tensors) {
    if (name === 'lm_head.weight' && cfg.tieWordEmbeddings) continue;
    const shape = shapes.get(name);
    if (!shape) throw new Error(`refWeightsFromTensors: unexpected tensor "${name}" for this config`);
    if (data.length !== numel(shape)) {
      throw new Error(`refWeightsFromTensors: "${name}" has ${data.length} values, expected ${numel(shape)} (shape [${shape}])`);
    }
    w.set(name, Float64Array.from(data));
  }
  checkRefWeights(cfg, w);
  return w;
}

/** Reference weights of an opened checkpoint (any stored dtype, widened to float64). */
export async function refWeightsFromCheckpoint(ckpt: Checkpoint): Promise<RefWeights> {
  const names = [...refWeightShapes(ckpt.config).keys()];
  const tensors = await Promise.all(names.map(async (name) => ({ name, data: await readTensorFloat32(ckpt, name) })));
  return refWeightsFromTensors(ckpt.config, tensors);
}

const LORA_TENSOR_NAME = /^(?:base_model\.model\.)?(.+)\.lora_([AB])(?:\.default)?\.weight$/;

/**
 * A RefLora from named LoRA tensors: the engine's `<linear>.lora_A.weight` / `.lora_B.weight`
 * (saveState, readGrads) or PEFT's `base_model.model.<linear>.lora_A.weight`. Every tensor must be
 * a LoRA factor of one of `targets`, and every target linear must have both.
 */
export function refLoraFromTensors(
  cfg: ModelConfig,
  adapter: { r: number; alpha: number; targets: ModelLinear[] },
  tensors: Iterable<{ name: string; data: ArrayLike<number> }>,
): RefLora {
  const shapes = refWeightShapes(cfg);
  const lora: RefLora = { r: adapter.r, alpha: adapter.alpha, targets: [...adapter.targets], A: new Map(), B: new Map() };
  for (const { name, data } of tensors) {
    const match = LORA_TENSOR_NAME.exec(name);
    if (!match) throw new Error(`refLoraFromTensors: "${name}" is not a LoRA tensor name (<linear>.lora_A.weight or .lora_B.weight)`);
    const base = canonicalTensorName(cfg, `${match[1]}.weight`) ?? `${match[1]}.weight`;
    const target = adapter.targets.find((t) => base.endsWith(`.${t}.weight`));
    if (!target || !shapes.has(base)) throw new Error(`refLoraFromTensors: "${name}" adapts "${base}", which is not a target linear of this model`);
    (match[2] === 'A' ? lora.A : lora.B).set(base, Float64Array.from(data));
  }
  checkRefLora(cfg, lora);
  return lora;
}

/** Throws a clear error when a weight is missing or has the wrong size. */
export function checkRefWeights(cfg: ModelConfig, w: RefWeights): void {
  for (const [name, shape] of refWeightShapes(cfg)) {
    const data = w.get(name);
    if (!data) throw new Error(`reference weights: missing tensor "${name}"`);
    if (data.length !== numel(shape)) {
      throw new Error(`reference weights: "${name}" has ${data.length} values, expected ${numel(shape)} (shape [${shape}])`);
    }
  }
}

/** Throws a clear error when the adapter does not fit the config. */
export function checkRefLora(cfg: ModelConfig, lora: RefLora): void {
  if (!Number.isInteger(lora.r) || lora.r < 1) throw new Error(`LoRA: r must be a positive integer, got ${lora.r}`);
  if (!Number.isFinite(lora.alpha)) throw new Error(`LoRA: alpha must be finite, got ${lora.alpha}`);
  for (const t of lora.targets) {
    if (!QWEN3_5_LINEARS.includes(t)) throw new Error(`LoRA: unknown target module "${t}"`);
    if (!adaptedLinears(cfg, [t]).length) throw new Error(`LoRA: target module "${t}" is in no layer of this ${cfg.architecture} model`);
  }
  for (const { target, name } of adaptedLinears(cfg, lora.targets)) {
    const [out, inp] = linearShape(cfg, target);
    const A = lora.A.get(name);
    const B = lora.B.get(name);
    if (!A || A.length !== lora.r * inp) throw new Error(`LoRA: A of "${name}" must have ${lora.r}×${inp} values, got ${A?.length ?? 'none'}`);
    if (!B || B.length !== out * lora.r) throw new Error(`LoRA: B of "${name}" must have ${out}×${lora.r} values, got ${B?.length ?? 'none'}`);
  }
  const adapted = new Set(adaptedLinears(cfg, lora.targets).map((x) => x.name));
  const stray = [...lora.A.keys(), ...lora.B.keys()].find((name) => !adapted.has(name));
  if (stray) throw new Error(`LoRA: factors for "${stray}", which is not a target linear [${lora.targets}] of this model`);
}

/**
 * Deterministic random adapter with BOTH A and B non-zero, so that every LoRA gradient is
 * exercised (PEFT's own init has B = 0, which makes dL/dA vanish; the engine owns that init).
 */
export function randomRefLora(
  cfg: ModelConfig,
  opts: { r: number; alpha: number; targets: ModelLinear[]; seed: number },
): RefLora {
  const normal = seededNormal(opts.seed);
  const lora: RefLora = { r: opts.r, alpha: opts.alpha, targets: [...opts.targets], A: new Map(), B: new Map() };
  for (let l = 0; l < cfg.numLayers; l++) {
    // Qwen3's order (layer, then target as given) keeps the random stream of existing tests.
    for (const t of opts.targets) {
      if (!layerLinears(cfg, l).includes(t)) continue;
      const [out, inp] = linearShape(cfg, t);
      const name = linearTensorName(l, t);
      lora.A.set(name, Float64Array.from({ length: opts.r * inp }, () => RANDOM_MATRIX_STD * normal()));
      lora.B.set(name, Float64Array.from({ length: out * opts.r }, () => RANDOM_MATRIX_STD * normal()));
    }
  }
  checkRefLora(cfg, lora);
  return lora;
}

function checkConfig(cfg: ModelConfig): void {
  const positive: (keyof ModelConfig)[] = ['vocabSize', 'hiddenSize', 'intermediateSize', 'numLayers', 'numHeads', 'numKvHeads', 'headDim'];
  for (const key of positive) {
    const v = cfg[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new Error(`model config: ${key} must be a positive integer, got ${String(v)}`);
  }
  if (cfg.numHeads % cfg.numKvHeads !== 0) {
    throw new Error(`model config: numHeads (${cfg.numHeads}) must be a multiple of numKvHeads (${cfg.numKvHeads})`);
  }
  if (cfg.headDim % 2 !== 0) throw new Error(`model config: headDim must be even for rotate-half RoPE, got ${cfg.headDim}`);
}
