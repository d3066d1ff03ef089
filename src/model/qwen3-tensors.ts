// The tensor names and shapes of a Qwen3ForCausalLM checkpoint (shared/specs/qwen3.md §3), derived
// from its config, and the check that a checkpoint matches them before anything is allocated on a GPU.

import type { ModelConfig, TensorInfo } from './types.ts';

export interface ExpectedTensor {
  name: string;
  shape: number[];
}

/** The linear layers of one decoder layer, as named in the checkpoint (and targeted by LoRA). */
export const QWEN3_LINEARS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type Qwen3Linear = (typeof QWEN3_LINEARS)[number];

/** [out, in] of a linear layer (nn.Linear stores W as [out, in]). */
export function linearShape(config: ModelConfig, linear: Qwen3Linear): [number, number] {
  const { hiddenSize: D, intermediateSize: F, numHeads: H, numKvHeads: K, headDim: d } = config;
  switch (linear) {
    case 'q_proj': return [H * d, D];
    case 'k_proj':
    case 'v_proj': return [K * d, D];
    case 'o_proj': return [D, H * d];
    case 'gate_proj':
    case 'up_proj': return [F, D];
    case 'down_proj': return [D, F];
  }
}

export function linearTensorName(layer: number, linear: Qwen3Linear): string {
  const block = linear === 'gate_proj' || linear === 'up_proj' || linear === 'down_proj' ? 'mlp' : 'self_attn';
  return `model.layers.${layer}.${block}.${linear}.weight`;
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
 * shapes. Throws an error naming the first offending tensor. Call before allocating GPU memory.
 */
export function validateQwen3Tensors(ckpt: { config: ModelConfig; tensors: Map<string, TensorInfo> }): Qwen3TensorCheck {
  const { config, tensors } = ckpt;
  const hasStoredLmHead = tensors.has('lm_head.weight');
  if (!config.tieWordEmbeddings && !hasStoredLmHead) {
    throw new Error(`tensor 'lm_head.weight' is missing (tie_word_embeddings is false, so the checkpoint must store the output head)`);
  }
  const expected = qwen3TensorLayout(config, hasStoredLmHead);
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
      throw new Error(`unexpected tensor '${name}' (not part of a ${config.numLayers}-layer Qwen3ForCausalLM)`);
    }
  }
  const warnings: string[] = [];
  if (config.tieWordEmbeddings && hasStoredLmHead) {
    warnings.push(`lm_head.weight is stored but tie_word_embeddings is true: it is ignored and model.embed_tokens.weight is the output head`);
  }
  return { hasStoredLmHead, usesSeparateLmHead: !config.tieWordEmbeddings, warnings };
}
