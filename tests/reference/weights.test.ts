import { describe, expect, it } from 'vitest';
import { openCheckpoint, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { refScore } from '../../src/engine/reference/qwen3.ts';
import {
  randomRefLora,
  randomRefWeights,
  refLoraFromTensors,
  refWeightsFromCheckpoint,
  refWeightShapes,
  refWeightsFromTensors,
} from '../../src/engine/reference/weights.ts';
import { tinyConfig } from './tiny-config.ts';

const QWEN3_0_6B = tinyConfig({
  vocabSize: 151936,
  hiddenSize: 1024,
  intermediateSize: 3072,
  numLayers: 28,
  numHeads: 16,
  numKvHeads: 8,
  headDim: 128,
  ropeTheta: 1_000_000,
});

const count = (shapes: Map<string, number[]>) => [...shapes.values()].reduce((a, s) => a + s.reduce((x, y) => x * y, 1), 0);

describe('reference weights', () => {
  it('names and shapes of Qwen3-0.6B: 310 unique tensors, 596,049,920 parameters (specs/qwen3.md §3–4)', () => {
    const shapes = refWeightShapes(QWEN3_0_6B);
    expect(shapes.size).toBe(310); // 311 stored minus the tied lm_head
    expect(count(shapes)).toBe(596_049_920);
    expect(shapes.get('model.layers.27.self_attn.q_proj.weight')).toEqual([2048, 1024]);
    expect(shapes.get('model.layers.27.self_attn.o_proj.weight')).toEqual([1024, 2048]);
    expect(shapes.get('model.layers.0.self_attn.k_norm.weight')).toEqual([128]);
    const untied = refWeightShapes({ ...QWEN3_0_6B, tieWordEmbeddings: false });
    expect(untied.get('lm_head.weight')).toEqual([151936, 1024]);
    expect(count(untied)).toBe(596_049_920 + 151936 * 1024);
  });

  it('random weights are deterministic per seed, norms near 1', () => {
    const cfg = tinyConfig();
    const a = randomRefWeights(cfg, 1);
    expect(randomRefWeights(cfg, 1)).toEqual(a);
    expect(randomRefWeights(cfg, 2).get('model.embed_tokens.weight')).not.toEqual(a.get('model.embed_tokens.weight'));
    const norm = a.get('model.layers.0.self_attn.q_norm.weight')!;
    for (const x of norm) expect(Math.abs(x - 1)).toBeLessThan(0.5);
    const lora = randomRefLora(cfg, { r: 2, alpha: 4, targets: ['o_proj'], seed: 3 });
    expect([...lora.A.keys()]).toEqual(['model.layers.0.self_attn.o_proj.weight', 'model.layers.1.self_attn.o_proj.weight']);
    expect(lora.A.get('model.layers.0.self_attn.o_proj.weight')).toHaveLength(2 * 32); // (r, H·d)
    expect(lora.B.get('model.layers.0.self_attn.o_proj.weight')).toHaveLength(24 * 2); // (D, r)
  });

  it('loads named f32 arrays; a stored lm_head is ignored when tied', () => {
    const cfg = tinyConfig();
    const w = randomRefWeights(cfg, 4);
    const named = [...w].map(([name, data]) => ({ name, data: Float32Array.from(data) }));
    const loaded = refWeightsFromTensors(cfg, [...named, { name: 'lm_head.weight', data: new Float32Array(37 * 24) }]);
    expect(loaded.size).toBe(w.size);
    expect(loaded.has('lm_head.weight')).toBe(false);
    const e = loaded.get('model.embed_tokens.weight')!;
    expect(e[5]).toBe(Math.fround(w.get('model.embed_tokens.weight')![5]));
  });

  it('names what is wrong with loaded tensors', () => {
    const cfg = tinyConfig({ tieWordEmbeddings: false });
    const named = [...randomRefWeights(cfg, 4)].map(([name, data]) => ({ name, data: Float32Array.from(data) }));
    expect(() => refWeightsFromTensors(cfg, [...named, { name: 'model.layers.9.mlp.up_proj.weight', data: new Float32Array(1) }])).toThrow(
      /unexpected tensor "model.layers.9.mlp.up_proj.weight"/,
    );
    expect(() => refWeightsFromTensors(cfg, named.filter((t) => t.name !== 'lm_head.weight'))).toThrow(/missing tensor "lm_head.weight"/);
    const wrong = named.map((t) => (t.name === 'model.norm.weight' ? { ...t, data: new Float32Array(2) } : t));
    expect(() => refWeightsFromTensors(cfg, wrong)).toThrow(/"model.norm.weight" has 2 values, expected 24/);
  });

  it('loads a generated checkpoint (bf16, tied, with a stored lm_head copy) and scores with it', async () => {
    const tiny = await makeTinyModel({ seed: 3, hidden: 32, heads: 4, kvHeads: 2, headDim: 8, intermediate: 48, dtype: 'bf16', storeLmHead: true });
    const ckpt = await openCheckpoint(tiny.files);
    const w = await refWeightsFromCheckpoint(ckpt);
    expect(w.has('lm_head.weight')).toBe(false);
    const q = await readTensorFloat32(ckpt, 'model.layers.1.self_attn.q_proj.weight');
    expect(Array.from(w.get('model.layers.1.self_attn.q_proj.weight')!)).toEqual(Array.from(q));
    const { logprobs } = refScore(ckpt.config, w, { ids: [1, 2, 3, 4, 5], scoreFrom: 2 }, 1);
    expect(logprobs).toHaveLength(3);
    for (const lp of logprobs) expect(lp).toBeLessThan(0);
  });

  it('reads LoRA factors named by the engine or by PEFT, and names bad ones', () => {
    const cfg = tinyConfig();
    const lora = randomRefLora(cfg, { r: 2, alpha: 4, targets: ['q_proj', 'down_proj'], seed: 5 });
    const engineNamed = [...lora.A].map(([n, data]) => ({ name: n.replace(/\.weight$/, '.lora_A.weight'), data: Float32Array.from(data) }));
    const peftNamed = [...lora.B].map(([n, data]) => ({ name: `base_model.model.${n.replace(/\.weight$/, '.lora_B.weight')}`, data }));
    const back = refLoraFromTensors(cfg, { r: 2, alpha: 4, targets: ['q_proj', 'down_proj'] }, [...engineNamed, ...peftNamed]);
    expect([...back.A.keys()].sort()).toEqual([...lora.A.keys()].sort());
    expect(back.B).toEqual(lora.B);
    const name = 'model.layers.0.mlp.down_proj.weight';
    expect(back.A.get(name)![1]).toBe(Math.fround(lora.A.get(name)![1]));

    const adapter = { r: 2, alpha: 4, targets: ['q_proj' as const] };
    expect(() => refLoraFromTensors(cfg, adapter, [{ name: 'model.layers.0.self_attn.q_proj.weight', data: [] }])).toThrow(/not a LoRA tensor name/);
    expect(() => refLoraFromTensors(cfg, adapter, [{ name: 'model.layers.0.mlp.up_proj.lora_A.weight', data: [] }])).toThrow(/not a target linear/);
    expect(() => refLoraFromTensors(cfg, adapter, engineNamed.filter((t) => t.name.includes('q_proj')))).toThrow(/B of "model.layers.0.self_attn.q_proj.weight"/);
  });
});
