// What the engine's forward side hands to the training side (src/engine/train, H4): the GPU, the
// parameter table, the kernel cache, the command recorder, the packed-token layout, and the per-layer
// forward encoder whose activation struct holds every intermediate a backward pass needs.
//
// Conventions shared by every kernel (forward and backward):
// - All bindings live in @group(0). A `var<uniform>` params struct, when present, is @binding(0);
//   storage buffers follow. Layouts are derived from the WGSL text (see kernel-cache.ts), so a
//   kernel may leave a declared binding unused without breaking its bind group.
// - `{{NAME}}` placeholders in a kernel are replaced by `getPipeline(file, constants)` before
//   compilation (types, booleans, array sizes); a placeholder left unfilled is an error.
// - Activations, LoRA adapters and all logits/statistics are f32. Frozen matrices are 'f32' or
//   'f16'; an 'f16' tensor is IEEE half values packed two per u32 word (element 2i in the low half),
//   byte-identical to `array<f16>`. Every kernel that reads one (forward matmuls and embedding,
//   the backward GEMM's B operand, the f16→f32 promotion) takes its loads from `weightLoads`
//   (weight-loads.ts) under the one switch `kernelVariants.halfLoads`: `array<u32>` with
//   `unpack2x16float`, or native `array<f16>` (needs `shader-f16`). 1-D tensors (norm weights) are always f32.

import type { Gpu } from './gpu.ts';
import type { HalfLoads } from './weight-loads.ts';
import type { VisionTowerConfig } from './vision/config.ts';
import type { GridThw } from './vision/inputs.ts';
import type { ModelConfig } from '../model/types.ts';
import type { ModelLinear } from '../model/qwen3-tensors.ts';
import type { Recorder } from './recorder.ts';

/** One row-slice of a tensor held in its own GPU buffer: rows [rowStart, rowStart + rows). */
/** One token of a packed batch (see PackedBatch): which K/V rows it attends to and where its k/v go. */
export interface PackedToken {
  token: number;
  position: number;
  kvBase: number;
  kvSlot: number;
  seq: number;
  /**
   * M-RoPE positions (temporal, height, width) of a prompt with images (transformers' 3×T
   * position_ids); absent = all three equal `position`. `position` itself stays the token's index in
   * its sequence: attention's causal extent is by index, only the rotary angles use these.
   */
  mrope?: readonly [number, number, number];
}

/** Merged image embeddings to splice into the text embeddings: embeds row i → packed row rows[i]. */
export interface ImageSplice {
  embeds: GPUBuffer;
  /** (count) u32 packed rows of the images' token spans (placed by offset, not found by id). */
  rows: GPUBuffer;
  count: number;
}

/** Write modes of matmul.wgsl. */
export const enum MatmulMode {
  Overwrite = 0,
  Accumulate = 1,
  Residual = 2,
}

/**
 * y[:, yOffset .. yOffset+N) (row stride ldy) = scale · x·W[wRow0 .. wRow0+N)ᵀ, with mode
 * overwrite / accumulate / residual. W is a raw buffer of `wDtype` holding rows of length K.
 */
export interface MatmulArgs {
  x: GPUBuffer; w: GPUBuffer; wDtype: 'f16' | 'f32'; y: GPUBuffer; M: number; N: number; K: number;
  wRow0?: number; ldy?: number; yOffset?: number; scale?: number; mode?: MatmulMode; residual?: GPUBuffer; label?: string;
  /** Kernel variant (default: the engine's). */
  variant?: MatmulVariant;
  /** How f16 W is read (default: the engine's). */
  halfLoads?: HalfLoads;
}

/** Qwen3.5's vision tower as the forward uses it (vision/tower.ts). */
export interface VisionEncoder {
  readonly config: VisionTowerConfig;
  /** Records the tower over every grid; returns its merged rows (rows, out_hidden_size) in a scratch buffer. */
  encode(rec: Recorder, pixelValues: Float32Array, grids: readonly GridThw[], adapters?: boolean): { embeds: GPUBuffer; rows: number };
  destroy(): void;
}

export interface ParamChunk {
  buffer: GPUBuffer;
  rowStart: number;
  rows: number;
}

/** One Hugging Face tensor on the GPU. `chunks` has one entry unless the tensor exceeds a binding. */
export interface ParamEntry {
  /** The checkpoint's own name, e.g. `model.layers.3.mlp.up_proj.weight`. */
  name: string;
  /** [out, in] for matrices (nn.Linear layout), [n] for norm weights. */
  shape: number[];
  dtype: 'f16' | 'f32';
  chunks: ParamChunk[];
}

/** A LoRA adapter of one linear: y += scale · B·(A·x). Buffers are f32 and owned by the train side. */
export interface LoraAdapter {
  a: GPUBuffer; // (r, in)
  b: GPUBuffer; // (out, r)
  r: number;
  /** alpha / r */
  scale: number;
}

/**
 * Several sequences packed into one token stream of T rows. Token t belongs to one sequence, sits at
 * `position` inside it, and attends (causally) to the keys at rows `kvBase .. kvBase + position` of
 * the K/V buffer the layer reads: the packed `acts.k/acts.v` when scoring (kvBase = the row where
 * its sequence starts in the pack), or the KV cache when generating (kvBase = the sequence's cache
 * region). Attention never crosses sequences.
 */
