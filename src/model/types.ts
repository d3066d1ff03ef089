// Shared types of checkpoint loading (src/model) and the engine (src/engine).

/** Which decoder a checkpoint holds. */
export type Architecture = 'qwen3' | 'qwen3_5';

/** What a decoder layer mixes tokens with: softmax attention, or Qwen3.5's Gated DeltaNet. */
export type LayerType = 'full_attention' | 'linear_attention';

/** Qwen3.5's Gated DeltaNet (`linear_attn`) dimensions (config.json `linear_*`). */
export interface LinearAttentionConfig {
  numKeyHeads: number; // Hk: heads of q and k
  numValueHeads: number; // Hv: heads of v, the state and the output; value head h reads key head floor(h / (Hv/Hk))
  keyHeadDim: number; // dk
  valueHeadDim: number; // dv
  convKernelDim: number; // width of the causal depthwise conv over the 2·Hk·dk + Hv·dv qkv channels
}

/**
 * Qwen3.5's vision tower (Qwen3_5VisionModel, config.json `vision_config`) and what the prompt needs to
 * place its output: the image tokens and the text rotary's M-RoPE split (docs/qwen3_5.md §Vision).
 */
export interface VisionConfig {
  depth: number; // vision blocks
  hiddenSize: number; // Dv
  intermediateSize: number; // the blocks' MLP width
  numHeads: number; // heads of the (bidirectional) block attention; headDim = hiddenSize / numHeads
  headDim: number;
  inChannels: number; // 3 (RGB)
  patchSize: number; // p: a patch is p×p pixels…
  temporalPatchSize: number; // …of tp frames (an image is repeated tp times)
  spatialMergeSize: number; // m: the merger joins m×m neighbouring patches into one language-model token
  outHiddenSize: number; // the merger's output width = the text model's hidden_size
  /** The learned position grid: numPositionEmbeddings = side², bilinearly resampled to each image's patch grid. */
  numPositionEmbeddings: number;
  positionGridSide: number;
  /** The blocks' MLP activation: 'gelu_pytorch_tanh' (Qwen3.5) or 'gelu' (erf); the merger always uses erf GELU. */
  hiddenAct: 'gelu_pytorch_tanh' | 'gelu';
  /** Base of the 2-D (axial) rotary of the blocks: headDim/4 frequencies for the row, the same for the column. */
  ropeTheta: number;
  /** LayerNorm epsilon of the blocks and the merger (fixed by transformers' code). */
  layerNormEps: number;
  imageTokenId: number;
  videoTokenId: number;
  visionStartTokenId: number;
  visionEndTokenId: number;
  /**
   * The text rotary's M-RoPE: frequency i of the text model's rotary follows the temporal, height or
   * width position as i mod 3 = 0, 1, 2 (interleaved), for i < 3·section[axis], else the temporal one.
   */
  mropeSection: [number, number, number];
}

/**
 * Qwen3 or Qwen3.5 (text) hyper-parameters, normalized from every config.json form (rope_theta or
 * rope_parameters; Qwen3.5's text_config nested or flat).
 *
 * Qwen3.5 differs from Qwen3 (docs/qwen3_5.md): every RMSNorm except the gated one scales by (1 + w)
 * instead of w; full-attention layers rotate only the first `rotaryDim` dims of each head and gate their
 * output by sigmoid of a second half of q_proj; `linear_attention` layers are Gated DeltaNet.
 */
export interface ModelConfig {
  architecture: Architecture;
  /** One entry per layer; all 'full_attention' for Qwen3. */
  layerTypes: LayerType[];
  /** Gated DeltaNet dimensions; null for Qwen3 (no linear-attention layers). */
  linearAttention: LinearAttentionConfig | null;
  /** Fraction of head_dim that RoPE rotates (1 for Qwen3, 0.25 by default for Qwen3.5). */
  partialRotaryFactor: number;
  /** Rotated dims per head: floor(headDim · partialRotaryFactor), even; the rest pass through. */
  rotaryDim: number;
  /** Full-attention output gate: q_proj emits [q | gate] per head and the output is scaled by sigmoid(gate) (Qwen3.5). */
  attnOutputGate: boolean;
  /** Prefix of the decoder's tensors: 'model.' (…ForCausalLM) or 'model.language_model.' (Qwen3_5ForConditionalGeneration). */
  tensorPrefix: string;
  vocabSize: number;
  hiddenSize: number; // D
  intermediateSize: number; // F
  numLayers: number;
  numHeads: number; // H (query heads)
  numKvHeads: number; // K (GQA: query head h uses kv head floor(h / (H/K)))
  headDim: number; // d (not necessarily hiddenSize / numHeads)
  rmsNormEps: number;
  ropeTheta: number;
  tieWordEmbeddings: boolean;
  maxPositionEmbeddings: number;
  bosTokenId: number | null;
  eosTokenIds: number[];
  /** Qwen3_5ForConditionalGeneration's vision tower, when config.json has a vision_config; else null. */
  vision: VisionConfig | null;
  /** The config.json as read, for round-tripping and display. */
  raw: Record<string, unknown>;
}

export type DType = 'F32' | 'F16' | 'BF16';

export interface TensorInfo {
  name: string;
  dtype: DType;
  shape: number[];
  byteLength: number;
}

/** Progress of a long load (download or upload to the GPU). */
export interface LoadProgress {
  phase: 'download' | 'upload' | 'cache';
  file?: string;
  loadedBytes: number;
  totalBytes: number;
  /** Bytes per second over the recent window, when known. */
  rate?: number;
}

/**
 * An opened checkpoint in Hugging Face layout (local folder, HTTP/Hub, browser files, or memory).
 * Tensors are read one at a time so the whole weights file is never in JS memory at once.
 */
export interface Checkpoint {
  config: ModelConfig;
  tensors: Map<string, TensorInfo>;
  /** Raw little-endian bytes of one tensor, exactly as stored. */
  readTensor(name: string): Promise<Uint8Array>;
  /** Any small side file (tokenizer.json, tokenizer_config.json, generation_config.json) as text, or null if absent. */
  readText(file: string): Promise<string | null>;
}

/** A tensor a checkpoint must hold: its canonical name and shape. */
export interface ExpectedTensor {
  name: string;
  shape: number[];
}
