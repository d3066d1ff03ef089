// config.json → ModelConfig. Accepts both serializations of a Qwen3 config (shared/specs/qwen3.md §2):
// transformers 4 (`rope_theta`, `torch_dtype`) and transformers 5 (`rope_parameters.rope_theta`, `dtype`),
// and Qwen3.5's text model (docs/qwen3_5.md §1): flat (`qwen3_5_text`, Qwen3_5ForCausalLM) or nested
// under `text_config` (`qwen3_5`, Qwen3_5ForConditionalGeneration, with its vision tower's `vision_config`
// when present: vision-config.ts).

import { overLimit, TEXT_CONFIG_LIMITS } from './config-limits.ts';
import { parseVisionConfig } from './vision-config.ts';
import type { Architecture, LayerType, LinearAttentionConfig, ModelConfig, VisionConfig } from './types.ts';

type Json = Record<string, unknown>;

/**
 * transformers' Qwen3_5TextConfig defaults (5.18), used where a Qwen3.5 config.json leaves a key out,
 * so a sparse config means what it means to transformers.
 */
const QWEN3_5_DEFAULTS = {
  num_key_value_heads: 4,
  head_dim: 256,
  max_position_embeddings: 32768,
  rope_theta: 10000,
  partial_rotary_factor: 0.25,
  full_attention_interval: 4,
  linear_conv_kernel_dim: 4,
  linear_key_head_dim: 128,
  linear_value_head_dim: 128,
  linear_num_key_heads: 16,
  linear_num_value_heads: 32,
} as const;

/** Which decoder the file describes, where its hyper-parameters live, and its tensors' prefix. */
interface Detected {
  architecture: Architecture;
  text: Json;
  tensorPrefix: string;
  /** tie_word_embeddings as the model class reads it (ConditionalGeneration: the top level; default per class). */
  tie: unknown;
}

function detect(raw: Json, fail: (msg: string) => never): Detected {
  const architectures = Array.isArray(raw.architectures) ? (raw.architectures as unknown[]) : [];
  const modelType = raw.model_type;
  const named = (...names: string[]): boolean => names.some((n) => architectures.includes(n));
  const moe = typeof modelType === 'string' && /moe|next/.test(modelType);
  if (moe || architectures.some((a) => typeof a === 'string' && /Moe|Next/.test(a))) {
    fail(`${JSON.stringify(modelType ?? architectures)} is a mixture-of-experts model; webgrpo runs the dense Qwen3 and Qwen3.5 models only`);
  }
  if (modelType === 'qwen3' || named('Qwen3ForCausalLM')) {
    return { architecture: 'qwen3', text: raw, tensorPrefix: 'model.', tie: raw.tie_word_embeddings ?? true };
  }
  if (modelType === 'qwen3_5' || named('Qwen3_5ForConditionalGeneration')) {
    const text = raw.text_config;
    if (text === null || typeof text !== 'object' || Array.isArray(text)) {
      return fail(`model_type qwen3_5 (Qwen3_5ForConditionalGeneration) needs a text_config object`);
    }
    if ((text as Json).model_type !== undefined && (text as Json).model_type !== 'qwen3_5_text') {
      fail(`text_config.model_type ${JSON.stringify((text as Json).model_type)} is not qwen3_5_text`);
    }
    // The composite class ties by its own (top-level) flag, default false (transformers' Qwen3_5Config).
    return { architecture: 'qwen3_5', text: text as Json, tensorPrefix: 'model.language_model.', tie: raw.tie_word_embeddings ?? false };
  }
  if (modelType === 'qwen3_5_text' || named('Qwen3_5ForCausalLM')) {
    return { architecture: 'qwen3_5', text: raw, tensorPrefix: 'model.', tie: raw.tie_word_embeddings ?? false };
  }
  return fail(
    `unsupported architecture ${JSON.stringify(raw.architectures ?? modelType ?? null)} (model_type ${JSON.stringify(modelType ?? null)}); ` +
      `webgrpo runs Qwen3ForCausalLM, Qwen3_5ForCausalLM and the text model of Qwen3_5ForConditionalGeneration`,
  );
}

