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

  it('names the file when the JSON is broken', () => {
    expect(() => parseConfigText('{"hidden_size": ', 'x/config.json')).toThrow(/^x\/config\.json: not valid JSON/);
  });
});
