// The engine's public surface. The engine knows nothing about RL (DESIGN.md): it generates,
// scores (per-token log-probs + entropy), backpropagates a given per-token dL/dlogp, and updates
// the trainable parameters. Every RL loss lives in src/rl and reaches the engine as dL/dlogp.

import type { Gpu } from './gpu.ts';
import type { ModelConfig } from '../model/types.ts';
import type { ModelLinear } from '../model/qwen3-tensors.ts';
import type { VisionLoraTarget } from '../model/qwen3_5-vision-tensors.ts';
import type { CheckpointFiles } from '../model/files.ts';

/** A linear LoRA can adapt: Qwen3's seven, and in Qwen3.5 also the Gated DeltaNet's five (src/model/qwen3-tensors.ts). */
export type LoraTarget = ModelLinear;
export type { VisionLoraTarget };

export interface LoraConfig {
  r: number;
  alpha: number;
  targetModules: LoraTarget[];
  /**
   * Qwen3.5's vision tower linears to adapt too (PEFT target_modules suffixes: 'attn.qkv', 'attn.proj',
   * 'mlp.linear_fc1', 'mlp.linear_fc2' of every block, 'merger.linear_fc1', 'merger.linear_fc2');
   * absent or empty = the tower stays frozen. Needs the engine loaded with vision: true.
   */
  visionTargetModules?: VisionLoraTarget[];
  /** Seed of PEFT's init: A ~ kaiming-uniform(a=sqrt(5)), B = 0. */
  seed: number;
  /** PEFT's use_rslora: scale = alpha / √r (default false: alpha / r). */
  useRslora?: boolean;
}

/**
 * `full`: every weight is trained, the vision tower's too when the engine loaded it (as TRL's full
 * fine-tuning of Qwen3_5ForConditionalGeneration); freezeVisionTower keeps the tower's weights fixed
 * (no gradients or AdamW moments for them), harmless without a tower.
 */
export type TrainableMode = { kind: 'lora'; lora: LoraConfig } | { kind: 'full'; freezeVisionTower?: boolean } | { kind: 'none' };

export interface SamplingParams {
  temperature: number; // 1.0 = plain softmax; 0 = greedy
  topP: number; // 1.0 = off
  topK: number; // 0 = off
  seed: number;
}

/** A sequence living in the engine's KV cache; it can be extended later (tool results) without re-prefill. */
export interface SequenceHandle {
  readonly id: number;
  /** Tokens currently in the sequence (prompt + generated + appended). */
  readonly length: number;
}

export interface GenerateItem {
  seq: SequenceHandle;
  /** Tokens appended (prefilled) before sampling: the prompt for a new sequence, tool-suffix ids later. */
  append: number[];
  maxNewTokens: number;
  /**
   * Sampling stream of this item (default: its index in the request). The sampled token at position p
   * is a function of (seed, stream, p, logits) only, so a caller that gives each sequence its own stream
   * gets the same tokens whatever batch the sequence is decoded in, and however its turns are split
   * across generate() calls (continuous batching relies on it).
   */
  stream?: number;
  /** Images among the appended tokens (see DecodeItem.images). */
  images?: DecodeImage[];
}

export interface GenerateOutput {
  tokens: number[];
  /** Log-probs of the sampled tokens under the sampling distribution (after temperature/top-k/top-p). */
  logprobs: number[];
  finishReason: 'stop' | 'length';
}

export interface GenerateRequest {
  items: GenerateItem[];
  sampling: SamplingParams;
  /** Stop after (and including) any of these ids. */
  stopIds: number[];
  /** Use the trainable adapters (default true); false = the reference policy (base, adapters disabled). */
  adapters?: boolean;
  onStep?: (info: { step: number; live: number }) => void;
}