export interface PackedBatch {
  T: number;
  tokens: GPUBuffer; // (T) u32 token ids
  /** (T, 4) u32 per token: [kvBase, position, kvSlot, seqIndex]. kvSlot = row its k/v is written to in the KV cache (generation only). */
  meta: GPUBuffer;
  /** (T, d/2, 2) f32 per token: cos, sin of RoPE angle position·inv_freq[j] (computed on the CPU in f32, as transformers does). */
  rope: GPUBuffer;
  /**
   * (sequences, 4) u32 [first row, rows, state slot, first backward checkpoint] (linear-attention
   * layers, see linear-attention-plan.ts); only for models that have them.
   */
  seqTable?: GPUBuffer;
  /** CPU copies, in pack order. */
  seqStarts: number[];
  seqLengths: number[];
  positions: Uint32Array;
}

/**
 * Every intermediate of one decoder layer over T packed tokens (D hidden, H query heads, K kv
 * heads, d head_dim, F intermediate). `encodeLayerForward` reads `x` and writes everything else.
 */
export interface LayerActs {
  T: number;
  x: GPUBuffer; //      (T, D) layer input (the residual stream)
  a: GPUBuffer; //      (T, D) rmsnorm(x; input_layernorm)
  rstd1: GPUBuffer; //  (T) 1/sqrt(mean(x²)+eps) of that norm
  qRaw: GPUBuffer; //   (T, H·d) q_proj·a, before q_norm
  kRaw: GPUBuffer; //   (T, K·d) k_proj·a, before k_norm
  qRstd: GPUBuffer; //  (T·H) per-head rstd of q_norm
  kRstd: GPUBuffer; //  (T·K) per-head rstd of k_norm
  q: GPUBuffer; //      (T, H·d) after q_norm and RoPE
  k: GPUBuffer; //      (T, K·d) after k_norm and RoPE
  v: GPUBuffer; //      (T, K·d) v_proj·a (no norm, no RoPE)
  attn: GPUBuffer; //   (T, H·d) softmax(q·kᵀ/sqrt(d))·v per head, before o_proj
  lse: GPUBuffer; //    (T·H) log-sum-exp of the scaled scores of each (token, head), for attention backward
  xMid: GPUBuffer; //   (T, D) x + o_proj·attn
  b: GPUBuffer; //      (T, D) rmsnorm(xMid; post_attention_layernorm)
  rstd2: GPUBuffer; //  (T)
  gate: GPUBuffer; //   (T, F) gate_proj·b
  up: GPUBuffer; //     (T, F) up_proj·b
  hidden: GPUBuffer; // (T, F) silu(gate) ⊙ up
  xOut: GPUBuffer; //   (T, D) xMid + down_proj·hidden: the next layer's input
  // Qwen3.5 only (layerActsCounts allocates these when the config has them):
  qGate?: GPUBuffer; //     (T, H·2d) q_proj output with the attention output gate: per head d query dims, then d gate dims
  attnGated?: GPUBuffer; // (T, H·d) attn ⊙ σ(gate), o_proj's input
  // Gated DeltaNet layers (C = 2·Hk·dk + Hv·dv conv channels):
  laQkv?: GPUBuffer; //     (T, C) in_proj_qkv·a, the conv's input
  laConv?: GPUBuffer; //    (T, C) silu(causal conv): q, k, v columns
  laQk?: GPUBuffer; //      (T, 2·Hk·dk) l2-normalized q heads, then k heads
  laInv?: GPUBuffer; //     (T·2·Hk) their 1/‖·‖
  laZ?: GPUBuffer; //       (T, Hv·dv) in_proj_z·a, the norm's gate
  laA?: GPUBuffer; //       (T, Hv) in_proj_a·a
  laB?: GPUBuffer; //       (T, Hv) in_proj_b·a
  laGb?: GPUBuffer; //      (T, Hv, 2) decay g and write strength β
  laCore?: GPUBuffer; //    (T, Hv·dv) the delta rule's output
  laRstd?: GPUBuffer; //    (T·Hv) rstd of the gated norm
  laNormed?: GPUBuffer; //  (T, Hv·dv) gated norm output, out_proj's input
}

/** The KV cache a generating forward writes into and attends over (per layer, f32 rows of K·d). */
export interface KvTarget {
  k: GPUBuffer[]; // per layer (capacityRows, K·d)
  v: GPUBuffer[]; // per layer (capacityRows, K·d)
  /** Element type of the rows: f16 halves the cache where shader-f16 exists (memory-plan.ts chooseKvDtype). */
  dtype: 'f16' | 'f32';
}

export interface LayerForwardOptions {
  /** Apply `internals.lora` adapters (false = the reference policy). */
  adapters: boolean;
  /** Write k/v into this cache at meta.kvSlot and attend over it; absent = attend over acts.k/acts.v. */
  kv?: KvTarget;
  /**
   * Qwen3.5's linear-attention layers, when generating: start each sequence from its saved conv and
   * recurrent state (slot = its seqTable entry's state slot) and save the new one; absent = every
   * sequence starts fresh and nothing is saved (scoring).
   */
  linearState?: LinearStateTarget;
}

