// GEMM FLOPs of a Qwen3.5-0.8B vision-language LoRA step by part, at the real shapes (no model, no GPU):
// what `webgrpo bench train --vision on` measures at scaled-down shapes on CPU adapters, counted where
// a real GPU runs it. Same counts as the bench (trainStepFlops, towerStepFlops), same sequence layout
// (visionTrainBatch). `npx tsx bench/engine/vision-counts.ts [seqLen] [imageSizes…]`, default
// 512 text tokens (256 scored), one image per sequence of 256x256, 512x512 and 1024x1024 pixels; r = 16.
import { parseConfig } from '../../src/model/config.ts';
import type { VisionConfig } from '../../src/model/types.ts';
import { trainStepFlops } from './train-step.ts';
import { imageGrid, towerStepFlops, visionTrainBatch } from './vision-train-step.ts';

/** config.json of Qwen/Qwen3.5-0.8B, the fields the counts read (as tests/model/config.test.ts). */
const QWEN3_5_0_8B_VL = {
  architectures: ['Qwen3_5ForConditionalGeneration'], model_type: 'qwen3_5', image_token_id: 248056, tie_word_embeddings: true,
  text_config: {
    full_attention_interval: 4, head_dim: 256, hidden_size: 1024, intermediate_size: 3584,
    layer_types: Array.from({ length: 24 }, (_, i) => ((i + 1) % 4 === 0 ? 'full_attention' : 'linear_attention')),
    linear_conv_kernel_dim: 4, linear_key_head_dim: 128, linear_num_key_heads: 16, linear_num_value_heads: 16, linear_value_head_dim: 128,
    model_type: 'qwen3_5_text', num_attention_heads: 8, num_hidden_layers: 24, num_key_value_heads: 2, rms_norm_eps: 1e-6, vocab_size: 248320,
    rope_parameters: { mrope_interleaved: true, mrope_section: [11, 11, 10], rope_type: 'default', rope_theta: 10000000, partial_rotary_factor: 0.25 },
  },
  vision_config: { depth: 12, hidden_size: 768, intermediate_size: 3072, num_heads: 12, out_hidden_size: 1024, model_type: 'qwen3_5' },
};

export function visionStepShares(seqLen: number, imageSize: string, r = 16) {
  const cfg = parseConfig(QWEN3_5_0_8B_VL);
  const v = cfg.vision as VisionConfig;
  const grid = imageGrid(v, imageSize);
  const batch = visionTrainBatch(v, 1, seqLen, 1, grid);
  const lm = trainStepFlops(cfg, batch.tokensPerSequence, batch.scoredTokens, 'lora', r).matmulFlops;
  const arm = (trained: boolean) => {
    const t = towerStepFlops(v, [grid], r, trained);
    const total = lm + t.forward + t.backward;
    return { gflop: total / 1e9, towerForward: t.forward / total, towerBackward: t.backward / total, towerAttentionGflop: t.attentionForward / 1e9 };
  };
  return { imageSize, patches: grid[0] * grid[1] * grid[2], imageTokens: batch.imageTokensPerSequence, tokens: batch.tokensPerSequence, lmGflop: lm / 1e9, frozen: arm(false), lora: arm(true) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [seqLen = '512', ...sizes] = process.argv.slice(2);
  for (const size of sizes.length ? sizes : ['256x256', '512x512', '1024x1024']) console.log(JSON.stringify(visionStepShares(Number(seqLen), size)));
}
