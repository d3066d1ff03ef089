import { describe, expect, it } from 'vitest';
import { declaredDtype, parseConfig, parseConfigText } from '../../src/model/config.ts';

// Qwen3-0.6B's published config.json (shared/specs/qwen3.md §2).
const QWEN3_06B_V4 = {
  architectures: ['Qwen3ForCausalLM'], attention_bias: false, attention_dropout: 0.0, bos_token_id: 151643,
  eos_token_id: 151645, head_dim: 128, hidden_act: 'silu', hidden_size: 1024, initializer_range: 0.02,
  intermediate_size: 3072, max_position_embeddings: 40960, max_window_layers: 28, model_type: 'qwen3',
  num_attention_heads: 16, num_hidden_layers: 28, num_key_value_heads: 8, rms_norm_eps: 1e-6, rope_scaling: null,
  rope_theta: 1000000, sliding_window: null, tie_word_embeddings: true, torch_dtype: 'bfloat16',
  transformers_version: '4.51.0', use_cache: true, use_sliding_window: false, vocab_size: 151936,
};

// The same config as transformers 5 re-serializes it.
const { rope_theta: _theta, torch_dtype: _dtype, rope_scaling: _scaling, ...rest } = QWEN3_06B_V4;
const QWEN3_06B_V5 = {
  ...rest, dtype: 'bfloat16', layer_types: Array(28).fill('full_attention'), pad_token_id: null,
  rope_parameters: { rope_theta: 1000000, rope_type: 'default' },
};

describe('parseConfig', () => {
  it('reads Qwen3-0.6B in both the transformers 4 and 5 forms to the same ModelConfig', () => {
    for (const raw of [QWEN3_06B_V4, QWEN3_06B_V5]) {
      const c = parseConfig(raw);
      expect({ ...c, raw: undefined }).toEqual({
        vocabSize: 151936, hiddenSize: 1024, intermediateSize: 3072, numLayers: 28, numHeads: 16, numKvHeads: 8,
        headDim: 128, rmsNormEps: 1e-6, ropeTheta: 1000000, tieWordEmbeddings: true, maxPositionEmbeddings: 40960,
        bosTokenId: 151643, eosTokenIds: [151645], raw: undefined,
        architecture: 'qwen3', layerTypes: Array(28).fill('full_attention'), linearAttention: null,
        partialRotaryFactor: 1, rotaryDim: 128, attnOutputGate: false, tensorPrefix: 'model.', vision: null,
      });
      expect(c.raw).toBe(raw);
      expect(declaredDtype(c)).toBe('BF16');
    }
  });

  it('defaults head_dim to hidden/heads and accepts a list of eos ids', () => {
    const { head_dim: _h, ...noHeadDim } = QWEN3_06B_V4;
    const c = parseConfig({ ...noHeadDim, eos_token_id: [151645, 151643], bos_token_id: null });
    expect(c.headDim).toBe(64);
    expect(c.eosTokenIds).toEqual([151645, 151643]);
    expect(c.bosTokenId).toBeNull();
  });

  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['another architecture', { ...QWEN3_06B_V4, architectures: ['LlamaForCausalLM'], model_type: 'llama' }, /unsupported architecture \["LlamaForCausalLM"\].*Qwen3ForCausalLM/],
    ['heads not divisible by kv heads', { ...QWEN3_06B_V4, num_key_value_heads: 6 }, /num_attention_heads \(16\) is not divisible by num_key_value_heads \(6\)/],
    ['a missing hidden_size', { ...QWEN3_06B_V4, hidden_size: undefined }, /missing hidden_size/],
    ['a fractional layer count', { ...QWEN3_06B_V4, num_hidden_layers: 2.5 }, /num_hidden_layers must be a positive integer, got 2.5/],
    ['no rope theta', { ...QWEN3_06B_V5, rope_parameters: { rope_type: 'default' } }, /missing rope_theta/],
    ['a scaled rope', { ...QWEN3_06B_V5, rope_parameters: { rope_type: 'yarn', rope_theta: 1e6, factor: 4 } }, /rope_type 'yarn' is not supported/],
    ['rope_scaling', { ...QWEN3_06B_V4, rope_scaling: { type: 'linear', factor: 2 } }, /rope_scaling .* is not supported/],
    ['sliding window attention', { ...QWEN3_06B_V4, use_sliding_window: true }, /use_sliding_window: true is not supported/],
    ['an unknown dtype', { ...QWEN3_06B_V4, torch_dtype: 'int8' }, /dtype "int8" is not supported/],
    ['an eos id beyond the vocabulary', { ...QWEN3_06B_V4, eos_token_id: 200000 }, /eos_token_id 200000 is not a token id below vocab_size 151936/],
    ['an odd head_dim', { ...QWEN3_06B_V4, head_dim: 127 }, /head_dim \(127\) must be even/],
  ];
  for (const [what, raw, message] of bad) {
    it(`rejects ${what} with a clear error`, () => {
      expect(() => parseConfig(raw, 'm/config.json')).toThrow(message);
      expect(() => parseConfig(raw, 'm/config.json')).toThrow(/^m\/config\.json: /);
    });
  }

  it('rejects a Qwen3 config whose layer_types name linear attention', () => {
    expect(() => parseConfig({ ...QWEN3_06B_V5, layer_types: ['linear_attention', ...Array(27).fill('full_attention')] })).toThrow(
      /layer_types .*Qwen3 runs full attention in every layer/,
    );
  });

  it('names the file when the JSON is broken', () => {
    expect(() => parseConfigText('{"hidden_size": ', 'x/config.json')).toThrow(/^x\/config\.json: not valid JSON/);
  });
});

