import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/model/types.ts';
import { rope_forward } from '../../src/engine/reference/layers.ts';
import { refBackward, refGreedy, refLogits, refScore } from '../../src/engine/reference/qwen3.ts';
import { linearShape, linearTensorName, QWEN3_LINEARS } from '../../src/model/qwen3-tensors.ts';
import { randomRefLora, randomRefWeights, type RefWeights } from '../../src/engine/reference/weights.ts';
import { tinyConfig } from './tiny-config.ts';

const IDS = [3, 17, 5, 29, 11, 3, 36];

function logSumExp(xs: ArrayLike<number>, scale: number): number {
  let max = -Infinity;
  for (let i = 0; i < xs.length; i++) max = Math.max(max, xs[i] * scale);
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += Math.exp(xs[i] * scale - max);
  return max + Math.log(s);
}

function expectArraysClose(a: ArrayLike<number>, b: ArrayLike<number>, tol: number): void {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  expect(worst).toBeLessThanOrEqual(tol);
}

describe('reference forward: invariants', () => {
  const cfg = tinyConfig();
  const w = randomRefWeights(cfg, 5);

  it('log-probs are ≤ 0 and entropies lie in [0, log V]', () => {
    const { logprobs, entropy } = refScore(cfg, w, { ids: IDS, scoreFrom: 1 }, 0.8);
    expect(logprobs).toHaveLength(6);
    for (const lp of logprobs) expect(lp).toBeLessThanOrEqual(0);
    for (const h of entropy) {
      expect(h).toBeGreaterThanOrEqual(0);
      expect(h).toBeLessThanOrEqual(Math.log(cfg.vocabSize));
    }
    // Non-trivial: the random model is far from uniform.
    expect(Math.min(...entropy)).toBeLessThan(Math.log(cfg.vocabSize) - 0.1);
  });

  it('the scored distribution sums to 1 over the vocabulary, and its entropy is −Σ p log p', () => {
    const T = 0.7;
    const prefix = IDS.slice(0, 4);
    const lps = Array.from({ length: cfg.vocabSize }, (_, v) => refScore(cfg, w, { ids: [...prefix, v], scoreFrom: 4 }, T).logprobs[0]);
    const total = lps.reduce((a, lp) => a + Math.exp(lp), 0);
    expect(Math.abs(total - 1)).toBeLessThan(1e-12);
    const entropy = -lps.reduce((a, lp) => a + Math.exp(lp) * lp, 0);
    expect(refScore(cfg, w, { ids: [...prefix, 0], scoreFrom: 4 }, T).entropy[0]).toBeCloseTo(entropy, 12);
  });

  it('log-probs are log_softmax(logits / temperature) of the previous position', () => {
    const logits = refLogits(cfg, w, IDS);
    expect(logits).toHaveLength(IDS.length);
    for (const T of [1, 0.6, 1.7]) {
      const { logprobs } = refScore(cfg, w, { ids: IDS, scoreFrom: 3 }, T);
      const expected = IDS.slice(3).map((id, n) => logits[2 + n][id] / T - logSumExp(logits[2 + n], 1 / T));
      expectArraysClose(logprobs, expected, 1e-12);
    }
  });

  it('is causal: scoring a prefix gives the first values of scoring the whole sequence', () => {
    const full = refScore(cfg, w, { ids: IDS, scoreFrom: 1 }, 0.9);
    const fullLogits = refLogits(cfg, w, IDS);
    for (const n of [2, 4, 6]) {
      const part = refScore(cfg, w, { ids: IDS.slice(0, n), scoreFrom: 1 }, 0.9);
      expectArraysClose(part.logprobs, full.logprobs.slice(0, n - 1), 1e-12);
      expectArraysClose(part.entropy, full.entropy.slice(0, n - 1), 1e-12);
      const partLogits = refLogits(cfg, w, IDS.slice(0, n));
      for (let t = 0; t < n; t++) expectArraysClose(partLogits[t], fullLogits[t], 1e-12);
    }
    expect(refScore(cfg, w, { ids: IDS, scoreFrom: IDS.length }, 1)).toEqual({ logprobs: [], entropy: [] });
  });

  it('greedy decoding appends the argmax of the logits, step after step', () => {
    const untied = tinyConfig({ tieWordEmbeddings: false });
    const wu = randomRefWeights(untied, 6);
    const prompt = [9, 20];
    const out = refGreedy(untied, wu, prompt, 5);
    expect(out).toHaveLength(5);
    const ids = [...prompt];
    for (const next of out) {
      const last = refLogits(untied, wu, ids).at(-1)!;
      expect(last[next]).toBe(Math.max(...last));
      ids.push(next);
    }
    expect(refGreedy(untied, wu, prompt, 3)).toEqual(out.slice(0, 3));
    expect(refGreedy(untied, wu, prompt, 0)).toEqual([]);
  });
});

