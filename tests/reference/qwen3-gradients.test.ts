import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/model/types.ts';
import { refBackward } from '../../src/engine/reference/qwen3.ts';
import { linearTensorName, QWEN3_LINEARS } from '../../src/model/qwen3-tensors.ts';
import { randomRefLora, randomRefWeights, refWeightShapes } from '../../src/engine/reference/weights.ts';
import { seededNormal } from '../../src/engine/reference/random.ts';
import { fdAgrees, fdCompare, relativeError, SIGNIFICANT_GRAD, tensorKind, type FdResult } from './fd-check.ts';
import { tinyConfig } from './tiny-config.ts';

// Odd length T = 7, scoring from position 2: 5 scored tokens with weights of both signs.
const IDS = [3, 17, 5, 29, 11, 3, 36];
const SEQ = { ids: IDS, scoreFrom: 2 };

function randomWeights(n: number, seed: number): number[] {
  const normal = seededNormal(seed);
  return Array.from({ length: n }, () => normal());
}

/** Every row agrees, and every tensor kind was checked on at least one significant gradient. */
function expectAllAgree(rows: FdResult[], kinds: string[]): void {
  const bad = rows.filter((r) => !fdAgrees(r));
  expect(bad, `disagreeing coordinates: ${JSON.stringify(bad.slice(0, 5))}`).toEqual([]);
  const significantKinds = new Set(rows.filter((r) => Math.abs(r.analytic) > SIGNIFICANT_GRAD).map((r) => tensorKind(r.tensor)));
  expect([...significantKinds].sort()).toEqual([...kinds].sort());
  const worst = Math.max(...rows.filter((r) => Math.abs(r.analytic) > SIGNIFICANT_GRAD).map(relativeError));
  expect(worst).toBeLessThan(1e-6);
}

function baseKinds(cfg: ModelConfig): string[] {
  return [...new Set([...refWeightShapes(cfg).keys()].map(tensorKind))];
}

describe('reference backward vs central finite differences (float64, h = 1e-5)', () => {
  it('tied head, GQA H=4 K=2, head_dim 8 ≠ hidden 24 / 4 heads, T=7, temperature 0.7: every base tensor', () => {
    const cfg = tinyConfig();
    const w = randomRefWeights(cfg, 11);
    const rows = fdCompare(cfg, w, SEQ, 0.7, randomWeights(5, 12), { base: true, perTensor: 4, seed: 13 });
    const kinds = baseKinds(cfg);
    expect(kinds).toContain('model.layers.*.self_attn.q_norm.weight');
    expect(kinds).toContain('model.layers.*.self_attn.k_norm.weight');
    expect(kinds).not.toContain('lm_head.weight');
    expectAllAgree(rows, kinds);
  });

  it('untied head (lm_head gets its own gradient), MQA K=1, temperature 1.3', () => {
    const cfg = tinyConfig({ tieWordEmbeddings: false, numKvHeads: 1, headDim: 6, ropeTheta: 1_000_000 });
    const w = randomRefWeights(cfg, 21);
    const rows = fdCompare(cfg, w, SEQ, 1.3, randomWeights(5, 22), { base: true, perTensor: 4, seed: 23 });
    const kinds = baseKinds(cfg);
    expect(kinds).toContain('lm_head.weight');
    expectAllAgree(rows, kinds);
  });

  it('LoRA A and B on all 7 target modules (and the base weights under LoRA), temperature 0.9', () => {
    const cfg = tinyConfig();
    const w = randomRefWeights(cfg, 31);
    const lora = randomRefLora(cfg, { r: 3, alpha: 8, targets: [...QWEN3_LINEARS], seed: 32 });
    const dLdLogp = randomWeights(5, 33);
    const rows = fdCompare(cfg, w, SEQ, 0.9, dLdLogp, { lora, base: true, perTensor: 3, seed: 34 });
    const loraKinds = QWEN3_LINEARS.flatMap((t) => [`${tensorKind(linearTensorName(0, t))}:lora_A`, `${tensorKind(linearTensorName(0, t))}:lora_B`]);
    expectAllAgree(rows, [...baseKinds(cfg), ...loraKinds]);

    // Skipping the frozen base grads changes nothing in the LoRA grads.
    const withBase = refBackward(cfg, w, SEQ, 0.9, dLdLogp, lora);
    const loraOnly = refBackward(cfg, w, SEQ, 0.9, dLdLogp, lora, { baseGrads: false });
    expect(loraOnly.grads.size).toBe(0);
    for (const [name, g] of withBase.loraGrads!.A) expect(loraOnly.loraGrads!.A.get(name)).toEqual(g);
    for (const [name, g] of withBase.loraGrads!.B) expect(loraOnly.loraGrads!.B.get(name)).toEqual(g);
  });

  it('LoRA on a subset of modules leaves the other linears plain (untied head, scoring from 1)', () => {
    const cfg = tinyConfig({ tieWordEmbeddings: false });
    const w = randomRefWeights(cfg, 41);
    const lora = randomRefLora(cfg, { r: 2, alpha: 2, targets: ['v_proj', 'down_proj'], seed: 42 });
    const seq = { ids: IDS, scoreFrom: 1 };
    const rows = fdCompare(cfg, w, seq, 1, randomWeights(6, 43), { lora, base: false, perTensor: 4, seed: 44 });
    expectAllAgree(rows, [
      'model.layers.*.self_attn.v_proj.weight:lora_A',
      'model.layers.*.self_attn.v_proj.weight:lora_B',
      'model.layers.*.mlp.down_proj.weight:lora_A',
      'model.layers.*.mlp.down_proj.weight:lora_B',
    ]);
  });

  it('entropy term: L = Σ c·logprob + Σ e·entropy, tied head, temperature 0.8, base and LoRA', () => {
    const cfg = tinyConfig();
    const w = randomRefWeights(cfg, 51);
    const lora = randomRefLora(cfg, { r: 2, alpha: 4, targets: ['q_proj', 'up_proj'], seed: 52 });
    const dLdLogp = randomWeights(5, 53);
    const dLdEntropy = randomWeights(5, 54);
    const rows = fdCompare(cfg, w, SEQ, 0.8, dLdLogp, { lora, base: true, perTensor: 3, seed: 55, dLdEntropy });
    expectAllAgree(rows, [
      ...baseKinds(cfg),
      'model.layers.*.self_attn.q_proj.weight:lora_A',
      'model.layers.*.self_attn.q_proj.weight:lora_B',
      'model.layers.*.mlp.up_proj.weight:lora_A',
      'model.layers.*.mlp.up_proj.weight:lora_B',
    ]);
    // The entropy term really changes the gradient (and an all-zero dLdEntropy does not).
    const plain = refBackward(cfg, w, SEQ, 0.8, dLdLogp);
    const withH = refBackward(cfg, w, SEQ, 0.8, dLdLogp, undefined, { dLdEntropy });
    const zeroH = refBackward(cfg, w, SEQ, 0.8, dLdLogp, undefined, { dLdEntropy: [0, 0, 0, 0, 0] });
    const head = 'model.embed_tokens.weight';
    expect(zeroH.grads.get(head)).toEqual(plain.grads.get(head));
    const diff = plain.grads.get(head)!.reduce((m, g, i) => Math.max(m, Math.abs(g - withH.grads.get(head)![i]!)), 0);
    expect(diff).toBeGreaterThan(1e-3);
    expect(() => refBackward(cfg, w, SEQ, 0.8, dLdLogp, undefined, { dLdEntropy: [1, 2] })).toThrow(/dLdEntropy has 2 values, expected 5/);
  });
});
