// The Qwen3.5 reference backward against central finite differences (float64), every tensor kind:
// the DeltaNet's conv, A_log, dt_bias, gated norm and five projections, the gated q_proj, (1 + w) norms.
import { describe, expect, it } from 'vitest';
import { refBackward } from '../../src/engine/reference/qwen3.ts';
import { randomRefLora, randomRefWeights, refWeightShapes } from '../../src/engine/reference/weights.ts';
import { seededNormal } from '../../src/engine/reference/random.ts';
import { QWEN3_5_LINEARS } from '../../src/model/qwen3-tensors.ts';
import { fdAgrees, fdCompare, SIGNIFICANT_GRAD, tensorKind, type FdResult } from './fd-check.ts';
import { tinyQwen35Config } from './tiny-config.ts';

// T = 9 > the conv kernel (3), scoring from 2.
const SEQ = { ids: [3, 17, 5, 29, 11, 3, 36, 8, 21], scoreFrom: 2 };
const weights = (n: number, seed: number) => {
  const normal = seededNormal(seed);
  return Array.from({ length: n }, () => normal());
};

function expectAgree(rows: FdResult[], kinds: string[]): void {
  const bad = rows.filter((r) => !fdAgrees(r));
  expect(bad, `disagreeing coordinates: ${JSON.stringify(bad.slice(0, 5))}`).toEqual([]);
  const significant = new Set(rows.filter((r) => Math.abs(r.analytic) > SIGNIFICANT_GRAD).map((r) => tensorKind(r.tensor)));
  expect([...significant].sort()).toEqual([...new Set(kinds)].sort());
}

describe('Qwen3.5 reference backward vs finite differences (float64, h = 1e-5)', () => {
  it('every base tensor, untied head, temperature 0.8, with an entropy term', () => {
    const cfg = tinyQwen35Config({ tieWordEmbeddings: false });
    const w = randomRefWeights(cfg, 21);
    const rows = fdCompare(cfg, w, SEQ, 0.8, weights(7, 22), { base: true, perTensor: 3, seed: 23, dLdEntropy: weights(7, 24) });
    const kinds = [...refWeightShapes(cfg).keys()].map(tensorKind);
    expect(kinds).toContain('model.layers.*.linear_attn.conv1d.weight');
    expect(kinds).toContain('model.layers.*.linear_attn.A_log');
    expectAgree(rows, kinds);
  });

  it('LoRA on all twelve linears (A and B nonzero)', () => {
    const cfg = tinyQwen35Config();
    const w = randomRefWeights(cfg, 31);
    const lora = randomRefLora(cfg, { r: 2, alpha: 4, targets: [...QWEN3_5_LINEARS], seed: 32 });
    const rows = fdCompare(cfg, w, SEQ, 1, weights(7, 33), { lora, base: false, perTensor: 2, seed: 34 });
    expectAgree(rows, [...lora.A.keys()].flatMap((n) => [`${tensorKind(n)}:lora_A`, `${tensorKind(n)}:lora_B`]));
  });

  it('a LoRA target no layer has is a clear error', () => {
    const cfg = tinyQwen35Config({ layerTypes: ['full_attention', 'full_attention', 'full_attention'] });
    const w = randomRefWeights(cfg, 1);
    expect(() => randomRefLora(cfg, { r: 2, alpha: 4, targets: ['in_proj_z'], seed: 2 })).toThrow(/target module "in_proj_z" is in no layer/);
    expect(refBackward(cfg, w, SEQ, 1, weights(7, 3)).grads.has('model.layers.0.self_attn.q_proj.weight')).toBe(true);
  });
});