// Shaped like Qwen3.5-0.8B (Qwen3_5ForConditionalGeneration): the text model nested under text_config,
// vision tower beside it, M-RoPE sections and partial rotary in rope_parameters.
const QWEN3_5_TEXT = {
  attention_bias: false, attention_dropout: 0.0, attn_output_gate: true, dtype: 'bfloat16', eos_token_id: 248044,
  full_attention_interval: 4, head_dim: 256, hidden_act: 'silu', hidden_size: 1024, initializer_range: 0.02,
  intermediate_size: 3584, layer_types: Array.from({ length: 24 }, (_, i) => ((i + 1) % 4 === 0 ? 'full_attention' : 'linear_attention')),
  linear_conv_kernel_dim: 4, linear_key_head_dim: 128, linear_num_key_heads: 16, linear_num_value_heads: 16,
  linear_value_head_dim: 128, max_position_embeddings: 262144, model_type: 'qwen3_5_text', num_attention_heads: 8,
  num_hidden_layers: 24, num_key_value_heads: 2, rms_norm_eps: 1e-6, vocab_size: 248320,
  rope_parameters: { mrope_interleaved: true, mrope_section: [11, 11, 10], rope_type: 'default', rope_theta: 10000000, partial_rotary_factor: 0.25 },
};
const QWEN3_5_VL = {
  architectures: ['Qwen3_5ForConditionalGeneration'], model_type: 'qwen3_5', image_token_id: 248056,
  text_config: QWEN3_5_TEXT, tie_word_embeddings: true,
  vision_config: { depth: 12, hidden_size: 768, intermediate_size: 3072, num_heads: 12, out_hidden_size: 1024, model_type: 'qwen3_5' },
};

