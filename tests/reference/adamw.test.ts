import { describe, expect, it } from 'vitest';
import {
  adamwStep,
  clipGradNorm,
  lrAt,
  newRefAdamWState,
  refOptimizerStep,
  transformersDecays,
  warmupStepsOf,
} from '../../src/engine/reference/adamw.ts';

const OPT = { learningRate: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 0 };

describe('reference AdamW (torch.optim.AdamW semantics)', () => {
  it('matches hand-computed numbers for 2 steps, with decoupled weight decay', () => {
    // p = [1, −2]; g1 = [0.5, −1]; g2 = [0.1, 0.2]; lr 0.1, wd 0.1 ⇒ each step first scales p by 0.99.
    // Step 1: m = [0.05, −0.1], v = [2.5e-4, 1e-3]; m̂ = m/0.1 = [0.5, −1]; √v̂ = √(v/0.001) = [0.5, 1]
    //   p = [0.99 − 0.1·0.5/(0.5+1e-8), −1.98 + 0.1·1/(1+1e-8)] = [0.890000002, −1.880000001]
    // Step 2: m = 0.9·m + 0.1·g2 = [0.055, −0.07], v = 0.999·v + 0.001·g2² = [2.5975e-4, 1.039e-3];
    //   m̂ = m/0.19 = [0.28947368, −0.36842105]; √v̂ = √(v/0.001999) = [0.36047187, 0.72094374]
    //   p = [0.99·0.890000002 − 0.1·0.28947368/0.36047188, −0.99·1.880000001 + 0.1·0.36842105/0.72094375]
    //     = [0.80079590636, −1.81009739398]
    const params = new Map([['model.layers.0.mlp.up_proj.weight', Float64Array.from([1, -2])]]);
    const state = newRefAdamWState();
    adamwStep(params, new Map([['model.layers.0.mlp.up_proj.weight', Float64Array.from([0.5, -1])]]), state, OPT);
    const p = params.get('model.layers.0.mlp.up_proj.weight')!;
    expect(p[0]).toBeCloseTo(0.890000002, 14);
    expect(p[1]).toBeCloseTo(-1.880000001, 14);
    expect(state.m.get('model.layers.0.mlp.up_proj.weight')![1]).toBeCloseTo(-0.1, 15);
    expect(state.v.get('model.layers.0.mlp.up_proj.weight')![1]).toBeCloseTo(1e-3, 15);
    adamwStep(params, new Map([['model.layers.0.mlp.up_proj.weight', Float64Array.from([0.1, 0.2])]]), state, OPT);
    expect(state.step).toBe(2);
    expect(p[0]).toBeCloseTo(0.8007959063646517, 11);
    expect(p[1]).toBeCloseTo(-1.8100973939804945, 11);
  });

  it('does not decay biases and norm weights (transformers Trainer name rule)', () => {
    for (const name of [
      'model.norm.weight',
      'model.layers.3.input_layernorm.weight',
      'model.layers.3.post_attention_layernorm.weight',
      'model.layers.3.self_attn.q_norm.weight',
      'model.layers.3.self_attn.k_norm.weight',
    ]) {
      expect(transformersDecays(name), name).toBe(false);
    }
    for (const name of ['model.embed_tokens.weight', 'lm_head.weight', 'model.layers.3.self_attn.q_proj.weight', 'model.layers.3.mlp.down_proj.weight']) {
      expect(transformersDecays(name), name).toBe(true);
    }
    // The vision tower: nn.LayerNorm's parameters (exempt by module type: norm1/norm2; merger.norm by name too) and biases are not decayed.
    for (const name of ['model.visual.blocks.0.norm1.weight', 'model.visual.blocks.11.norm2.weight', 'model.visual.merger.norm.weight', 'model.visual.blocks.0.norm1.bias', 'model.visual.patch_embed.proj.bias', 'model.visual.blocks.0.attn.qkv.bias']) {
      expect(transformersDecays(name), name).toBe(false);
    }
    for (const name of ['model.visual.patch_embed.proj.weight', 'model.visual.pos_embed.weight', 'model.visual.blocks.0.attn.qkv.weight', 'model.visual.merger.linear_fc2.weight']) {
      expect(transformersDecays(name), name).toBe(true);
    }
    // Same gradient, same start: only the decayed tensor shrinks by the extra factor (1 − lr·wd).
    const params = new Map([
      ['model.norm.weight', Float64Array.from([1])],
      ['lm_head.weight', Float64Array.from([1])],
    ]);
    const grads = new Map([
      ['model.norm.weight', Float64Array.from([0.5])],
      ['lm_head.weight', Float64Array.from([0.5])],
    ]);
    adamwStep(params, grads, newRefAdamWState(), OPT);
    expect(params.get('model.norm.weight')![0]).toBeCloseTo(1 - 0.1 / (1 + 2e-8), 14);
    expect(params.get('lm_head.weight')![0]).toBeCloseTo(0.99 - 0.1 / (1 + 2e-8), 14);
  });

  it('clips to the global norm with clip_coef = max_norm / (norm + 1e-6), only when < 1', () => {
    const grads = new Map([
      ['a', Float64Array.from([3])],
      ['b', Float64Array.from([0, 4])],
    ]);
    expect(clipGradNorm(grads, 1)).toBe(5);
    const coef = 1 / (5 + 1e-6);
    expect(grads.get('a')![0]).toBeCloseTo(3 * coef, 15);
    expect(grads.get('b')![1]).toBeCloseTo(4 * coef, 15);

    const atLimit = new Map([['a', Float64Array.from([3, 4])]]);
    expect(clipGradNorm(atLimit, 5)).toBe(5); // coef 5/(5+1e-6) < 1: clipped very slightly
    expect(atLimit.get('a')![0]).toBeLessThan(3);
    const loose = new Map([['a', Float64Array.from([3, 4])]]);
    expect(clipGradNorm(loose, 5.1)).toBe(5);
    expect(Array.from(loose.get('a')!)).toEqual([3, 4]);
    const off = new Map([['a', Float64Array.from([3, 4])]]);
    expect(clipGradNorm(off, 0)).toBe(5);
    expect(clipGradNorm(off, Infinity)).toBe(5);
    expect(Array.from(off.get('a')!)).toEqual([3, 4]);
    expect(() => clipGradNorm(off, -1)).toThrow(/max_grad_norm/);
  });

  it('refOptimizerStep clips before the Adam update and reports the pre-clip norm', () => {
    // With one coordinate Adam's first step is ±lr whatever the gradient scale, so check via m instead.
    const params = new Map([['w', Float64Array.from([0, 0])]]);
    const state = newRefAdamWState();
    const res = refOptimizerStep(params, new Map([['w', Float64Array.from([30, 40])]]), state, { ...OPT, weightDecay: 0, maxGradNorm: 1 });
    expect(res).toEqual({ gradNorm: 50, step: 1 });
    expect(state.m.get('w')![0]).toBeCloseTo(0.1 * 30 / (50 + 1e-6), 15);
    expect(state.m.get('w')![1]).toBeCloseTo(0.1 * 40 / (50 + 1e-6), 15);
  });

  it('rejects a missing or mis-sized gradient', () => {
    const params = new Map([['w', Float64Array.from([0, 0])]]);
    expect(() => adamwStep(params, new Map(), newRefAdamWState(), OPT)).toThrow(/no gradient for parameter "w"/);
    expect(() => adamwStep(params, new Map([['w', Float64Array.from([1])]]), newRefAdamWState(), OPT)).toThrow(/has 1 values/);
  });
});