describe('reference forward: GQA head mapping, RoPE, LoRA', () => {
  /** The same model with every KV head materialized per query head, in the given kv order. */
  function expandKvHeads(cfg: ModelConfig, w: RefWeights, kvOf: (h: number) => number): { cfg: ModelConfig; w: RefWeights } {
    const mha = { ...cfg, numKvHeads: cfg.numHeads };
    const out = new Map(w);
    const { headDim: d, hiddenSize: D } = cfg;
    for (let l = 0; l < cfg.numLayers; l++) {
      for (const t of ['k_proj', 'v_proj'] as const) {
        const src = w.get(linearTensorName(l, t))!; // (K·d, D)
        const dst = new Float64Array(cfg.numHeads * d * D); // (H·d, D)
        for (let h = 0; h < cfg.numHeads; h++) dst.set(src.subarray(kvOf(h) * d * D, (kvOf(h) + 1) * d * D), h * d * D);
        out.set(linearTensorName(l, t), dst);
      }
    }
    return { cfg: mha, w: out };
  }

  it('query head h reads kv head ⌊h/(H/K)⌋ (repeat_kv order kv0,kv0,kv1,kv1)', () => {
    const cfg = tinyConfig(); // H = 4, K = 2
    const w = randomRefWeights(cfg, 7);
    const gqa = refLogits(cfg, w, IDS);
    const right = expandKvHeads(cfg, w, (h) => Math.floor(h / 2));
    const wrong = expandKvHeads(cfg, w, (h) => h % 2);
    const mhaRight = refLogits(right.cfg, right.w, IDS);
    const mhaWrong = refLogits(wrong.cfg, wrong.w, IDS);
    for (let t = 0; t < IDS.length; t++) expectArraysClose(mhaRight[t], gqa[t], 1e-12);
    expect(Math.max(...mhaWrong.at(-1)!.map((x, j) => Math.abs(x - gqa.at(-1)![j])))).toBeGreaterThan(1e-3);
  });

  it('RoPE is rotate-half with inv_freq = θ^(−2i/d), not interleaved pairs', () => {
    const x = [1, 2, 3, 4]; // one head, d = 4, θ = 100: inv_freq = [1, 0.1]
    const T = 3;
    const inp = Float64Array.from({ length: T * 4 }, (_, i) => x[i % 4]);
    const out = new Float64Array(T * 4);
    rope_forward(out, inp, T, 1, 4, 100);
    for (let p = 0; p < T; p++) {
      const [a0, a1] = [p * 1, p * 0.1];
      const expected = [
        1 * Math.cos(a0) - 3 * Math.sin(a0),
        2 * Math.cos(a1) - 4 * Math.sin(a1),
        3 * Math.cos(a0) + 1 * Math.sin(a0),
        4 * Math.cos(a1) + 2 * Math.sin(a1),
      ];
      expectArraysClose(out.subarray(p * 4, p * 4 + 4), expected, 1e-15);
    }
  });

  it('RoPE scores depend only on the relative position', () => {
    const d = 8;
    const T = 6;
    const q = [0.3, -1.2, 0.5, 2.0, -0.7, 0.1, 1.1, -0.4];
    const k = [1.0, 0.2, -0.3, 0.8, 0.6, -1.5, 0.05, 0.9];
    const rot = (v: number[]) => {
      const out = new Float64Array(T * d);
      rope_forward(out, Float64Array.from({ length: T * d }, (_, i) => v[i % d]), T, 1, d, 10_000);
      return out;
    };
    const rq = rot(q);
    const rk = rot(k);
    const dot = (p: number, s: number) => rq.subarray(p * d, p * d + d).reduce((a, x, i) => a + x * rk[s * d + i], 0);
    expect(dot(3, 1)).toBeCloseTo(dot(5, 3), 12);
    expect(dot(2, 2)).toBeCloseTo(dot(0, 0), 12);
    expect(Math.abs(dot(3, 1) - dot(3, 2))).toBeGreaterThan(1e-3);
  });

  it('LoRA equals the merged weight W + (alpha/r)·B·A on all 7 modules; B = 0 is the base model', () => {
    const cfg = tinyConfig({ tieWordEmbeddings: false });
    const w = randomRefWeights(cfg, 8);
    const lora = randomRefLora(cfg, { r: 3, alpha: 6, targets: [...QWEN3_LINEARS], seed: 9 });
    const merged = new Map(w);
    const scale = lora.alpha / lora.r;
    for (let l = 0; l < cfg.numLayers; l++) {
      for (const t of QWEN3_LINEARS) {
        const name = linearTensorName(l, t);
        const [O, I] = linearShape(cfg, t);
        const A = lora.A.get(name)!;
        const B = lora.B.get(name)!;
        const W = Float64Array.from(w.get(name)!);
        for (let o = 0; o < O; o++) for (let i = 0; i < I; i++) for (let k = 0; k < lora.r; k++) W[o * I + i] += scale * B[o * lora.r + k] * A[k * I + i];
        merged.set(name, W);
      }
    }
    const withLora = refLogits(cfg, w, IDS, lora);
    const withMerged = refLogits(cfg, merged, IDS);
    for (let t = 0; t < IDS.length; t++) expectArraysClose(withLora[t], withMerged[t], 1e-12);
    const base = refLogits(cfg, w, IDS);
    expect(Math.abs(withLora[3][0] - base[3][0])).toBeGreaterThan(1e-6);

    const zeroB = { ...lora, B: new Map([...lora.B].map(([n, b]) => [n, new Float64Array(b.length)])) };
    const withZeroB = refLogits(cfg, w, IDS, zeroB);
    for (let t = 0; t < IDS.length; t++) expectArraysClose(withZeroB[t], base[t], 0);
  });
});