/** Per layer (entries of full-attention layers unused): the Gated DeltaNet states of every slot. */
export interface LinearStateTarget {
  conv: GPUBuffer[]; //      per layer (slots, C, K−1) f32: the last K−1 conv inputs
  recurrent: GPUBuffer[]; // per layer (slots, Hv, dk, dv) f32
}

export type MatmulVariant = 'blocked' | 'tiled';
/** 'thread': one invocation per (token, head), best on software adapters; 'workgroup': one workgroup per (token, head), for GPUs. */
export type AttentionVariant = 'thread' | 'workgroup';

/**
 * The gated delta rule over passes of several tokens per sequence (scoring, prefill, the backward's
 * recompute): 'chunked' (gated_delta_chunked.wgsl, the WY form) or 'recurrent' (gated_delta.wgsl,
 * token by token). One-token decode steps always take the recurrent kernel.
 */
export type DeltaRuleVariant = 'chunked' | 'recurrent';

export interface KernelVariants {
  matmul: MatmulVariant;
  attention: AttentionVariant;
  halfLoads: HalfLoads;
  deltaRule: DeltaRuleVariant;
}

export interface EngineInternals {
  gpu: Gpu;
  config: ModelConfig;
  /** Every parameter by HF name (tied models have no `lm_head.weight` entry: the head is the embedding). */
  params: Map<string, ParamEntry>;
  /** The kernels chosen for this adapter; the training side follows `halfLoads` (how f16 weights are read). */
  readonly kernelVariants: KernelVariants;
  /** Largest bytes of one parameter buffer (the device's binding limit, or the loader's lower cap). */
  maxBindingBytes: number;
  /** LoRA adapters by the HF name of the base linear's weight; set by the train side, read by every linear. */
  lora: Map<string, LoraAdapter>;
  /** Compiled, cached pipeline of `src/engine/kernels/<file>` with `{{NAME}}` placeholders filled. */
  getPipeline(file: string, constants?: Record<string, string | number | boolean>): GPUComputePipeline;
  /** A labelled storage buffer (usage STORAGE | COPY_SRC | COPY_DST), zero-filled. */
  createBuffer(label: string, byteSize: number): GPUBuffer;
  /**
   * A new command recorder (dispatches + copies, one submit); errorScope false: validation errors go to
   * the caller's open scope; `stopped`: a stop check asked at each layer boundary (Recorder.boundary),
   * the recorder then submitting layer by layer.
   */
  recorder(label: string, opts?: { errorScope?: boolean; stopped?: () => boolean }): Recorder;
  /** Allocates a LayerActs for up to T tokens (label prefix for debugging), from `make` when given (a caller's buffer pool). */
  createLayerActs(T: number, label: string, make?: (role: string, bytes: number) => GPUBuffer): LayerActs;
  /** Uploads a packed batch of sequences (scoring layout: kvBase = start of the sequence in the pack), into `make`'s buffers when given. */
  packSequences(sequences: number[][], make?: (role: string, bytes: number) => GPUBuffer): PackedBatch;
  /** Uploads packed tokens (any layout; M-RoPE positions where given) into `make`'s buffers. */
  packTokens(tokens: PackedToken[], make: (role: string, bytes: number) => GPUBuffer): PackedBatch;
  /** Records the embedding gather of batch.tokens into `out` (T, D). */
  encodeEmbedding(rec: Recorder, batch: PackedBatch, out: GPUBuffer): void;
  /** Qwen3.5's vision tower when loaded (prompts with images), else null. */
  readonly vision: VisionEncoder | null;
  /** Records one matmul (the kernel every linear runs on). */
  encodeMatmul(rec: Recorder, a: MatmulArgs): void;
  /** A reusable scratch buffer of at least `byteSize` bytes, by role. */
  scratchBuffer(role: string, byteSize: number): GPUBuffer;
  /** Records the image embeddings' copy into the embedded rows `x` (T, D) at the image tokens. */
  encodeImageSplice(rec: Recorder, images: ImageSplice, x: GPUBuffer): void;
  /** Records one decoder layer: reads acts.x, writes every other field of acts. */
  encodeLayerForward(rec: Recorder, layer: number, acts: LayerActs, batch: PackedBatch, opts: LayerForwardOptions): void;
  /**
   * Records y = x·Wᵀ (+ LoRA) for a linear of `layer`, with an optional residual: y = residual + x·Wᵀ.
   * x (rows, in), y (rows, out). The single path every linear of the model goes through.
   */
  encodeLinear(rec: Recorder, layer: number, target: ModelLinear, x: GPUBuffer, y: GPUBuffer, rows: number,
    opts: { adapters: boolean; residual?: GPUBuffer }): void;
  /** HF weight name of a linear: `model.layers.{layer}.{self_attn|mlp}.{target}.weight`. */
  linearName(layer: number, target: ModelLinear): string;
}
