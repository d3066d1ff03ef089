// Parity of the forward pass across model shapes and engine storage/kernel variants.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { refGreedy, refScore } from '../../src/engine/reference/qwen3.ts';
import { randomRefLora, randomRefWeights, type RefWeights } from '../../src/engine/reference/weights.ts';
import { loadEngine, type LoadEngineOptions } from '../../src/engine/engine.ts';
import { halfToFloat, floatToBf16, floatToHalf } from '../../src/model/safetensors.ts';
import type { ModelConfig } from '../../src/model/types.ts';
import { maxAbsDiff, memoryCheckpoint, someIds, tinyConfig, onAdapter } from './helpers.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

/** The value a bf16 checkpoint stores for v. */
const roundBf16 = (v: number): number => new Float32Array(new Uint32Array([floatToBf16(v) << 16]).buffer)[0]!;

const SEQS = (V: number) => [
  { ids: someIds(11, V, 1), scoreFrom: 1 },
  { ids: someIds(6, V, 2), scoreFrom: 2 },
];

describe(onAdapter('forward parity across shapes and variants'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  async function checkScore(cfg: ModelConfig, w: RefWeights, opts: LoadEngineOptions, refW: RefWeights = w) {
    const engine = await loadEngine(memoryCheckpoint(cfg, w), { gpu, weightDtype: 'f32', ...opts });
    try {
      const seqs = SEQS(cfg.vocabSize);
      const out = await engine.score({ sequences: seqs, temperature: 1 });
      seqs.forEach((s, i) => {
        const ref = refScore(cfg, refW, s, 1);
        expect(maxAbsDiff(out.logprobs[i]!, ref.logprobs)).toBeLessThan(1e-4);
        expect(maxAbsDiff(out.entropy[i]!, ref.entropy)).toBeLessThan(1e-4);
      });
      return engine;
    } catch (e) {
      engine.destroy();
      throw e;
    }
  }

  it('head_dim ≠ hidden/heads, multi-head (K = H), untied LM head', async () => {
    const cfg = tinyConfig({ hiddenSize: 24, numHeads: 3, numKvHeads: 3, headDim: 12, tieWordEmbeddings: false, vocabSize: 70 });
    (await checkScore(cfg, randomRefWeights(cfg, 3), {})).destroy();
  });

  it('GQA 4:1 with odd hidden and intermediate sizes (scalar tails of the matmul)', async () => {
    const cfg = tinyConfig({ hiddenSize: 27, intermediateSize: 45, numHeads: 4, numKvHeads: 1, headDim: 6, vocabSize: 61 });
    (await checkScore(cfg, randomRefWeights(cfg, 4), {})).destroy();
  });

  it('workgroup-tiled matmul variant', async () => {
    const cfg = tinyConfig({ hiddenSize: 40, intermediateSize: 72 });
    (await checkScore(cfg, randomRefWeights(cfg, 5), { matmul: 'tiled' })).destroy();
  });

  it('workgroup-per-head attention variant, over more keys than one block, in scoring and cached decode', async () => {
    const cfg = tinyConfig({ numLayers: 1, headDim: 100, numHeads: 2, numKvHeads: 1 });
    const w = randomRefWeights(cfg, 15);
    const engine = await checkScore(cfg, w, { attention: 'workgroup' });
    const s = { ids: someIds(300, cfg.vocabSize, 16), scoreFrom: 280 };
    const out = await engine.score({ sequences: [s], temperature: 1 });
    expect(maxAbsDiff(out.logprobs[0]!, refScore(cfg, w, s, 1).logprobs)).toBeLessThan(1e-4);
    const seq = engine.newSequence();
    const prompt = someIds(270, cfg.vocabSize, 17);
    const gen = await engine.generate({ items: [{ seq, append: prompt, maxNewTokens: 3 }], sampling: { temperature: 0, topP: 1, topK: 0, seed: 0 }, stopIds: [] });
    expect(gen[0]!.tokens).toEqual(refGreedy(cfg, w, prompt, 3));
    engine.destroy();
  });

  it('embedding and LM head split by rows over several buffers (forced tiny binding limit)', async () => {
    const cfg = tinyConfig();
    const w = randomRefWeights(cfg, 6);
    // 7 rows of 32 f32 per buffer: the 96-row embedding becomes 14 chunks
    const engine = await checkScore(cfg, w, { maxBindingBytes: 7 * 32 * 4 });
    expect(engine.internals.params.get('model.embed_tokens.weight')!.chunks.length).toBe(14);
    const seq = engine.newSequence();
    const prompt = someIds(5, cfg.vocabSize, 9);
    const out = await engine.generate({ items: [{ seq, append: prompt, maxNewTokens: 5 }], sampling: { temperature: 0, topP: 1, topK: 0, seed: 0 }, stopIds: [] });
    expect(out[0]!.tokens).toEqual(refGreedy(cfg, w, prompt, 5));
    engine.destroy();
  });

  it('f16 weight storage (unpacked in the kernels, no shader-f16 needed) matches the reference on f16-rounded weights', async () => {
    const cfg = tinyConfig();
    const w = randomRefWeights(cfg, 8);
    const rounded: RefWeights = new Map();
    for (const [name, data] of w) {
      rounded.set(name, name.endsWith('norm.weight') ? data : data.map((v) => halfToFloat(floatToHalf(v))));
    }
    const engine = await checkScore(cfg, w, { weightDtype: 'f16' }, rounded);
    expect(engine.weightDtype).toBe('f16');
    expect(engine.internals.params.get('model.layers.0.mlp.up_proj.weight')!.dtype).toBe('f16');
    expect(engine.internals.params.get('model.norm.weight')!.dtype).toBe('f32');
    engine.destroy();
  });

  it('f16 storage keeps a tensor in f32 when a value would overflow a half', async () => {
    const cfg = tinyConfig({ tieWordEmbeddings: false });
    const w = randomRefWeights(cfg, 9);
    // only the embedding row of the last id, which the test sequences never use, is out of range
    w.get('model.embed_tokens.weight')![(cfg.vocabSize - 1) * cfg.hiddenSize] = 70000;
    const engine = await loadEngine(memoryCheckpoint(cfg, w, 'BF16'), { gpu, weightDtype: 'f16' });
    expect(engine.internals.params.get('model.embed_tokens.weight')!.dtype).toBe('f32');
    expect(engine.internals.params.get('lm_head.weight')!.dtype).toBe('f16');
    const s = { ids: someIds(8, cfg.vocabSize - 1, 3), scoreFrom: 1 };
    const out = await engine.score({ sequences: [s], temperature: 1 });
    const rounded: RefWeights = new Map();
    for (const [name, data] of w) {
      const bf16 = data.map(roundBf16);
      rounded.set(name, name.endsWith('norm.weight') || name === 'model.embed_tokens.weight' ? bf16 : bf16.map((v) => halfToFloat(floatToHalf(v))));
    }
    expect(maxAbsDiff(out.logprobs[0]!, refScore(cfg, rounded, s, 1).logprobs)).toBeLessThan(1e-4);
    engine.destroy();
  });

  it('LoRA adapters in every linear; adapters: false is the base model', async () => {
    const cfg = tinyConfig();
    const w = randomRefWeights(cfg, 10);
    const targets = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
    const lora = randomRefLora(cfg, { r: 3, alpha: 6, targets: [...targets], seed: 11 });
    const engine = await loadEngine(memoryCheckpoint(cfg, w), { gpu, weightDtype: 'f32' });
    const fwd = engine.internals;
    for (let l = 0; l < cfg.numLayers; l++) {
      for (const t of targets) {
        const name = fwd.linearName(l, t);
        const a = fwd.createBuffer(`${name} A`, lora.A.get(name)!.length * 4);
        const b = fwd.createBuffer(`${name} B`, lora.B.get(name)!.length * 4);
        gpu.device.queue.writeBuffer(a, 0, Float32Array.from(lora.A.get(name)!));
        gpu.device.queue.writeBuffer(b, 0, Float32Array.from(lora.B.get(name)!));
        fwd.lora.set(name, { a, b, r: lora.r, scale: lora.alpha / lora.r });
      }
    }
    const seqs = SEQS(cfg.vocabSize);
    const withAdapters = await engine.score({ sequences: seqs, temperature: 1 });
    const base = await engine.score({ sequences: seqs, temperature: 1, adapters: false });
    seqs.forEach((s, i) => {
      expect(maxAbsDiff(withAdapters.logprobs[i]!, refScore(cfg, w, s, 1, lora).logprobs)).toBeLessThan(1e-4);
      expect(maxAbsDiff(base.logprobs[i]!, refScore(cfg, w, s, 1).logprobs)).toBeLessThan(1e-4);
    });
    const prompt = someIds(4, cfg.vocabSize, 12);
    const seq = engine.newSequence();
    const out = await engine.generate({ items: [{ seq, append: prompt, maxNewTokens: 4 }], sampling: { temperature: 0, topP: 1, topK: 0, seed: 0 }, stopIds: [] });
    expect(out[0]!.tokens).toEqual(refGreedy(cfg, w, prompt, 4, lora));
    engine.destroy();
  });

  it('long sequence: positions far from 0 stay within tolerance', async () => {
    const cfg = tinyConfig({ ropeTheta: 1_000_000, numLayers: 1 });
    const w = randomRefWeights(cfg, 13);
    const engine = await loadEngine(memoryCheckpoint(cfg, w), { gpu, weightDtype: 'f32' });
    const s = { ids: someIds(300, cfg.vocabSize, 14), scoreFrom: 250 };
    const out = await engine.score({ sequences: [s], temperature: 1 });
    expect(maxAbsDiff(out.logprobs[0]!, refScore(cfg, w, s, 1).logprobs)).toBeLessThan(1e-4);
    engine.destroy();
  });
});

