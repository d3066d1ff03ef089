// Upper bounds on the sizes a config.json may declare, checked as each field is read, before anything
// is allocated or any loop over layers runs: a hostile `num_hidden_layers: 1e6` otherwise builds
// per-layer tables and tensor lists for minutes and gigabytes before any other check can fail.
// Each bound is several times the largest dense Qwen3 / Qwen3.5 (or any public dense model) has, so
// no real checkpoint comes near one; the memory plan (src/engine/memory-plan.ts) then decides
// whether a plausible model fits the adapter.

/** Decoder fields (top level or text_config) → their bound. */
export const TEXT_CONFIG_LIMITS: Readonly<Record<string, number>> = {
  num_hidden_layers: 1024, // Qwen3-235B-A22B: 94
  hidden_size: 65_536, // Qwen3-32B: 5120
  intermediate_size: 262_144, // Qwen3-32B: 25600
  vocab_size: 2_097_152, // Qwen3.5: 248320
  num_attention_heads: 1024, // Qwen3-32B: 64
  num_key_value_heads: 1024,
  head_dim: 4096, // Qwen3.5: 256
  max_position_embeddings: 16_777_216, // Qwen3.5: 262144
  linear_num_key_heads: 1024,
  linear_num_value_heads: 1024,
  linear_key_head_dim: 4096,
  linear_value_head_dim: 4096,
  linear_conv_kernel_dim: 64,
};

/** vision_config fields → their bound (Qwen3.5's tower: depth 27, hidden 1152, 2304 positions). */
export const VISION_CONFIG_LIMITS: Readonly<Record<string, number>> = {
  depth: 1024,
  hidden_size: 65_536,
  intermediate_size: 262_144,
  num_heads: 1024,
  in_channels: 16,
  patch_size: 1024,
  spatial_merge_size: 64,
  temporal_patch_size: 64,
  out_hidden_size: 65_536,
  num_position_embeddings: 1_048_576,
};

/** The error for a field over its bound, or null; `field` is the name as the file spells it. */
export function overLimit(field: string, value: number, limits: Readonly<Record<string, number>>, key = field): string | null {
  const limit = limits[key];
  if (limit === undefined || value <= limit) return null;
  return `${field} ${value} is over webgrpo's limit of ${limit} (no real model comes near it; refused before anything is allocated)`;
}
