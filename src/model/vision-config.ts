// config.json `vision_config` (+ the top-level image token ids and the text rotary's mrope_section) →
// VisionConfig, for Qwen3_5ForConditionalGeneration (docs/qwen3_5.md §Vision). Defaults are
// transformers 5.18's Qwen3_5VisionConfig / Qwen3_5Config ones, so a sparse file means what it means there.

import { overLimit, VISION_CONFIG_LIMITS } from './config-limits.ts';
import type { VisionConfig } from './types.ts';

type Json = Record<string, unknown>;

const VISION_DEFAULTS = {
  depth: 27,
  hidden_size: 1152,
  hidden_act: 'gelu_pytorch_tanh',
  intermediate_size: 4304,
  num_heads: 16,
  in_channels: 3,
  patch_size: 16,
  spatial_merge_size: 2,
  temporal_patch_size: 2,
  out_hidden_size: 3584,
  num_position_embeddings: 2304,
  rope_theta: 10000,
} as const;

const TOKEN_DEFAULTS = {
  image_token_id: 248056,
  video_token_id: 248057,
  vision_start_token_id: 248053,
  vision_end_token_id: 248054,
} as const;

/** transformers' Qwen3_5TextRotaryEmbedding default when rope_parameters has no mrope_section. */
const DEFAULT_MROPE_SECTION: [number, number, number] = [11, 11, 10];

/** Hard-coded in transformers' Qwen3_5VisionBlock and Qwen3_5VisionPatchMerger (nn.LayerNorm(eps=1e-6)). */
const LAYER_NORM_EPS = 1e-6;

/**
 * Parses the vision part of a Qwen3_5ForConditionalGeneration config. `textHidden` is the text
 * model's hidden_size (the merger must produce it), `vocabSize` bounds the token ids, and
 * `textRope` is the text config's rope_parameters (for mrope_section).
 */
export function parseVisionConfig(
  raw: Json, textHidden: number, vocabSize: number, textRope: Json | null | undefined, fail: (msg: string) => never,
): VisionConfig {
  const v = raw.vision_config;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return fail(`vision_config must be an object, got ${JSON.stringify(v)}`);
  const vc = v as Json;
  if (vc.model_type !== undefined && vc.model_type !== 'qwen3_5_vision' && vc.model_type !== 'qwen3_5') {
    fail(`vision_config.model_type ${JSON.stringify(vc.model_type)} is not qwen3_5_vision`);
  }
  // Qwen3-VL's deepstack feeds intermediate vision layers into the decoder; Qwen3.5's tower has none.
  if (Array.isArray(vc.deepstack_visual_indexes) && vc.deepstack_visual_indexes.length > 0) {
    fail(`vision_config.deepstack_visual_indexes ${JSON.stringify(vc.deepstack_visual_indexes)} is not supported (Qwen3-VL's deepstack; Qwen3.5 has none)`);
  }
  const int = (key: keyof typeof VISION_DEFAULTS): number => {
    const x = vc[key] ?? VISION_DEFAULTS[key];
    // transformers allows [h, w] patch sizes in the type, but the patch embedding and the processor use one number.
    if (typeof x !== 'number' || !Number.isSafeInteger(x) || x <= 0) return fail(`vision_config.${key} must be a positive integer, got ${JSON.stringify(x)}`);
    const tooBig = overLimit(`vision_config.${key}`, x, VISION_CONFIG_LIMITS, key);
    if (tooBig) return fail(tooBig);
    return x;
  };
  const depth = int('depth');
  const hiddenSize = int('hidden_size');
  const numHeads = int('num_heads');
  if (hiddenSize % numHeads !== 0) fail(`vision_config.hidden_size (${hiddenSize}) is not divisible by num_heads (${numHeads})`);
  const headDim = hiddenSize / numHeads;
  // The axial rotary splits each head into row and column halves of headDim/4 frequencies each.
  if (headDim % 4 !== 0) fail(`vision head_dim ${headDim} (hidden_size / num_heads) must be a multiple of 4 for the 2-D rotary`);
  const numPositionEmbeddings = int('num_position_embeddings');
  const side = Math.round(Math.sqrt(numPositionEmbeddings));
  if (side * side !== numPositionEmbeddings) fail(`vision_config.num_position_embeddings (${numPositionEmbeddings}) must be a square (a side×side grid)`);
  const outHiddenSize = int('out_hidden_size');
  if (outHiddenSize !== textHidden) fail(`vision_config.out_hidden_size (${outHiddenSize}) must equal the text model's hidden_size (${textHidden})`);
  const act = vc.hidden_act ?? VISION_DEFAULTS.hidden_act;
  if (act !== 'gelu_pytorch_tanh' && act !== 'gelu') fail(`vision_config.hidden_act ${JSON.stringify(act)} is not supported (gelu_pytorch_tanh or gelu)`);

  const rope = vc.rope_parameters as Json | null | undefined;
  let ropeTheta: unknown = vc.rope_theta ?? VISION_DEFAULTS.rope_theta;
  if (rope !== undefined && rope !== null) {
    if (typeof rope !== 'object') fail('vision_config.rope_parameters must be an object');
    if (rope.rope_type !== undefined && rope.rope_type !== 'axial') fail(`vision_config.rope_parameters.rope_type '${String(rope.rope_type)}' is not supported (only 'axial')`);
    ropeTheta = rope.rope_theta ?? ropeTheta;
  }
  if (typeof ropeTheta !== 'number' || !(ropeTheta > 0)) fail(`vision_config rope_theta must be a positive number, got ${JSON.stringify(ropeTheta)}`);

  const tokenId = (key: keyof typeof TOKEN_DEFAULTS): number => {
    const x = raw[key] ?? TOKEN_DEFAULTS[key];
    if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0 || x >= vocabSize) {
      return fail(`${key} ${JSON.stringify(x)} is not a token id below vocab_size ${vocabSize}`);
    }
    return x;
  };

  let mropeSection = DEFAULT_MROPE_SECTION;
  const section = textRope?.mrope_section;
  if (section !== undefined && section !== null) {
    if (!Array.isArray(section) || section.length !== 3 || section.some((x) => typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0)) {
      fail(`text_config.rope_parameters.mrope_section must be three non-negative integers (temporal, height, width), got ${JSON.stringify(section)}`);
    }
    mropeSection = section as [number, number, number];
  }

  return {
    depth,
    hiddenSize,
    intermediateSize: int('intermediate_size'),
    numHeads,
    headDim,
    inChannels: int('in_channels'),
    patchSize: int('patch_size'),
    temporalPatchSize: int('temporal_patch_size'),
    spatialMergeSize: int('spatial_merge_size'),
    outHiddenSize,
    numPositionEmbeddings,
    positionGridSide: side,
    hiddenAct: act as VisionConfig['hiddenAct'],
    ropeTheta: ropeTheta as number,
    layerNormEps: LAYER_NORM_EPS,
    imageTokenId: tokenId('image_token_id'),
    videoTokenId: tokenId('video_token_id'),
    visionStartTokenId: tokenId('vision_start_token_id'),
    visionEndTokenId: tokenId('vision_end_token_id'),
    mropeSection,
  };
}
