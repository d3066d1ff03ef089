// The optimizer and the trainable state: AdamW + clipping equal the float64 reference optimizer,
// a few steps lower the SFT loss of a fixed batch, save → load reproduces the next step exactly,
// the PEFT export has PEFT's names, shapes and config, and misuse fails with clear errors.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { newRefAdamWState, refOptimizerStep, transformersDecays } from '../../src/engine/reference/adamw.ts';
import type { LoraTarget, NamedTensor, OptimizerConfig, ScoreSequence } from '../../src/engine/types.ts';
import { someIds, tinyConfig, tinyEngine, onAdapter } from './helpers.ts';
import { relNormError, someGrads } from './train-helpers.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const ALL_TARGETS: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
const ADAMW: OptimizerConfig = { learningRate: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 1 };

function byName(tensors: NamedTensor[]): Map<string, NamedTensor> {
  return new Map(tensors.map((t) => [t.name, t]));
}

/** Mean negative log-likelihood of the scored tokens (the SFT loss) and its dL/dlogp (−1/N each). */
function sftGrads(seqs: ScoreSequence[]): Float32Array[] {
  const n = seqs.reduce((a, s) => a + s.ids.length - s.scoreFrom, 0);
  return seqs.map((s) => new Float32Array(s.ids.length - s.scoreFrom).fill(-1 / n));
}

