// The tensor names and shapes of a Qwen3ForCausalLM checkpoint (shared/specs/qwen3.md §3) or a Qwen3.5
// text model (docs/qwen3_5.md §2), derived from its config, and the check that a checkpoint matches them
// before anything is allocated on a GPU. Names are canonical (`model.…`): the checkpoint opener maps
// Qwen3_5ForConditionalGeneration's `model.language_model.…` onto them (canonicalTensorName).

import { VISION_PREFIX, visionTensorLayout } from './qwen3_5-vision-tensors.ts';
import type { ExpectedTensor, ModelConfig, TensorInfo } from './types.ts';

export type { ExpectedTensor };

/** The linear layers of one decoder layer, as named in the checkpoint (and targeted by LoRA). */
export const QWEN3_LINEARS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type Qwen3Linear = (typeof QWEN3_LINEARS)[number];

/** The linear layers of Qwen3.5's Gated DeltaNet (`linear_attn`), in the layers whose type is linear_attention. */
export const LINEAR_ATTN_LINEARS = ['in_proj_qkv', 'in_proj_z', 'in_proj_b', 'in_proj_a', 'out_proj'] as const;
export type LinearAttnLinear = (typeof LINEAR_ATTN_LINEARS)[number];

/** Every linear of a Qwen3.5 model: the Qwen3 seven (in full-attention layers and every MLP) and the DeltaNet five. */
export const QWEN3_5_LINEARS = [...QWEN3_LINEARS, ...LINEAR_ATTN_LINEARS] as const;
export type ModelLinear = Qwen3Linear | LinearAttnLinear;

