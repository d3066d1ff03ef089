// The setup page's memory plan (src/app/run-plan.ts): the KV cache's element type as the engine will
// choose it on the probed adapter, and, when the plan exceeds the memory known to be there (a software
// adapter's RAM), which setting to lower and to what: each named value fits, one more does not.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/model/config.ts';
import { configFromObject } from '../../src/rl/config.ts';
import { PRESET_CONFIGS } from '../../src/rl/tasks/presets.ts';
import { setupMemoryPlan } from '../../src/app/run-plan.ts';
import type { ModelInfo, ProbeResult } from '../../workers/api.ts';

const GiB = 1024 ** 3;
const qwen3 = parseConfig({
  architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', bos_token_id: 151643, eos_token_id: 151645, head_dim: 128,
  hidden_size: 1024, intermediate_size: 3072, max_position_embeddings: 40960, num_attention_heads: 16,
  num_hidden_layers: 28, num_key_value_heads: 8, rms_norm_eps: 1e-6, rope_theta: 1000000, tie_word_embeddings: true, vocab_size: 151936,
});
const model = { config: qwen3, weightDtype: 'f16', name: 'Qwen3-0.6B', layers: 28, hidden: 1024, vocab: 151936, params: 1, memory: [], totalBytes: 0, fits: true } as unknown as ModelInfo;
const probe = (over: Partial<ProbeResult>) => ({ webgpu: true, maxBufferSize: GiB, maxStorageBufferBindingSize: GiB, ...over }) as ProbeResult;
const config = configFromObject({ ...PRESET_CONFIGS.catch['full-size'] });

describe('setup memory plan', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('counts the KV cache the engine will keep: f16 on a GPU with shader-f16, f32 on a software adapter or without shader-f16', () => {
    vi.stubGlobal('navigator', {});
    expect(setupMemoryPlan(model, probe({ f16: true }), config)!.plan.kvDtype).toBe('f16');
    expect(setupMemoryPlan(model, probe({ f16: true, software: true }), config)!.plan.kvDtype).toBe('f32');
    expect(setupMemoryPlan(model, probe({ f16: false }), config)!.plan.kvDtype).toBe('f32');
  });

  it('over the memory: names max_completion_length and the generation batch with the largest values that fit; none when it fits or the memory is unknown', () => {
    vi.stubGlobal('navigator', { deviceMemory: 6 });
    const live = setupMemoryPlan(model, probe({ software: true }), config)!;
    expect(live.plan.fits).toBe(false);
    const m = live.lower!.match(/^To fit, lower max_completion_length to (\d+), or the generation batch \(sequences decoding at once\) to (\d+)\.$/);
    expect(m, live.lower!).not.toBeNull();
    const completion = Number(m![1]);
    const fits = (c: number) => setupMemoryPlan(model, probe({ software: true }), { ...config, max_completion_length: c })!.plan.fits;
    expect(fits(completion)).toBe(true);
    expect(fits(completion + 1)).toBe(false);
    vi.stubGlobal('navigator', { deviceMemory: 64 });
    expect(setupMemoryPlan(model, probe({ software: true }), config)!.lower).toBeNull();
    vi.stubGlobal('navigator', {});
    expect(setupMemoryPlan(model, probe({}), config)!.lower).toBeNull();
  });
});