export function parseConfig(json: unknown, file = 'config.json'): ModelConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new Error(`${file}: expected a JSON object`);
  }
  const raw = json as Json;
  const fail = (msg: string): never => {
    throw new Error(`${file}: ${msg}`);
  };
  const { architecture, text, tensorPrefix, tie } = detect(raw, fail);
  const qwen35 = architecture === 'qwen3_5';
  // Keys of a nested text_config are named with their path, so an error points at the right line.
  const at = (key: string): string => (text === raw ? key : `text_config.${key}`);

  const positiveInt = (key: string, fallback?: number): number => {
    const v = text[key] ?? fallback;
    if (v === undefined) return fail(`missing ${at(key)}`);
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) return fail(`${at(key)} must be a positive integer, got ${JSON.stringify(v)}`);
    const tooBig = overLimit(at(key), v, TEXT_CONFIG_LIMITS, key);
    if (tooBig) return fail(tooBig);
    return v;
  };
  const positiveNumber = (key: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return fail(`${at(key)} must be a positive number, got ${JSON.stringify(v)}`);
    return v;
  };

  const hiddenSize = positiveInt('hidden_size');
  const numHeads = positiveInt('num_attention_heads');
  const numKvHeads = positiveInt('num_key_value_heads', qwen35 ? QWEN3_5_DEFAULTS.num_key_value_heads : numHeads);
  if (numHeads % numKvHeads !== 0) {
    fail(`num_attention_heads (${numHeads}) is not divisible by num_key_value_heads (${numKvHeads})`);
  }
  const headDim =
    text.head_dim === undefined || text.head_dim === null
      ? qwen35 ? QWEN3_5_DEFAULTS.head_dim : hiddenSize / numHeads
      : positiveInt('head_dim');
  if (!Number.isSafeInteger(headDim)) {
    fail(`head_dim is missing and hidden_size (${hiddenSize}) is not divisible by num_attention_heads (${numHeads})`);
  }
  if (headDim % 2 !== 0) fail(`head_dim (${headDim}) must be even for rotary embeddings`);

  // transformers 5 moves rope_theta into rope_parameters; reject rope scaling we do not implement.
  const ropeParameters = text.rope_parameters as Json | null | undefined;
  let ropeTheta: unknown = text.rope_theta;
  let partialRotary: unknown = qwen35 ? (text.partial_rotary_factor ?? QWEN3_5_DEFAULTS.partial_rotary_factor) : 1;
  if (ropeParameters !== undefined && ropeParameters !== null) {
    if (typeof ropeParameters !== 'object') fail(`${at('rope_parameters')} must be an object`);
    if (ropeParameters.rope_type !== undefined && ropeParameters.rope_type !== 'default') {
      fail(`${at('rope_parameters')}.rope_type '${String(ropeParameters.rope_type)}' is not supported (only 'default')`);
    }
    ropeTheta = ropeParameters.rope_theta ?? ropeTheta;
    // M-RoPE (mrope_section, mrope_interleaved) splits the rotary frequencies between temporal, height
    // and width positions; for text all three positions are the token index, so it is ordinary RoPE.
    if (qwen35) partialRotary = ropeParameters.partial_rotary_factor ?? partialRotary;
  }
  if (text.rope_scaling !== undefined && text.rope_scaling !== null) {
    fail(`${at('rope_scaling')} ${JSON.stringify(text.rope_scaling)} is not supported (only unscaled rotary embeddings)`);
  }
  if (ropeTheta === undefined) {
    if (qwen35) ropeTheta = QWEN3_5_DEFAULTS.rope_theta;
    else fail('missing rope_theta (or rope_parameters.rope_theta)');
  }
  if (typeof partialRotary !== 'number' || !(partialRotary > 0 && partialRotary <= 1)) {
    fail(`partial_rotary_factor must be a number in (0, 1], got ${JSON.stringify(partialRotary)}`);
  }
  const partialRotaryFactor = partialRotary as number;
  const rotaryDim = Math.floor(headDim * partialRotaryFactor);
  if (rotaryDim === 0 || rotaryDim % 2 !== 0) {
    fail(`head_dim ${headDim} · partial_rotary_factor ${partialRotaryFactor} = ${rotaryDim} rotary dims; RoPE needs a positive even number`);
  }

  if (text.use_sliding_window === true) fail(`${at('use_sliding_window')}: true is not supported (full attention only)`);
  if (text.attention_bias === true) fail(`${at('attention_bias')}: true is not supported (Qwen3 and Qwen3.5 have no biases)`);
  if (text.hidden_act !== undefined && text.hidden_act !== 'silu') fail(`${at('hidden_act')} '${String(text.hidden_act)}' is not supported (only silu)`);
  // transformers' Qwen3.5 always gates the attention output; a config saying otherwise describes another model.
  if (qwen35 && text.attn_output_gate === false) fail(`${at('attn_output_gate')}: false is not supported (Qwen3.5 attention is always gated)`);

  const dtype = raw.torch_dtype ?? raw.dtype ?? text.torch_dtype ?? text.dtype;
  if (dtype !== undefined && dtype !== null && !['bfloat16', 'float16', 'float32'].includes(dtype as string)) {
    fail(`dtype ${JSON.stringify(dtype)} is not supported (bfloat16, float16, float32)`);
  }

  const vocabSize = positiveInt('vocab_size');
  const tokenId = (key: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v >= vocabSize) {
      return fail(`${key} ${JSON.stringify(v)} is not a token id below vocab_size ${vocabSize}`);
    }
    return v;
  };
  const eos = text.eos_token_id ?? raw.eos_token_id;
  const eosTokenIds =
    eos === undefined || eos === null ? [] : Array.isArray(eos) ? eos.map((v) => tokenId('eos_token_id', v)) : [tokenId('eos_token_id', eos)];
  const bos = text.bos_token_id ?? raw.bos_token_id;
  const bosTokenId = bos === undefined || bos === null ? null : tokenId('bos_token_id', bos);

  const eps = text.rms_norm_eps ?? 1e-6;
  if (typeof tie !== 'boolean') fail(`tie_word_embeddings must be a boolean, got ${JSON.stringify(tie)}`);

  const numLayers = positiveInt('num_hidden_layers');
  const layerTypes = qwen35 ? parseLayerTypes(text, numLayers, at, fail) : Array<LayerType>(numLayers).fill('full_attention');
  if (!qwen35 && Array.isArray(text.layer_types) && text.layer_types.some((t) => t !== 'full_attention')) {
    fail(`layer_types ${JSON.stringify(text.layer_types)}: Qwen3 runs full attention in every layer`);
  }
  let linearAttention: LinearAttentionConfig | null = null;
  if (qwen35) {
    const D = QWEN3_5_DEFAULTS;
    linearAttention = {
      numKeyHeads: positiveInt('linear_num_key_heads', D.linear_num_key_heads),
      numValueHeads: positiveInt('linear_num_value_heads', D.linear_num_value_heads),
      keyHeadDim: positiveInt('linear_key_head_dim', D.linear_key_head_dim),
      valueHeadDim: positiveInt('linear_value_head_dim', D.linear_value_head_dim),
      convKernelDim: positiveInt('linear_conv_kernel_dim', D.linear_conv_kernel_dim),
    };
    if (linearAttention.numValueHeads % linearAttention.numKeyHeads !== 0) {
      fail(`linear_num_value_heads (${linearAttention.numValueHeads}) is not a multiple of linear_num_key_heads (${linearAttention.numKeyHeads})`);
    }
  }

  // Only the composite class has a tower; a composite config without vision_config (webgrpo's text-only
  // tiny models) has none stored, so none is loaded (transformers would build a default one).
  const hasVision = qwen35 && text !== raw && raw.vision_config !== undefined && raw.vision_config !== null;
  // A tower that cannot run (e.g. transformers' default image_token_id past a smaller vocab) does not
  // stop the text model, which transformers loads too; asking for the tower names the problem.
  let vision: VisionConfig | null = null;
  let visionError: string | undefined;
  if (hasVision) {
    try {
      vision = parseVisionConfig(raw, hiddenSize, vocabSize, ropeParameters, fail);
    } catch (err) {
      visionError = (err as Error).message;
    }
  }

  return {
    architecture,
    layerTypes,
    linearAttention,
    partialRotaryFactor,
    rotaryDim,
    attnOutputGate: qwen35,
    tensorPrefix,
    vocabSize,
    hiddenSize,
    intermediateSize: positiveInt('intermediate_size'),
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: positiveNumber('rms_norm_eps', eps),
    ropeTheta: positiveNumber('rope_theta', ropeTheta),
    tieWordEmbeddings: tie as boolean,
    maxPositionEmbeddings: positiveInt('max_position_embeddings', qwen35 ? QWEN3_5_DEFAULTS.max_position_embeddings : 40960),
    bosTokenId,
    eosTokenIds,
    vision,
    ...(visionError ? { visionError } : {}),
    raw,
  };
}