describe('learning-rate schedules (transformers get_scheduler)', () => {
  const base = { learningRate: 1, totalSteps: 10 };

  it('linear without warmup: λ(s) = (N − s)/N, the first step at full lr, 0 at the end', () => {
    const s = { ...base, lrSchedulerType: 'linear' as const };
    expect([0, 1, 5, 9, 10, 12].map((k) => lrAt(s, k))).toEqual([1, 0.9, 0.5, 0.1, 0, 0]);
  });

  it('linear with warmup_steps: ramps k/W then decays (N − k)/(N − W)', () => {
    const s = { ...base, lrSchedulerType: 'linear' as const, warmupSteps: 2 };
    expect([0, 1, 2, 6, 10].map((k) => lrAt(s, k))).toEqual([0, 0.5, 1, 0.5, 0]);
  });

  it('constant_with_warmup with warmup_ratio: W = ceil(N·ratio)', () => {
    const s = { ...base, lrSchedulerType: 'constant_with_warmup' as const, warmupRatio: 0.25 };
    expect(warmupStepsOf(s)).toBe(3);
    expect([0, 1, 2, 3, 9].map((k) => lrAt(s, k))).toEqual([0, 1 / 3, 2 / 3, 1, 1]);
    // warmup_steps wins over warmup_ratio; a fractional warmup_steps is a ratio (transformers ≥ 5).
    expect(warmupStepsOf({ ...s, warmupSteps: 4 })).toBe(4);
    expect(warmupStepsOf({ ...s, warmupSteps: 0.5, warmupRatio: 0 })).toBe(5);
  });

  it('constant ignores warmup', () => {
    const s = { ...base, learningRate: 3e-4, lrSchedulerType: 'constant' as const, warmupSteps: 5 };
    expect([0, 4, 9].map((k) => lrAt(s, k))).toEqual([3e-4, 3e-4, 3e-4]);
  });

  it('rejects bad schedules by name', () => {
    expect(() => lrAt({ ...base, lrSchedulerType: 'cosine' as never }, 0)).toThrow(/unknown lr_scheduler_type "cosine"/);
    expect(() => lrAt({ ...base, totalSteps: 0, lrSchedulerType: 'linear' }, 0)).toThrow(/totalSteps/);
    expect(() => lrAt({ ...base, lrSchedulerType: 'linear', warmupRatio: 2 }, 0)).toThrow(/warmup_ratio/);
  });
});