/** One sequence of a decode step (DecodeSession.step). */
export interface DecodeItem {
  seq: SequenceHandle;
  /** Tokens appended (prefilled) before this step samples: the prompt or a tool suffix when a turn starts, else empty. */
  append: number[];
  /**
   * Tokens this sequence may still sample in its turn, this step's included (≥ 1): its KV rows are
   * reserved for all of them at once, so a turn never moves its sequence in the cache.
   */
  maxNewTokens: number;
  /** Sampling stream (see GenerateItem.stream). */
  stream: number;
  /**
   * Images among the appended tokens (Qwen3.5 with its vision tower loaded): each one's
   * t·h·w / merge² <|image_pad|> tokens start at `offset` in `append`. The prefill embeds the tower's
   * features there with get_rope_index's M-RoPE positions, and every later token of the sequence
   * continues at its rope delta, as transformers' generate does.
   */
  images?: DecodeImage[];
}

export interface DecodeImage {
  /** Index in the item's `append` of the image's first placeholder token. */
  offset: number;
  /** The processor's pixel_values of this image. */
  pixelValues: Float32Array;
  grid: [number, number, number];
}

export interface SampledToken {
  token: number;
  /** Log-prob under the sampling distribution (as GenerateOutput.logprobs). */
  logprob: number;
}

export interface DecodeSessionOptions {
  sampling: SamplingParams;
  /** A sequence's tokens end at (and include) the first of these that a chained step samples. */
  stopIds: number[];
  /** Use the trainable adapters (default true). */
  adapters?: boolean;
  /** Most sequences one step feeds (the decode batch cap): the step's buffers are sized for this many once. */
  maxRows: number;
}

/**
 * One decode run its caller feeds step by step: sequences join (with appended tokens) and leave
 * between steps, and each step samples one token for every sequence it is given. A call costs one
 * submit and one awaited read-back; GPU validation errors are collected for the whole run and
 * reported by close() (or by the call that failed). Close it when the run is over, also on failure.
 */
export interface DecodeSession {
  /**
   * `steps` decode steps (default 1, at most DECODE_CHAIN_MAX, at most every item's maxNewTokens) chained
   * on the GPU in one submit, each feeding the token the previous one sampled. Per item: its sampled
   * tokens, `steps` of them, or fewer when a stop id came first (the stop id is the last one). The
   * tokens are those that `steps` single steps would sample.
   */
  step(items: readonly DecodeItem[], steps?: number): Promise<SampledToken[][]>;
  close(): Promise<void>;
}

/**
 * Most decode steps one DecodeSession.step chains: a sequence that stops early still computes the rest
 * of the chain (its tokens are dropped), so longer chains save read-backs but waste more steps.
 */
export const DECODE_CHAIN_MAX = 4;

export interface ScoreSequence {
  /** Full token ids (prompt + completion). */
  ids: number[];
  /** First position that is scored: logprob[t] for t in [scoreFrom, ids.length) is scored from positions < t. */
  scoreFrom: number;
  /**
   * A prompt with images (Qwen3.5 with its vision tower loaded): the processor's pixel_values of every
   * image in order, their (t, h, w) patch grids, where each image's t·h·w / merge² <|image_pad|>
   * tokens start in ids, and the 3×ids.length M-RoPE position ids (transformers' get_rope_index).
   * An <|image_pad|> outside those spans (one the model sampled) is an ordinary text token.
   */
  images?: ScoreImages;
}

export interface ScoreImages {
  pixelValues: Float32Array;
  grids: [number, number, number][];
  /** Index in ids of each image's first placeholder token (one per grid, ascending, spans not overlapping). */
  offsets: number[];
  positions: [number[], number[], number[]];
}

export interface ScoreRequest {
  sequences: ScoreSequence[];
  /** Logits are divided by this before log_softmax (TRL scores at the sampling temperature). */
  temperature: number;
  adapters?: boolean;
  /**
   * A stop check (src/engine/stoppable.ts passes the run's): asked at every layer boundary, once the GPU
   * finished the layer before the one in flight; true = the call rejects with an AbortError there, its
   * GPU work done, so stopping waits for two layers rather than the whole call (thousands of tokens
   * through every layer). The engine stays usable; a backward cut short leaves a part of its gradients
   * accumulated: zeroGrad before the next backward, and never step() on them. The call then submits one
   * layer at a time, one queued ahead of the one awaited (the GPU never waits on the check); without a
   * check it is one submit as before.
   */
  stopped?: () => boolean;
}