describe(onAdapter('engine input errors'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  it('rejects bad requests with errors that name the problem', async () => {
    const cfg = tinyConfig();
    const engine = await loadEngine(memoryCheckpoint(cfg, randomRefWeights(cfg, 1)), { gpu, weightDtype: 'f32' });
    await expect(engine.score({ sequences: [{ ids: [1, 2], scoreFrom: 0 }], temperature: 1 })).rejects.toThrow(/scoreFrom/);
    await expect(engine.score({ sequences: [{ ids: [1, 999], scoreFrom: 1 }], temperature: 1 })).rejects.toThrow(/vocabulary/);
    await expect(engine.score({ sequences: [{ ids: [1, 2], scoreFrom: 1 }], temperature: 0 })).rejects.toThrow(/temperature/);
    const seq = engine.newSequence();
    await expect(engine.generate({ items: [{ seq, append: [], maxNewTokens: 2 }], sampling: { temperature: 1, topP: 1, topK: 0, seed: 1 }, stopIds: [] })).rejects.toThrow(/empty sequence/);
    await expect(engine.generate({ items: [{ seq, append: [1], maxNewTokens: 2 }], sampling: { temperature: 1, topP: 0, topK: 0, seed: 1 }, stopIds: [] })).rejects.toThrow(/topP/);
    engine.releaseSequence(seq);
    await expect(engine.generate({ items: [{ seq, append: [1], maxNewTokens: 2 }], sampling: { temperature: 1, topP: 1, topK: 0, seed: 1 }, stopIds: [] })).rejects.toThrow(/released/);
    engine.destroy();
  });

  it('rejects a checkpoint whose tensors do not match its config', async () => {
    const cfg = tinyConfig();
    const w = randomRefWeights(cfg, 1);
    w.delete('model.layers.1.mlp.up_proj.weight');
    await expect(loadEngine(memoryCheckpoint(cfg, w), { gpu })).rejects.toThrow(/up_proj/);
  });

  it('checks the memory plan before allocating and fails with its message', async () => {
    const cfg = tinyConfig();
    const ckpt = memoryCheckpoint(cfg, randomRefWeights(cfg, 1));
    await expect(loadEngine(ckpt, { gpu, plan: { numSequences: 8, maxTokensPerSequence: 4096, budgetBytes: 1024 * 1024 } })).rejects.toThrow(/does not fit.*budget/);
  });
});