const MLP_LINEARS: readonly ModelLinear[] = ['gate_proj', 'up_proj', 'down_proj'];
const ATTN_LINEARS: readonly ModelLinear[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj'];

/** The linears that layer `layer` has, in checkpoint order (mixer, then MLP). */
export function layerLinears(config: ModelConfig, layer: number): ModelLinear[] {
  const mixer = config.layerTypes[layer] === 'linear_attention' ? LINEAR_ATTN_LINEARS : ATTN_LINEARS;
  return [...mixer, ...MLP_LINEARS];
}

/**
 * The (layer, target) pairs a LoRA with these targets adapts, layer-major in checkpoint order, with the
 * adapted weight's name. A target exists only in the layers that have it (Qwen3.5: DeltaNet linears in
 * linear_attention layers, attention linears in full_attention layers, MLP linears everywhere).
 */
export function adaptedLinears(config: ModelConfig, targets: readonly ModelLinear[]): { layer: number; target: ModelLinear; name: string }[] {
  const out: { layer: number; target: ModelLinear; name: string }[] = [];
  for (let l = 0; l < config.numLayers; l++) {
    for (const t of layerLinears(config, l)) if (targets.includes(t)) out.push({ layer: l, target: t, name: linearTensorName(l, t) });
  }
  return out;
}

/** The LoRA targets of this model: the linears of its layer types (Qwen3: 7; Qwen3.5: up to 12). */
export function modelLinears(config: ModelConfig): ModelLinear[] {
  const present = new Set<ModelLinear>();
  for (let l = 0; l < config.numLayers; l++) for (const t of layerLinears(config, l)) present.add(t);
  return QWEN3_5_LINEARS.filter((t) => present.has(t));
}

/** Channels of the DeltaNet's qkv projection and causal conv: q and k (Hk·dk each), then v (Hv·dv). */
export function linearAttnConvDim(config: ModelConfig): number {
  const la = requireLinearAttention(config);
  return 2 * la.numKeyHeads * la.keyHeadDim + la.numValueHeads * la.valueHeadDim;
}

function requireLinearAttention(config: ModelConfig): NonNullable<ModelConfig['linearAttention']> {
  if (!config.linearAttention) throw new Error(`a ${config.architecture} model has no linear-attention (Gated DeltaNet) layers`);
  return config.linearAttention;
}

/**
 * [out, in] of a linear layer (nn.Linear stores W as [out, in]). With the attention output gate
 * (Qwen3.5), q_proj emits 2·H·d: per head, d query dims then d gate dims.
 */
export function linearShape(config: ModelConfig, linear: ModelLinear): [number, number] {
  const { hiddenSize: D, intermediateSize: F, numHeads: H, numKvHeads: K, headDim: d } = config;
  switch (linear) {
    case 'q_proj': return [(config.attnOutputGate ? 2 : 1) * H * d, D];
    case 'k_proj':
    case 'v_proj': return [K * d, D];
    case 'o_proj': return [D, H * d];
    case 'gate_proj':
    case 'up_proj': return [F, D];
    case 'down_proj': return [D, F];
    case 'in_proj_qkv': return [linearAttnConvDim(config), D];
    case 'in_proj_z': {
      const la = requireLinearAttention(config);
      return [la.numValueHeads * la.valueHeadDim, D];
    }
    case 'in_proj_b':
    case 'in_proj_a': return [requireLinearAttention(config).numValueHeads, D];
    case 'out_proj': {
      const la = requireLinearAttention(config);
      return [D, la.numValueHeads * la.valueHeadDim];
    }
  }
}

export function linearTensorName(layer: number, linear: ModelLinear): string {
  const block = MLP_LINEARS.includes(linear) ? 'mlp' : ATTN_LINEARS.includes(linear) ? 'self_attn' : 'linear_attn';
  return `model.layers.${layer}.${block}.${linear}.weight`;
}

/**
 * The canonical name of a stored tensor, or null when it is not loaded: the multi-token-prediction head
 * `mtp.*` of Qwen3.5 checkpoints (transformers does not load it either), and the vision tower
 * `model.visual.*` unless `keepVision` (then it keeps its stored name).
 */
export function canonicalTensorName(config: ModelConfig, stored: string, keepVision = false): string | null {
  if (config.architecture !== 'qwen3_5') return stored;
  if (stored === 'lm_head.weight') return stored;
  if (stored.startsWith(VISION_PREFIX)) return keepVision ? stored : null;
  if (stored.startsWith(config.tensorPrefix)) return `model.${stored.slice(config.tensorPrefix.length)}`;
  if (stored.startsWith('mtp.')) return null;
  return stored; // reported by validateQwen3Tensors as unexpected
}

/** The stored name of a canonical tensor name (inverse of canonicalTensorName). */
export function storedTensorName(config: ModelConfig, canonical: string): string {
  // The vision tower's tensors keep their stored names (model.visual.…: beside, not inside, the language model).
  if (config.architecture !== 'qwen3_5' || !canonical.startsWith('model.') || canonical.startsWith(VISION_PREFIX)) return canonical;
  return `${config.tensorPrefix}${canonical.slice('model.'.length)}`;
}

/**
 * Every tensor of the model in the order transformers writes them (embedding, then each layer, then
 * the final norm, then lm_head when `includeLmHead`).
 */
export function qwen3TensorLayout(config: ModelConfig, includeLmHead: boolean): ExpectedTensor[] {
  const { hiddenSize: D, vocabSize: V, headDim: d } = config;
  const out: ExpectedTensor[] = [{ name: 'model.embed_tokens.weight', shape: [V, D] }];
  for (let l = 0; l < config.numLayers; l++) {
    const p = `model.layers.${l}`;
    out.push({ name: `${p}.input_layernorm.weight`, shape: [D] });
    if (config.layerTypes[l] === 'linear_attention') {
      // Gated DeltaNet: depthwise conv [C, 1, kernel], per-value-head decay (A_log) and dt bias, gated norm over dv.
      const la = requireLinearAttention(config);
      for (const linear of ['in_proj_qkv', 'in_proj_z', 'in_proj_b', 'in_proj_a'] as const) {
        out.push({ name: linearTensorName(l, linear), shape: linearShape(config, linear) });
      }
      out.push({ name: `${p}.linear_attn.conv1d.weight`, shape: [linearAttnConvDim(config), 1, la.convKernelDim] });
      out.push({ name: `${p}.linear_attn.dt_bias`, shape: [la.numValueHeads] });
      out.push({ name: `${p}.linear_attn.A_log`, shape: [la.numValueHeads] });
      out.push({ name: `${p}.linear_attn.norm.weight`, shape: [la.valueHeadDim] });
      out.push({ name: linearTensorName(l, 'out_proj'), shape: linearShape(config, 'out_proj') });
      out.push({ name: `${p}.post_attention_layernorm.weight`, shape: [D] });
      for (const linear of ['gate_proj', 'up_proj', 'down_proj'] as const) {
        out.push({ name: linearTensorName(l, linear), shape: linearShape(config, linear) });
      }
      continue;
    }
    for (const linear of ['q_proj', 'k_proj', 'v_proj', 'o_proj'] as const) {
      out.push({ name: linearTensorName(l, linear), shape: linearShape(config, linear) });
    }
    out.push({ name: `${p}.self_attn.q_norm.weight`, shape: [d] });
    out.push({ name: `${p}.self_attn.k_norm.weight`, shape: [d] });
    out.push({ name: `${p}.post_attention_layernorm.weight`, shape: [D] });
    for (const linear of ['gate_proj', 'up_proj', 'down_proj'] as const) {
      out.push({ name: linearTensorName(l, linear), shape: linearShape(config, linear) });
    }
  }
  out.push({ name: 'model.norm.weight', shape: [D] });
  if (includeLmHead) out.push({ name: 'lm_head.weight', shape: [V, D] });
  return out;
}

/** Unique parameters of the model (the LM head counts only when untied). */
export function qwen3ParamCount(config: ModelConfig): number {
  return qwen3TensorLayout(config, !config.tieWordEmbeddings).reduce((s, t) => s + t.shape.reduce((p, x) => p * x, 1), 0);
}

export interface Qwen3TensorCheck {
  /** `lm_head.weight` is stored in the checkpoint. */
  hasStoredLmHead: boolean;
  /** The engine must load `lm_head.weight` as a separate output matrix (untied config). */
  usesSeparateLmHead: boolean;
  /** Harmless oddities (e.g. a stored head although tied). */
  warnings: string[];
}

/** Stored tensors that carry no weights (old exports kept RoPE's inverse frequencies). */
const IGNORABLE = /\.rotary_emb\.inv_freq$/;

/**
 * Checks that the checkpoint holds exactly the Qwen3 tensors its config implies, with the right
 * shapes (and, when it was opened with its vision tower, every `model.visual.*` tensor of
 * vision_config). Throws an error naming the first offending tensor. Call before allocating GPU memory.
 */
export function validateQwen3Tensors(ckpt: { config: ModelConfig; tensors: Map<string, TensorInfo> }): Qwen3TensorCheck {
  const { config, tensors } = ckpt;
  const hasStoredLmHead = tensors.has('lm_head.weight');
  if (!config.tieWordEmbeddings && !hasStoredLmHead) {
    throw new Error(`tensor 'lm_head.weight' is missing (tie_word_embeddings is false, so the checkpoint must store the output head)`);
  }
  const expected = qwen3TensorLayout(config, hasStoredLmHead);
  if ([...tensors.keys()].some((n) => n.startsWith(VISION_PREFIX))) {
    if (!config.vision) throw new Error(`the checkpoint stores vision-tower tensors (${VISION_PREFIX}*) but config.json has no vision_config`);
    expected.push(...visionTensorLayout(config.vision));
  }
  const expectedNames = new Set(expected.map((t) => t.name));
  for (const { name, shape } of expected) {
    const info = tensors.get(name);
    if (!info) throw new Error(`tensor '${name}' is missing (expected shape ${JSON.stringify(shape)} from config.json)`);
    if (info.shape.length !== shape.length || info.shape.some((x, i) => x !== shape[i])) {
      throw new Error(`tensor '${name}' has shape ${JSON.stringify(info.shape)} but config.json implies ${JSON.stringify(shape)}`);
    }
  }
  for (const name of tensors.keys()) {
    if (!expectedNames.has(name) && !IGNORABLE.test(name)) {
      const model = config.architecture === 'qwen3_5' ? 'Qwen3.5 text model' : 'Qwen3ForCausalLM';
      throw new Error(`unexpected tensor '${name}' (not part of a ${config.numLayers}-layer ${model})`);
    }
  }
  const warnings: string[] = [];
  if (config.tieWordEmbeddings && hasStoredLmHead) {
    warnings.push(`lm_head.weight is stored but tie_word_embeddings is true: it is ignored and model.embed_tokens.weight is the output head`);
  }
  return { hasStoredLmHead, usesSeparateLmHead: !config.tieWordEmbeddings, warnings };
}