export interface ScoreOutput {
  /** One array per sequence, length ids.length - scoreFrom. */
  logprobs: Float32Array[];
  entropy: Float32Array[];
}

export interface BackwardRequest extends ScoreRequest {
  /** dL/dlogp per scored token (same shapes as ScoreOutput.logprobs). Gradients accumulate until step(). */
  dLdLogp: Float32Array[];
  /**
   * Optional dL/dentropy per scored token (same shapes as dLdLogp): adds Σ dLdEntropy·entropy to L,
   * the entropy being that of ScoreOutput.entropy (softmax of logits / temperature).
   */
  dLdEntropy?: Float32Array[];
}

export interface OptimizerConfig {
  learningRate: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** Global-norm clip; 0 or Infinity = off. */
  maxGradNorm: number;
}

export interface StepResult {
  /** Global gradient norm before clipping. */
  gradNorm: number;
  step: number;
}

/** A named tensor for save/load/export (f32 host copy). */
export interface NamedTensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

export interface Engine {
  readonly config: ModelConfig;
  readonly gpu: Gpu;
  /** Storage type of the frozen weights. */
  readonly weightDtype: 'f16' | 'f32';

  newSequence(): SequenceHandle;
  releaseSequence(seq: SequenceHandle): void;
  generate(req: GenerateRequest): Promise<GenerateOutput[]>;
  /** A decode session for a scheduler that changes the batch between steps (continuous batching). */
  openDecode(opts: DecodeSessionOptions): DecodeSession;

  score(req: ScoreRequest): Promise<ScoreOutput>;
  backward(req: BackwardRequest): Promise<void>;
  zeroGrad(): void;
  /** AdamW on the trainable parameters with the given lr (the schedule lives with the caller). */
  step(opt: OptimizerConfig): Promise<StepResult>;

  setTrainable(mode: TrainableMode): void;
  /** Trainable weights + optimizer moments + step count. */
  saveState(): Promise<{ tensors: NamedTensor[]; step: number }>;
  loadState(state: { tensors: NamedTensor[]; step: number }): Promise<void>;
  /** PEFT adapter: adapter_config.json object + tensors named as PEFT names them. */
  exportAdapter(baseModelName: string): Promise<{ adapterConfig: Record<string, unknown>; tensors: NamedTensor[] }>;
  /**
   * Loads a PEFT LoRA adapter (ours or one PEFT trained: a folder, picked files or in-memory files
   * with adapter_config.json + adapter_model.safetensors) as the trainable LoRA; generate/score then
   * run base + adapter. Fresh AdamW moments, step 0.
   */
  loadAdapter(source: AdapterSource): Promise<PeftLoraSettings>;
  /** Gradients of the trainable parameters under the checkpoint's own names (for `score --grads`). */
  readGrads(): Promise<NamedTensor[]>;

  destroy(): void;
}

/** A PEFT LoRA adapter's settings (adapter_config.json), as the engine applies them. */
export interface PeftLoraSettings {
  r: number;
  alpha: number;
  targetModules: LoraTarget[];
  /** Vision tower linears adapted too (LoraConfig.visionTargetModules); absent when none. */
  visionTargetModules?: VisionLoraTarget[];
  /** Rank-stabilised LoRA: scale = alpha / √r instead of alpha / r. */
  useRslora: boolean;
}

/** Anything a PEFT adapter can be read from: a folder path (Node), picked files, in-memory files. */
export type AdapterSource = string | CheckpointFiles | ReadonlyMap<string, Uint8Array> | Iterable<File>;
