// The vision part of `make-tiny-model --arch qwen3_5 --vision`: a tiny Qwen3.5 vision tower's
// vision_config, its deterministic random tensors, and the processor config transformers 5 writes
// (processor_config.json), so the tiny folder is a Qwen3_5ForConditionalGeneration that our loader,
// image processor and transformers all read.

import type { ExpectedTensor } from './types.ts';

/** The tower's shape: depth 2, width 32, 2 heads, 16-px patches of 2 frames, 2×2 merge, a 4×4 position grid. */
export const TINY_VISION = {
  depth: 2,
  hidden_size: 32,
  intermediate_size: 64,
  num_heads: 2,
  in_channels: 3,
  patch_size: 16,
  temporal_patch_size: 2,
  spatial_merge_size: 2,
  num_position_embeddings: 16,
  hidden_act: 'gelu_pytorch_tanh',
} as const;

/** Pixel bounds of the tiny processor: a 128×128 image stays 128×128 (64 patches, 16 image tokens). */
export const TINY_MIN_PIXELS = 32 * 32;
export const TINY_MAX_PIXELS = 128 * 128;

/**
 * transformers' interleaved M-RoPE split for `n` rotary frequencies: as even as possible, temporal and
 * height first (32 frequencies give Qwen3.5's own [11, 11, 10]).
 */
export function mropeSectionFor(n: number): [number, number, number] {
  return [Math.ceil(n / 3), Math.ceil((n - 1) / 3), Math.floor(n / 3)];
}

/** The tower hyper-parameters a generated model may set (the rest stay TINY_VISION's: patch 16, 2 frames, 2×2 merge). */
export interface TinyVisionShape {
  depth?: number;
  hidden_size?: number;
  intermediate_size?: number;
  num_heads?: number;
  /** A square: the learned position grid's side² (Qwen3.5's 2304 = 48²). */
  num_position_embeddings?: number;
}

/** vision_config as transformers 5.18 writes it (keys sorted), the tiny tower's shape unless `shape` overrides it. */
export function tinyVisionConfigJson(outHidden: number, shape: TinyVisionShape = {}): Record<string, unknown> {
  const c: Record<string, unknown> = {
    ...TINY_VISION,
    ...shape,
    initializer_range: 0.02,
    model_type: 'qwen3_5_vision',
    out_hidden_size: outHidden,
    rope_parameters: { rope_theta: 10000.0, rope_type: 'axial' },
  };
  return Object.fromEntries(Object.entries(c).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The image token ids the config names, from the tokenizer's added tokens. */
export function visionTokenIds(addedTokenIds: (content: string) => number): Record<string, number> {
  return {
    image_token_id: addedTokenIds('<|image_pad|>'),
    video_token_id: addedTokenIds('<|video_pad|>'),
    vision_end_token_id: addedTokenIds('<|vision_end|>'),
    vision_start_token_id: addedTokenIds('<|vision_start|>'),
  };
}

/** processor_config.json as transformers 5.18's Qwen3VLProcessor.save_pretrained writes its image part. */
export function tinyProcessorConfigJson(): Record<string, unknown> {
  return {
    image_processor: {
      do_convert_rgb: true,
      do_normalize: true,
      do_rescale: true,
      do_resize: true,
      image_mean: [0.5, 0.5, 0.5],
      image_processor_type: 'Qwen2VLImageProcessor',
      image_std: [0.5, 0.5, 0.5],
      merge_size: TINY_VISION.spatial_merge_size,
      patch_size: TINY_VISION.patch_size,
      resample: 3,
      rescale_factor: 1 / 255,
      size: { longest_edge: TINY_MAX_PIXELS, shortest_edge: TINY_MIN_PIXELS },
      temporal_patch_size: TINY_VISION.temporal_patch_size,
    },
    processor_class: 'Qwen3VLProcessor',
  };
}

/**
 * Random values of one vision tensor from a standard-normal stream: LayerNorm scales near 1, biases
 * and shifts small, matrices N(0, 1/fan_in) so activations keep their scale through the wide patch
 * embedding, the position grid N(0, 0.02) like the text embedding.
 */
export function tinyVisionTensorValues(t: ExpectedTensor, normal: () => number): Float32Array {
  const count = t.shape.reduce((p, d) => p * d, 1);
  const out = new Float32Array(count);
  const isNormScale = /norm\d?\.weight$/.test(t.name);
  const std = t.shape.length === 1 ? 0.1 : t.name.endsWith('pos_embed.weight') ? 0.02 : 1 / Math.sqrt(count / t.shape[0]!);
  for (let i = 0; i < count; i++) out[i] = (isNormScale ? 1 : 0) + std * normal();
  return out;
}