describe('reference model: bad input is named', () => {
  const cfg = tinyConfig();
  const w = randomRefWeights(cfg, 10);

  it('rejects bad sequences, temperatures and dL/dlogp', () => {
    expect(() => refScore(cfg, w, { ids: IDS, scoreFrom: 0 }, 1)).toThrow(/scoreFrom/);
    expect(() => refScore(cfg, w, { ids: IDS, scoreFrom: 8 }, 1)).toThrow(/scoreFrom/);
    expect(() => refScore(cfg, w, { ids: [1, 37], scoreFrom: 1 }, 1)).toThrow(/token id 37 is outside the vocabulary/);
    expect(() => refScore(cfg, w, { ids: [1, 2.5], scoreFrom: 1 }, 1)).toThrow(/token id 2.5/);
    expect(() => refLogits(cfg, w, [])).toThrow(/ids is empty/);
    expect(() => refScore(cfg, w, { ids: IDS, scoreFrom: 1 }, 0)).toThrow(/temperature/);
    expect(() => refBackward(cfg, w, { ids: IDS, scoreFrom: 5 }, 1, [1])).toThrow(/dLdLogp has 1 values, expected 2/);
    expect(() => refBackward(cfg, w, { ids: IDS, scoreFrom: 6 }, 1, [NaN])).toThrow(/non-finite/);
    expect(() => refBackward(cfg, w, { ids: IDS, scoreFrom: 6 }, 1, [1], undefined, { baseGrads: false })).toThrow(/baseGrads=false needs a LoRA/);
    expect(() => refGreedy(cfg, w, [1], -1)).toThrow(/n must be a non-negative integer/);
  });

  it('rejects weights and adapters that do not fit the config', () => {
    const missing = new Map(w);
    missing.delete('model.layers.1.self_attn.k_norm.weight');
    expect(() => refLogits(cfg, missing, IDS)).toThrow(/missing tensor "model.layers.1.self_attn.k_norm.weight"/);
    const short = new Map(w);
    short.set('model.norm.weight', new Float64Array(3));
    expect(() => refLogits(cfg, short, IDS)).toThrow(/"model.norm.weight" has 3 values, expected 24/);
    const lora = randomRefLora(cfg, { r: 2, alpha: 4, targets: ['q_proj'], seed: 1 });
    lora.A.set(linearTensorName(1, 'q_proj'), new Float64Array(5));
    expect(() => refLogits(cfg, w, IDS, lora)).toThrow(/A of "model.layers.1.self_attn.q_proj.weight" must have 2×24 values, got 5/);
    const stray = randomRefLora(cfg, { r: 2, alpha: 4, targets: ['q_proj', 'up_proj'], seed: 1 });
    stray.targets = ['q_proj'];
    expect(() => refLogits(cfg, w, IDS, stray)).toThrow(/factors for "model.layers.0.mlp.up_proj.weight", which is not a target linear \[q_proj\]/);
    expect(() => refLogits(tinyConfig({ numKvHeads: 3 }), w, IDS)).toThrow(/multiple of numKvHeads/);
  });
});