/** Qwen3.5's layer_types, or transformers' default: every `full_attention_interval`-th layer is full attention. */
function parseLayerTypes(text: Json, numLayers: number, at: (key: string) => string, fail: (msg: string) => never): LayerType[] {
  const given = text.layer_types;
  if (given === undefined || given === null) {
    const interval = text.full_attention_interval ?? QWEN3_5_DEFAULTS.full_attention_interval;
    if (typeof interval !== 'number' || !Number.isSafeInteger(interval) || interval <= 0) {
      return fail(`${at('full_attention_interval')} must be a positive integer, got ${JSON.stringify(interval)}`);
    }
    return Array.from({ length: numLayers }, (_, i) => ((i + 1) % interval === 0 ? 'full_attention' : 'linear_attention'));
  }
  if (!Array.isArray(given) || given.length !== numLayers) {
    return fail(`${at('layer_types')} must list one type for each of the ${numLayers} layers, got ${JSON.stringify(given)}`);
  }
  return given.map((t, i) =>
    t === 'full_attention' || t === 'linear_attention'
      ? t
      : fail(`${at('layer_types')}[${i}] ${JSON.stringify(t)} is not 'full_attention' or 'linear_attention'`),
  );
}

/** Parses config.json text, naming the file when the JSON itself is broken. */
export function parseConfigText(text: string, file = 'config.json'): ModelConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${(err as Error).message})`);
  }
  return parseConfig(json, file);
}

/** Weight dtype declared by the config (`torch_dtype` or `dtype`, top level or text_config), in safetensors naming; null if absent. */
export function declaredDtype(config: ModelConfig): 'BF16' | 'F16' | 'F32' | null {
  const text = config.raw.text_config as Json | undefined;
  const d = config.raw.torch_dtype ?? config.raw.dtype ?? text?.torch_dtype ?? text?.dtype;
  return d === 'bfloat16' ? 'BF16' : d === 'float16' ? 'F16' : d === 'float32' ? 'F32' : null;
}

/** The Qwen3.5-only fields as a Qwen3 model has them, for configs built in code (tests, benchmarks). */
export function qwen3ArchitectureFields(numLayers: number, headDim: number): Pick<
  ModelConfig,
  'architecture' | 'layerTypes' | 'linearAttention' | 'partialRotaryFactor' | 'rotaryDim' | 'attnOutputGate' | 'tensorPrefix' | 'vision'
> {
  return {
    architecture: 'qwen3',
    layerTypes: Array<LayerType>(numLayers).fill('full_attention'),
    linearAttention: null,
    partialRotaryFactor: 1,
    rotaryDim: headDim,
    attnOutputGate: false,
    tensorPrefix: 'model.',
    vision: null,
  };
}
