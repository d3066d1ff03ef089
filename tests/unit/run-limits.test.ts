// The config-vs-adapter check the setup page and the `train` CLI share: the impossible values
// on the built-in demo model are refused beside the field to lower; every preset passes.
import fs from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/model/config.ts';
import { configFromObject } from '../../src/rl/config.ts';
import { runLimitErrors, runLimitMessage } from '../../src/rl/run-limits.ts';
import { PRESET_CONFIGS, type PresetEnv } from '../../src/rl/tasks/presets.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { setupMemoryPlan } from '../../src/app/run-plan.ts';
import type { ModelInfo, ProbeResult } from '../../workers/api.ts';

const demo = { config: parseConfig(JSON.parse(fs.readFileSync(new URL('../../models/demo/config.json', import.meta.url), 'utf8'))), weightDtype: 'f32' as const };
const qwen3 = {
  config: parseConfig({
    architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', bos_token_id: 151643, eos_token_id: 151645, head_dim: 128,
    hidden_size: 1024, intermediate_size: 3072, max_position_embeddings: 40960, num_attention_heads: 16,
    num_hidden_layers: 28, num_key_value_heads: 8, rms_norm_eps: 1e-6, rope_theta: 1000000, tie_word_embeddings: true, vocab_size: 151936,
  }),
  weightDtype: 'f16' as const,
};
const GiB = 1024 ** 3;
// SwiftShader in Chromium (specs/webgpu-without-a-gpu.md §4) on a machine with 8 GiB of RAM (a software adapter's memory).
const SWIFTSHADER = { maxStorageBufferBindingSize: GiB, maxBufferSize: GiB, budgetBytes: 8 * GiB };
const catchTiny = (over: Record<string, unknown>) => configFromObject({ ...PRESET_CONFIGS.catch.tiny, ...over });

