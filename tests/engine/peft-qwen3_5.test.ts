// PEFT adapters of Qwen3.5 models: the names PEFT itself writes (an adapter saved by PEFT 0.21 on
// transformers' Qwen3_5ForCausalLM, tests/fixtures/transformers-qwen3_5-f32/adapter), the DeltaNet
// linears as target_modules, and Qwen3_5ForConditionalGeneration's model.language_model.* paths.
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { peftAdapterConfig, peftAdapterFiles, peftTensorName, readPeftAdapter } from '../../src/engine/peft-adapter.ts';
import { QWEN3_5_LINEARS } from '../../src/model/qwen3-tensors.ts';
import { randomRefLora } from '../../src/engine/reference/weights.ts';
import type { ModelConfig } from '../../src/model/types.ts';
import type { NamedTensor } from '../../src/engine/types.ts';

const FIXTURE = 'tests/fixtures/transformers-qwen3_5-f32';

/** PEFT-named factors of a random adapter on every linear of `cfg`. */
function factors(cfg: ModelConfig): NamedTensor[] {
  const lora = randomRefLora(cfg, { r: 2, alpha: 4, targets: [...QWEN3_5_LINEARS], seed: 1 });
  return [...lora.A.keys()].flatMap((name) => (['A', 'B'] as const).map((which) => {
    const data = Float32Array.from((which === 'A' ? lora.A : lora.B).get(name)!);
    const stem = name.slice(0, -'.weight'.length);
    const shape = which === 'A' ? [2, data.length / 2] : [data.length / 2, 2];
    return { name: peftTensorName(`${stem}.lora_${which}.weight`, cfg), shape, data };
  }));
}

describe('PEFT adapters of Qwen3.5', () => {
  it('reads the adapter PEFT saved on all twelve linears, DeltaNet ones only where the layer has them', async () => {
    const cfg = (await openCheckpoint(FIXTURE)).config;
    const adapter = await readPeftAdapter(`${FIXTURE}/adapter`, cfg);
    expect(adapter.settings).toEqual({ r: 2, alpha: 4, targetModules: [...QWEN3_5_LINEARS], useRslora: false });
    // Layers 0 and 2 are DeltaNet (5 + 3 MLP linears), layer 1 attention (4 + 3): 23 linears, A and B each.
    expect(adapter.tensors.length).toBe(46);
    const names = adapter.tensors.map((t) => t.name);
    expect(names).toContain('model.layers.0.linear_attn.in_proj_qkv.lora_A.weight');
    expect(names).toContain('model.layers.1.self_attn.q_proj.lora_B.weight');
    expect(names.some((n) => n.startsWith('model.layers.1.linear_attn.'))).toBe(false);
    // The gated q_proj's B is [2·H·d, r].
    expect(adapter.tensors.find((t) => t.name === 'model.layers.1.self_attn.q_proj.lora_B.weight')!.shape).toEqual([128, 2]);
  });

  it('names factors by the checkpoint module path: model.language_model.* for the composite model, and reads them back', async () => {
    const composite = (await makeTinyModel({ arch: 'qwen3_5', hidden: 32, layers: 2, heads: 4, kvHeads: 2, headDim: 8, composite: true })).config;
    const flat = (await makeTinyModel({ arch: 'qwen3_5', hidden: 32, layers: 2, heads: 4, kvHeads: 2, headDim: 8 })).config;
    expect(peftTensorName('model.layers.0.linear_attn.out_proj.lora_A.weight', composite)).toBe('base_model.model.model.language_model.layers.0.linear_attn.out_proj.lora_A.weight');
    expect(peftTensorName('model.layers.0.linear_attn.out_proj.lora_A.weight', flat)).toBe('base_model.model.model.layers.0.linear_attn.out_proj.lora_A.weight');
    const adapterConfig = peftAdapterConfig({ r: 2, alpha: 4, targetModules: [...QWEN3_5_LINEARS], useRslora: false }, { name: 'x' });
    const files = peftAdapterFiles({ adapterConfig, tensors: factors(composite) });
    const back = await readPeftAdapter(files, composite);
    expect(back.tensors.length).toBe(2 * (8 + 7));
    expect(back.tensors[0].name).toMatch(/^model\.layers\.0\./);
    // A composite-named adapter on the flat model (and the reverse) names the mismatch.
    await expect(readPeftAdapter(files, flat)).rejects.toThrow(/unsupported tensor 'base_model\.model\.model\.language_model\.layers\.0\..*loads base_model\.model\.model\.layers\.N/);
  });

  it('refuses a DeltaNet factor on an attention layer', async () => {
    const cfg = (await openCheckpoint(FIXTURE)).config;
    const adapterConfig = peftAdapterConfig({ r: 2, alpha: 4, targetModules: ['in_proj_b'], useRslora: false }, { name: 'x' });
    const stray = { name: 'base_model.model.model.layers.1.linear_attn.in_proj_b.lora_A.weight', shape: [2, 32], data: new Float32Array(64) };
    await expect(readPeftAdapter(peftAdapterFiles({ adapterConfig, tensors: [stray] }), cfg)).rejects.toThrow(/adapts in_proj_b, which layer 1 \(full_attention\) does not have/);
  });
});
