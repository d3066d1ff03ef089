// config.json → ModelConfig. Accepts both serializations of a Qwen3 config (shared/specs/qwen3.md §2):
// transformers 4 (`rope_theta`, `torch_dtype`) and transformers 5 (`rope_parameters.rope_theta`, `dtype`).

import type { ModelConfig } from './types.ts';

export function parseConfig(json: unknown, file = 'config.json'): ModelConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new Error(`${file}: expected a JSON object`);
  }
  const raw = json as Record<string, unknown>;
  const fail = (msg: string): never => {
    throw new Error(`${file}: ${msg}`);
  };

  const architectures = raw.architectures;
  const modelType = raw.model_type;
  const isQwen3 =
    modelType === 'qwen3' || (Array.isArray(architectures) && architectures.includes('Qwen3ForCausalLM'));
  if (!isQwen3) {
    fail(`unsupported architecture ${JSON.stringify(architectures ?? modelType ?? null)} (model_type ${JSON.stringify(modelType ?? null)}); webgrpo runs Qwen3ForCausalLM`);
  }

  const positiveInt = (key: string, fallback?: number): number => {
    const v = raw[key] ?? fallback;
    if (v === undefined) return fail(`missing ${key}`);
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) return fail(`${key} must be a positive integer, got ${JSON.stringify(v)}`);
    return v;
  };
  const positiveNumber = (key: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return fail(`${key} must be a positive number, got ${JSON.stringify(v)}`);
    return v;
  };

  const hiddenSize = positiveInt('hidden_size');
  const numHeads = positiveInt('num_attention_heads');
  const numKvHeads = positiveInt('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) {
    fail(`num_attention_heads (${numHeads}) is not divisible by num_key_value_heads (${numKvHeads})`);
  }
  const headDim = raw.head_dim === undefined || raw.head_dim === null ? hiddenSize / numHeads : positiveInt('head_dim');
  if (!Number.isSafeInteger(headDim)) {
    fail(`head_dim is missing and hidden_size (${hiddenSize}) is not divisible by num_attention_heads (${numHeads})`);
  }
  if (headDim % 2 !== 0) fail(`head_dim (${headDim}) must be even for rotary embeddings`);

  // transformers 5 moves rope_theta into rope_parameters; reject rope scaling we do not implement.
  const ropeParameters = raw.rope_parameters as Record<string, unknown> | null | undefined;
  let ropeTheta: unknown = raw.rope_theta;
  if (ropeParameters !== undefined && ropeParameters !== null) {
    if (typeof ropeParameters !== 'object') fail('rope_parameters must be an object');
    if (ropeParameters.rope_type !== undefined && ropeParameters.rope_type !== 'default') {
      fail(`rope_parameters.rope_type '${String(ropeParameters.rope_type)}' is not supported (only 'default')`);
    }
    ropeTheta = ropeParameters.rope_theta ?? ropeTheta;
  }
  if (raw.rope_scaling !== undefined && raw.rope_scaling !== null) {
    fail(`rope_scaling ${JSON.stringify(raw.rope_scaling)} is not supported (only unscaled rotary embeddings)`);
  }
  if (ropeTheta === undefined) fail('missing rope_theta (or rope_parameters.rope_theta)');

  if (raw.use_sliding_window === true) fail('use_sliding_window: true is not supported (full attention only)');
  if (raw.attention_bias === true) fail('attention_bias: true is not supported (Qwen3 has no biases)');
  if (raw.hidden_act !== undefined && raw.hidden_act !== 'silu') fail(`hidden_act '${String(raw.hidden_act)}' is not supported (only silu)`);

  const dtype = raw.torch_dtype ?? raw.dtype;
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
  const eos = raw.eos_token_id;
  const eosTokenIds =
    eos === undefined || eos === null ? [] : Array.isArray(eos) ? eos.map((v) => tokenId('eos_token_id', v)) : [tokenId('eos_token_id', eos)];
  const bos = raw.bos_token_id;
  const bosTokenId = bos === undefined || bos === null ? null : tokenId('bos_token_id', bos);

  const eps = raw.rms_norm_eps ?? 1e-6;
  const tie = raw.tie_word_embeddings ?? true;
  if (typeof tie !== 'boolean') fail(`tie_word_embeddings must be a boolean, got ${JSON.stringify(tie)}`);

  return {
    vocabSize,
    hiddenSize,
    intermediateSize: positiveInt('intermediate_size'),
    numLayers: positiveInt('num_hidden_layers'),
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: positiveNumber('rms_norm_eps', eps),
    ropeTheta: positiveNumber('rope_theta', ropeTheta),
    tieWordEmbeddings: tie as boolean,
    maxPositionEmbeddings: positiveInt('max_position_embeddings', 40960),
    bosTokenId,
    eosTokenIds,
    raw,
  };
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

/** Weight dtype declared by the config (`torch_dtype` or `dtype`), in safetensors naming; null if absent. */
export function declaredDtype(config: ModelConfig): 'BF16' | 'F16' | 'F32' | null {
  const d = config.raw.torch_dtype ?? config.raw.dtype;
  return d === 'bfloat16' ? 'BF16' : d === 'float16' ? 'F16' : d === 'float32' ? 'F32' : null;
}