describe(onAdapter('optimizer and trainable state'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  const cfg = tinyConfig();
  const batch: ScoreSequence[] = [
    { ids: someIds(11, cfg.vocabSize, 1), scoreFrom: 2 },
    { ids: someIds(6, cfg.vocabSize, 2), scoreFrom: 1 },
  ];

  it('AdamW with clipping and weight decay equals the reference optimizer over two steps (full fine-tuning)', async () => {
    const { engine } = await tinyEngine(gpu, cfg, 11);
    engine.setTrainable({ kind: 'full' });
    const before = await engine.saveState();
    const params = new Map([...byName(before.tensors)].filter(([n]) => !n.endsWith('.exp_avg') && !n.endsWith('.exp_avg_sq')).map(([n, t]) => [n, Float64Array.from(t.data)]));
    const refState = newRefAdamWState();
    for (let step = 1; step <= 2; step++) {
      await engine.backward({ sequences: batch, temperature: 1, dLdLogp: someGrads(batch, step) });
      const grads = new Map((await engine.readGrads()).map((t) => [t.name, Float64Array.from(t.data)]));
      const ref = refOptimizerStep(params, grads, refState, ADAMW, transformersDecays);
      const got = await engine.step(ADAMW);
      expect(got.step).toBe(step);
      expect(Math.abs(got.gradNorm - ref.gradNorm) / ref.gradNorm).toBeLessThan(1e-4);
      expect(ref.gradNorm).toBeGreaterThan(ADAMW.maxGradNorm); // clipping was active
      const after = byName((await engine.saveState()).tensors);
      for (const [name, p] of params) {
        // f32 on the GPU vs float64: moments (≈ g²) carry twice the relative rounding of g.
        expect(relNormError(after.get(name)!.data, p), name).toBeLessThan(1e-4);
        expect(relNormError(after.get(`${name}.exp_avg`)!.data, refState.m.get(name)!), `${name} m`).toBeLessThan(1e-4);
        expect(relNormError(after.get(`${name}.exp_avg_sq`)!.data, refState.v.get(name)!), `${name} v`).toBeLessThan(1e-4);
      }
      // step() zeroes the gradients.
      for (const g of await engine.readGrads()) expect(g.data.every((x) => x === 0), g.name).toBe(true);
    }
    engine.destroy();
  });

  it('a few LoRA AdamW steps lower the SFT loss of a fixed batch; adapters=false still scores the base model', async () => {
    const { engine } = await tinyEngine(gpu, cfg, 12);
    engine.setTrainable({ kind: 'lora', lora: { r: 4, alpha: 8, targetModules: ALL_TARGETS, seed: 3 } });
    const loss = async (adapters: boolean) => {
      const out = await engine.score({ sequences: batch, temperature: 1, adapters });
      const all = out.logprobs.flatMap((a) => Array.from(a));
      return -all.reduce((a, b) => a + b, 0) / all.length;
    };
    const base = await loss(true);
    // PEFT init (B = 0): the adapter starts as a no-op.
    expect(Math.abs(base - (await loss(false)))).toBeLessThan(1e-6);
    const opt = { ...ADAMW, learningRate: 2e-2, weightDecay: 0 };
    for (let i = 0; i < 6; i++) {
      await engine.backward({ sequences: batch, temperature: 1, dLdLogp: sftGrads(batch) });
      await engine.step(opt);
    }
    const trained = await loss(true);
    expect(trained).toBeLessThan(base - 0.05);
    expect(Math.abs((await loss(false)) - base)).toBeLessThan(1e-6);
    engine.destroy();
  });

  it('a few full fine-tuning AdamW steps lower the SFT loss of a fixed batch', async () => {
    const { engine } = await tinyEngine(gpu, cfg, 16);
    engine.setTrainable({ kind: 'full' });
    const loss = async () => {
      const all = (await engine.score({ sequences: batch, temperature: 1 })).logprobs.flatMap((a) => Array.from(a));
      return -all.reduce((a, b) => a + b, 0) / all.length;
    };
    const base = await loss();
    for (let i = 0; i < 4; i++) {
      await engine.backward({ sequences: batch, temperature: 1, dLdLogp: sftGrads(batch) });
      await engine.step({ ...ADAMW, learningRate: 5e-3 });
    }
    expect(await loss()).toBeLessThan(base - 0.05);
    engine.destroy();
  });

  it('zeroGrad clears; save → load → the next step is identical', async () => {
    const { engine } = await tinyEngine(gpu, cfg, 13);
    engine.setTrainable({ kind: 'lora', lora: { r: 2, alpha: 4, targetModules: ['q_proj', 'v_proj', 'down_proj'], seed: 5 } });
    const train = async (salt: number) => {
      await engine.backward({ sequences: batch, temperature: 0.8, dLdLogp: someGrads(batch, salt) });
      return engine.step(ADAMW);
    };
    // zeroGrad() discards what backward() accumulated.
    await engine.backward({ sequences: batch, temperature: 0.8, dLdLogp: someGrads(batch, 9) });
    expect((await engine.readGrads()).some((g) => g.data.some((x) => x !== 0))).toBe(true);
    engine.zeroGrad();
    for (const g of await engine.readGrads()) expect(g.data.every((x) => x === 0), g.name).toBe(true);
    await train(1);
    const saved = await engine.saveState();
    expect(saved.step).toBe(1);
    const first = await train(2);
    const afterFirst = (await engine.saveState()).tensors;
    await train(3); // move away, then come back
    await engine.loadState(saved);
    const again = await train(2);
    expect(again).toEqual(first);
    const afterAgain = byName((await engine.saveState()).tensors);
    for (const t of afterFirst) expect(Array.from(afterAgain.get(t.name)!.data), t.name).toEqual(Array.from(t.data));
    engine.destroy();
  });

  it('exports the adapter in PEFT format and initialises it as PEFT does', async () => {
    const { engine } = await tinyEngine(gpu, cfg, 14);
    const targets: LoraTarget[] = ['q_proj', 'o_proj', 'up_proj'];
    engine.setTrainable({ kind: 'lora', lora: { r: 4, alpha: 16, targetModules: targets, seed: 7 } });
    const { adapterConfig, tensors } = await engine.exportAdapter('Qwen/Qwen3-0.6B');
    expect(adapterConfig).toMatchObject({
      peft_type: 'LORA', task_type: 'CAUSAL_LM', r: 4, lora_alpha: 16, target_modules: targets, lora_dropout: 0,
      bias: 'none', base_model_name_or_path: 'Qwen/Qwen3-0.6B', fan_in_fan_out: false, init_lora_weights: true, inference_mode: true,
    });
    const { hiddenSize: D, numHeads: H, headDim: d, intermediateSize: F } = cfg;
    const shapes: Record<string, [number, number]> = { 'self_attn.q_proj': [H * d, D], 'self_attn.o_proj': [D, H * d], 'mlp.up_proj': [F, D] };
    const want = new Map<string, number[]>();
    for (let l = 0; l < cfg.numLayers; l++) {
      for (const [mod, [out, inp]] of Object.entries(shapes)) {
        want.set(`base_model.model.model.layers.${l}.${mod}.lora_A.weight`, [4, inp]);
        want.set(`base_model.model.model.layers.${l}.${mod}.lora_B.weight`, [out, 4]);
      }
    }
    expect(new Map(tensors.map((t) => [t.name, t.shape]))).toEqual(want);
    for (const t of tensors) {
      if (t.name.includes('lora_B')) expect(t.data.every((x) => x === 0), t.name).toBe(true);
      else {
        const bound = 1 / Math.sqrt(t.shape[1]!);
        expect(t.data.every((x) => Math.abs(x) <= bound), t.name).toBe(true);
        expect(Math.max(...t.data.map(Math.abs))).toBeGreaterThan(bound / 2);
      }
    }
    engine.destroy();
  });

  it('rejects misuse with errors that name the problem', async () => {
    const { engine } = await tinyEngine(gpu, cfg, 15);
    await expect(engine.backward({ sequences: batch, temperature: 1, dLdLogp: someGrads(batch, 1) })).rejects.toThrow(/setTrainable/);
    engine.setTrainable({ kind: 'full' });
    // Nothing scored: a valid call that leaves the gradients at zero.
    await engine.backward({ sequences: [{ ids: [1, 2, 3], scoreFrom: 3 }], temperature: 1, dLdLogp: [new Float32Array(0)] });
    for (const g of await engine.readGrads()) expect(g.data.every((x) => x === 0), g.name).toBe(true);
    await expect(engine.exportAdapter('x')).rejects.toThrow(/not training a LoRA adapter/);
    await expect(engine.backward({ sequences: batch, temperature: 1, dLdLogp: [new Float32Array(3), new Float32Array(5)] })).rejects.toThrow(/dLdLogp\[0\] has 3 values, expected 9/);
    await expect(engine.backward({ sequences: [{ ids: [1, 2], scoreFrom: 0 }], temperature: 1, dLdLogp: [new Float32Array(2)] })).rejects.toThrow(/scoreFrom 0/);
    await expect(engine.backward({ sequences: batch, temperature: 0, dLdLogp: someGrads(batch, 1) })).rejects.toThrow(/temperature/);
    await expect(engine.step({ ...ADAMW, beta1: 1 })).rejects.toThrow(/beta1/);
    expect(() => engine.setTrainable({ kind: 'lora', lora: { r: 0, alpha: 1, targetModules: ['q_proj'], seed: 1 } })).toThrow(/r must be a positive integer/);
    engine.setTrainable({ kind: 'lora', lora: { r: 2, alpha: 4, targetModules: ['q_proj'], seed: 1 } });
    const state = await engine.saveState();
    const bad = state.tensors.map((t, i) => (i === 0 ? { ...t, shape: [t.shape[1]!, t.shape[0]!] } : t));
    await expect(engine.loadState({ tensors: bad, step: 1 })).rejects.toThrow(/has shape \[/);
    await expect(engine.loadState({ tensors: state.tensors.slice(1), step: 1 })).rejects.toThrow(/missing tensor/);
    engine.destroy();
  });

  it('refuses a backward call whose activations exceed the binding limit, naming the fix', async () => {
    // The same device, presented with a 16 KiB binding limit: (40 tokens, F = 64) f32 needs 10 KiB, 80 tokens 20 KiB.
    const limits: Record<string, number> = {};
    for (const key in gpu.limits) limits[key] = (gpu.limits as unknown as Record<string, number>)[key]!;
    expect(limits.maxBufferSize).toBeGreaterThan(0);
    const small = { ...gpu, limits: { ...limits, maxStorageBufferBindingSize: 16384 } as unknown as GPUSupportedLimits };
    const { engine } = await tinyEngine(small, cfg, 17);
    engine.setTrainable({ kind: 'lora', lora: { r: 2, alpha: 4, targetModules: ['q_proj'], seed: 1 } });
    const seq = (n: number) => ({ ids: someIds(n, cfg.vocabSize, 3), scoreFrom: 1 });
    await engine.backward({ sequences: [seq(40)], temperature: 1, dLdLogp: [new Float32Array(39)] });
    await expect(engine.backward({ sequences: [seq(40), seq(40)], temperature: 1, dLdLogp: [new Float32Array(39), new Float32Array(39)] }))
      .rejects.toThrow(/binding limit; backpropagate fewer tokens per call/);
    engine.destroy();
  });
});
