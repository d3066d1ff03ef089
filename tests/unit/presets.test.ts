// Presets are values: the same keys whatever was clicked before, chosen by task and model size; the
// CLI and the app start from the same ones.
import { describe, expect, it } from 'vitest';
import { presetValues, tierFor } from '../../src/app/setup-presets.ts';
import { parseConfig } from '../../src/model/config.ts';
import { qwen3ParamCount } from '../../src/model/qwen3-tensors.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { DEMO_MODEL_OPTIONS, DEMO_RECIPE } from '../../src/model/demo-model.ts';
import { configFromObject } from '../../src/rl/config.ts';
import { modelTier, presetConfig, PRESET_CONFIGS } from '../../src/rl/tasks/presets.ts';

describe('presets', () => {
  it('give the same values before loading (the built-in demo model is assumed) and after loading it', async () => {
    const demo = await makeTinyModel(DEMO_MODEL_OPTIONS);
    const params = qwen3ParamCount(demo.config);
    for (const env of ['echo', 'catch', 'wordle'] as const) {
      expect(presetValues(env, params)).toEqual(presetValues(env, null));
      // Applying twice, or another preset in between, changes nothing.
      presetValues('wordle', null);
      expect(presetValues(env, null)).toEqual(presetConfig(env, 'tiny'));
    }
  });

  it('pick the tier by model size: Qwen3-0.6B gets LoRA at a small learning rate, the demo model full fine-tuning', () => {
    const qwen06 = parseConfig({
      architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', hidden_size: 1024, intermediate_size: 3072, num_hidden_layers: 28,
      num_attention_heads: 16, num_key_value_heads: 8, head_dim: 128, vocab_size: 151936, max_position_embeddings: 40960,
      rms_norm_eps: 1e-6, rope_theta: 1000000, tie_word_embeddings: true, torch_dtype: 'bfloat16',
    });
    expect(tierFor(qwen3ParamCount(qwen06))).toBe('full-size');
    expect(modelTier(100_000)).toBe('tiny');
    const big = configFromObject(presetValues('catch', qwen3ParamCount(qwen06)));
    expect(big.train_mode).toBe('lora');
    expect(big.learning_rate).toBeLessThanOrEqual(1e-5);
    expect(configFromObject(presetValues('catch', null)).train_mode).toBe('full');
  });

  it('are valid GRPOConfigs, and the demo model was measured with its presets\' rollout settings', () => {
    for (const env of Object.keys(PRESET_CONFIGS) as (keyof typeof PRESET_CONFIGS)[]) {
      for (const tier of ['tiny', 'full-size'] as const) expect(() => configFromObject(presetConfig(env, tier))).not.toThrow();
    }
    for (const env of ['catch', 'echo'] as const) {
      const preset = presetConfig(env, 'tiny');
      expect(preset.max_completion_length).toBe(DEMO_RECIPE.rollout[env].max_completion_length);
      expect(preset.max_tool_calling_iterations).toBe(DEMO_RECIPE.rollout[env].max_tool_calling_iterations);
      expect(preset.temperature).toBe(DEMO_RECIPE.rollout[env].temperature);
    }
  });
});