describe('parseConfig: Qwen3.5', () => {
  it('reads the text model of Qwen3_5ForConditionalGeneration', () => {
    const c = parseConfig(QWEN3_5_VL);
    expect({ ...c, raw: undefined }).toEqual({
      architecture: 'qwen3_5', layerTypes: QWEN3_5_TEXT.layer_types,
      linearAttention: { numKeyHeads: 16, numValueHeads: 16, keyHeadDim: 128, valueHeadDim: 128, convKernelDim: 4 },
      partialRotaryFactor: 0.25, rotaryDim: 64, attnOutputGate: true, tensorPrefix: 'model.language_model.',
      vocabSize: 248320, hiddenSize: 1024, intermediateSize: 3584, numLayers: 24, numHeads: 8, numKvHeads: 2,
      headDim: 256, rmsNormEps: 1e-6, ropeTheta: 10000000, tieWordEmbeddings: true, maxPositionEmbeddings: 262144,
      bosTokenId: null, eosTokenIds: [248044], raw: undefined,
      vision: {
        depth: 12, hiddenSize: 768, intermediateSize: 3072, numHeads: 12, headDim: 64, inChannels: 3, patchSize: 16,
        temporalPatchSize: 2, spatialMergeSize: 2, outHiddenSize: 1024, numPositionEmbeddings: 2304, positionGridSide: 48,
        hiddenAct: 'gelu_pytorch_tanh', ropeTheta: 10000, layerNormEps: 1e-6, imageTokenId: 248056, videoTokenId: 248057,
        visionStartTokenId: 248053, visionEndTokenId: 248054, mropeSection: [11, 11, 10],
      },
    });
    expect(declaredDtype(c)).toBe('BF16');
  });

  it('reads a flat Qwen3_5ForCausalLM config with model.* tensors, untied by default', () => {
    const { layer_types: _l, ...noTypes } = QWEN3_5_TEXT;
    const c = parseConfig({ ...noTypes, architectures: ['Qwen3_5ForCausalLM'], num_hidden_layers: 6, full_attention_interval: 3 });
    expect(c.tensorPrefix).toBe('model.');
    expect(c.tieWordEmbeddings).toBe(false);
    // transformers' default pattern: every full_attention_interval-th layer is full attention.
    expect(c.layerTypes).toEqual(['linear_attention', 'linear_attention', 'full_attention', 'linear_attention', 'linear_attention', 'full_attention']);
  });

  it('follows the top-level tie flag of the composite model, not text_config', () => {
    const c = parseConfig({ ...QWEN3_5_VL, tie_word_embeddings: false, text_config: { ...QWEN3_5_TEXT, tie_word_embeddings: true } });
    expect(c.tieWordEmbeddings).toBe(false);
  });

  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['a MoE model', { ...QWEN3_5_VL, model_type: 'qwen3_5_moe', architectures: ['Qwen3_5MoeForConditionalGeneration'] }, /mixture-of-experts/],
    ['a missing text_config', { ...QWEN3_5_VL, text_config: undefined }, /needs a text_config object/],
    ['layer_types of the wrong length', { ...QWEN3_5_VL, text_config: { ...QWEN3_5_TEXT, layer_types: ['full_attention'] } }, /text_config\.layer_types must list one type for each of the 24 layers/],
    ['an unknown layer type', { ...QWEN3_5_VL, text_config: { ...QWEN3_5_TEXT, layer_types: [...QWEN3_5_TEXT.layer_types.slice(1), 'sliding_attention'] } }, /layer_types\[23\] "sliding_attention"/],
    ['value heads not a multiple of key heads', { ...QWEN3_5_VL, text_config: { ...QWEN3_5_TEXT, linear_num_value_heads: 24 } }, /linear_num_value_heads \(24\) is not a multiple of linear_num_key_heads \(16\)/],
    ['an ungated attention', { ...QWEN3_5_VL, text_config: { ...QWEN3_5_TEXT, attn_output_gate: false } }, /attn_output_gate: false is not supported/],
    ['an odd rotary width', { ...QWEN3_5_VL, text_config: { ...QWEN3_5_TEXT, rope_parameters: { rope_theta: 1e7, partial_rotary_factor: 0.02 } } }, /= 5 rotary dims; RoPE needs a positive even number/],
  ];
  for (const [what, raw, message] of bad) {
    it(`rejects ${what} with a clear error`, () => {
      expect(() => parseConfig(raw, 'q/config.json')).toThrow(message);
    });
  }
});