describe('run limits', () => {
  it('passes every preset: the tiny ones on the demo model under SwiftShader, the full-size ones on Qwen3-0.6B with LoRA', () => {
    for (const env of Object.keys(PRESET_CONFIGS) as PresetEnv[]) {
      expect(runLimitErrors(configFromObject(PRESET_CONFIGS[env].tiny), demo, SWIFTSHADER), `${env} tiny`).toEqual({});
      expect(runLimitErrors(configFromObject(PRESET_CONFIGS[env]['full-size']), qwen3, { maxStorageBufferBindingSize: GiB, maxBufferSize: 4 * GiB }), `${env} full-size`).toEqual({});
    }
  });

  it('refuses max_completion_length 100000 beyond the model positions, with the largest value that fits', () => {
    const errors = runLimitErrors(catchTiny({ max_completion_length: 100000 }), demo, SWIFTSHADER);
    expect(Object.keys(errors)).toEqual(['max_completion_length']);
    expect(errors.max_completion_length).toMatch(/101024 tokens, beyond the model's max_position_embeddings \(40960\): lower max_completion_length to ≤ 39936/);
  });

  it('refuses per_device_train_batch_size 1024 (with num_generations 512) over the memory available, naming the value that fits', () => {
    const errors = runLimitErrors(catchTiny({ num_generations: 512, per_device_train_batch_size: 1024 }), demo, SWIFTSHADER);
    expect(errors.per_device_train_batch_size).toMatch(/^the run's memory plan \(1024 sequences × 1424 tokens\) needs 12\.\d GiB, over the 8\.00 GiB of memory available: lower per_device_train_batch_size to ≤ \d+/);
    const fitting = Number(/to ≤ (\d+)/.exec(errors.per_device_train_batch_size!)![1]);
    expect(runLimitErrors(catchTiny({ num_generations: fitting, per_device_train_batch_size: fitting }), demo, SWIFTSHADER)).toEqual({});
    expect(runLimitErrors(catchTiny({ num_generations: fitting + 1, per_device_train_batch_size: fitting + 1 }), demo, SWIFTSHADER).per_device_train_batch_size).toBeDefined();
  });

  it('names num_generations when not even one group fits, and a binding that overflows without any budget', () => {
    // Qwen3-0.6B on WebGPU's default 128 MiB binding: 64 completions' decode logits alone are 37 MiB each…
    const limits = { maxStorageBufferBindingSize: 128 * 1024 ** 2, maxBufferSize: 256 * 1024 ** 2 };
    const errors = runLimitErrors(configFromObject({ num_generations: 64, per_device_train_batch_size: 64, max_completion_length: 128 }), qwen3, limits);
    expect(errors.per_device_train_batch_size).toMatch(/over this adapter's 128 MiB buffer limit: lower per_device_train_batch_size to ≤ \d+/);
    expect(errors.num_generations).toMatch(/not even one group of 64 completions fits; lower num_generations to ≤ \d+/);
    expect(runLimitMessage(errors)).toMatch(/^this config does not fit the GPU adapter: per_device_train_batch_size: .*; num_generations: /);
    expect(runLimitMessage({})).toBeNull();
  });

  it('asks for LoRA when full fine-tuning does not fit even one short sequence', () => {
    const errors = runLimitErrors(configFromObject({ train_mode: 'full', num_generations: 2, per_device_train_batch_size: 2, max_completion_length: 64 }), qwen3, { maxStorageBufferBindingSize: GiB, maxBufferSize: GiB, budgetBytes: 4 * GiB });
    expect(Object.keys(errors)).toEqual(['train_mode']);
    expect(errors.train_mode).toMatch(/train a LoRA adapter instead/);
  });

  it('counts a vision-language model\'s tower: the setup page\'s plan lists it, the memory check refuses what only the tower overflows', async () => {
    const vl = { config: (await makeTinyModel({ arch: 'qwen3_5', vision: true })).config, weightDtype: 'f32' as const };
    const textOnly = { ...vl, config: { ...vl.config, vision: null } };
    const config = catchTiny({});
    const limits = { maxStorageBufferBindingSize: GiB, maxBufferSize: GiB };
    const model = (planned: typeof vl) => ({ ...planned, name: 'tiny VL', layers: 2, hidden: 64, vocab: 512, params: 1, memory: [], totalBytes: 0, fits: true }) as unknown as ModelInfo;
    const probe = { webgpu: true, maxBufferSize: GiB, maxStorageBufferBindingSize: GiB } as ProbeResult;
    vi.stubGlobal('navigator', {}); // the page's (adapterLimitsOf reads navigator.deviceMemory)
    const withTower = setupMemoryPlan(model(vl), probe, config)!.plan;
    const without = setupMemoryPlan(model(textOnly), probe, config)!.plan;
    expect(withTower.items.map((i) => i.name)).toEqual(expect.arrayContaining(['vision tower weights', 'vision activations']));
    expect(without.items.map((i) => i.name)).not.toContain('vision tower weights');
    // A budget the text model fits in but not its tower on top: the VL run is refused.
    const budgetBytes = without.totalBytes + 1024;
    expect(withTower.totalBytes).toBeGreaterThan(budgetBytes);
    expect(runLimitErrors(config, textOnly, { ...limits, budgetBytes })).toEqual({});
    expect(runLimitMessage(runLimitErrors(config, vl, { ...limits, budgetBytes }))).toMatch(/the run's memory plan .* over the .* of memory available/);
    vi.unstubAllGlobals();
  });

  it('full fine-tuning counts the trained tower\'s gradients and moments; freeze_vision_tower leaves them out (and is harmless on a text model)', async () => {
    const vl = { config: (await makeTinyModel({ arch: 'qwen3_5', vision: true })).config, weightDtype: 'f32' as const };
    const limits = { maxStorageBufferBindingSize: GiB, maxBufferSize: GiB };
    const full = (freeze: boolean) => catchTiny({ train_mode: 'full', freeze_vision_tower: freeze });
    const total = (freeze: boolean) => {
      vi.stubGlobal('navigator', {});
      const model = { ...vl, name: 'tiny VL', layers: 2, hidden: 64, vocab: 512, params: 1, memory: [], totalBytes: 0, fits: true } as unknown as ModelInfo;
      const plan = setupMemoryPlan(model, { webgpu: true, maxBufferSize: GiB, maxStorageBufferBindingSize: GiB } as ProbeResult, full(freeze))!.plan;
      vi.unstubAllGlobals();
      return plan.totalBytes;
    };
    const budgetBytes = (total(true) + total(false)) / 2;
    expect(total(false)).toBeGreaterThan(budgetBytes);
    expect(runLimitErrors(full(true), vl, { ...limits, budgetBytes })).toEqual({});
    expect(runLimitMessage(runLimitErrors(full(false), vl, { ...limits, budgetBytes }))).toMatch(/the run's memory plan .* over the .* of memory available/);
    expect(runLimitErrors(full(true), demo, SWIFTSHADER)).toEqual(runLimitErrors(full(false), demo, SWIFTSHADER));
    expect(configFromObject({ freeze_vision_tower: true }).freeze_vision_tower).toBe(true);
    expect(() => configFromObject({ freeze_vision_tower: 'yes' })).toThrow(/freeze_vision_tower/);
  });
});
