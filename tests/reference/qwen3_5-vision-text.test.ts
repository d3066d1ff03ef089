// The float64 reference's image prompts (RefSequence.vision: the tower's rows placed at each image's
// span, M-RoPE positions) against transformers on the tiny Qwen3.5 VL fixture
// (tests/fixtures/transformers-qwen3_5-vl/make.py), and its backward by finite differences on a
// sequence whose completion sampled <|image_pad|> outside the image: that token is text (its own
// embedding row, a text position after the image), so its embedding row gets a gradient.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { openCheckpoint, readSafetensorsHeader } from '../../src/model/checkpoint.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { decodeToFloat32 } from '../../src/model/safetensors.ts';
import { refBackward, refScore, type RefSequence } from '../../src/engine/reference/qwen3.ts';
import { refWeightsFromCheckpoint } from '../../src/engine/reference/weights.ts';
import { mropePositionIds } from '../../src/vision/image-prompt.ts';
import { numericGrad, weightedLogprobLoss } from './fd-check.ts';

const DIR = 'tests/fixtures/transformers-qwen3_5-vl';
const PAD = 484;
const expected = JSON.parse(await readFile(`${DIR}/expected.json`, 'utf8')) as {
  input_ids: number[]; image_grid_thw: [number, number, number][]; position_ids: [number[], number[], number[]];
  vision: { merged: number[] }; score_from: number; logprobs: number[]; loss_weights: number[];
};
const OFFSET = expected.input_ids.indexOf(PAD);
const LENGTH = expected.input_ids.filter((t) => t === PAD).length;
const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => Math.max(...Array.from(a, (x, i) => Math.abs(x - b[i]!)));

async function load() {
  const ckpt = await openCheckpoint(DIR);
  return { cfg: ckpt.config, w: await refWeightsFromCheckpoint(ckpt) };
}

/** The fixture's prompt plus a completion that sampled the image token twice. */
function strayPadSequence(): { ids: number[]; positions: [number[], number[], number[]] } {
  const ids = [...expected.input_ids, 54, PAD, 71, PAD, 412];
  const types = ids.map((_, t) => (t >= OFFSET && t < OFFSET + LENGTH ? 1 : 0));
  return { ids, positions: mropePositionIds(types, [{ gridThw: expected.image_grid_thw[0]! }], 2).positions };
}

describe('Qwen3.5 reference (float64) with images placed by position', () => {
  it('the fixture\'s image prompt: log-probs and every language-model gradient match transformers float64', async () => {
    const { cfg, w } = await load();
    const seq: RefSequence = {
      ids: expected.input_ids, scoreFrom: expected.score_from,
      vision: { embeds: Float64Array.from(expected.vision.merged), spans: [{ offset: OFFSET, length: LENGTH }], positions: expected.position_ids },
    };
    const s = refScore(cfg, w, seq, 1);
    const err = maxAbsDiff(s.logprobs, expected.logprobs);
    expect(err).toBeLessThan(1e-10);
    const files = nodeFolderFiles(DIR);
    const want = new Map<string, Float32Array>();
    for (const t of await readSafetensorsHeader(files, 'grads.safetensors')) want.set(t.name, decodeToFloat32(t, await files.read('grads.safetensors', t.fileOffset, t.fileOffset + t.byteLength)));
    const { grads } = refBackward(cfg, w, seq, 1, expected.loss_weights);
    let worst = { name: '', rel: 0 };
    for (const [name, g] of grads) {
      const ref = want.get(name) ?? want.get(name.replace(/^model\./, 'model.language_model.'));
      expect(ref, name).toBeDefined();
      let num = 0;
      let den = 0;
      g.forEach((v, i) => { num += (v - ref![i]!) ** 2; den += ref![i]! ** 2; });
      const rel = Math.sqrt(num / Math.max(den, 1e-300));
      if (rel > worst.rel) worst = { name, rel };
    }
    console.log(`reference with images vs transformers: log-probs max |Δ| ${err.toExponential(2)}, worst grad ${worst.rel.toExponential(2)} (${worst.name})`);
    // grads.safetensors stores f32: 6e-8 relative rounding.
    expect(worst.rel, worst.name).toBeLessThan(1e-6);
    // The <|image_pad|> embedding row: no gradient (its only occurrences are the image's span).
    const V = cfg.hiddenSize;
    expect(Math.max(...grads.get('model.embed_tokens.weight')!.subarray(PAD * V, (PAD + 1) * V).map(Math.abs))).toBe(0);
  });

  it('a sampled <|image_pad|> after the image is a text token: backward agrees with finite differences, its embedding row included', async () => {
    const { cfg, w } = await load();
    const { ids, positions } = strayPadSequence();
    const embeds = Float64Array.from(expected.vision.merged);
    const seq: RefSequence = { ids, scoreFrom: expected.input_ids.length, vision: { embeds, spans: [{ offset: OFFSET, length: LENGTH }], positions } };
    const dLdLogp = [0.7, -1.1, 0.4, 0.9, -0.5];
    const { grads } = refBackward(cfg, w, seq, 1, dLdLogp);
    const loss = weightedLogprobLoss(cfg, w, seq, 1, dLdLogp);
    const D = cfg.hiddenSize;
    const dEmbed = grads.get('model.embed_tokens.weight')!;
    // The pad row, a text token's row, and an attention weight (M-RoPE positions enter there).
    const coords = [
      ...[0, 5, 17, 31].map((i) => ({ name: 'model.embed_tokens.weight', index: PAD * D + i })),
      { name: 'model.embed_tokens.weight', index: 71 * D + 3 },
      { name: 'model.layers.1.self_attn.k_proj.weight', index: 37 },
      { name: 'model.layers.1.self_attn.q_proj.weight', index: 101 },
    ];
    for (const { name, index } of coords) {
      const analytic = grads.get(name)![index]!;
      const numeric = numericGrad(loss, w.get(name)!, index);
      expect(Math.abs(analytic - numeric), `${name}[${index}]: ${analytic} vs ${numeric}`).toBeLessThan(1e-6 * Math.max(Math.abs(analytic), Math.abs(numeric)) + 1e-9);
    }
    // The sampled pads are trained: their embedding row has a gradient; the span's rows are the tower's.
    const padRow = dEmbed.subarray(PAD * D, (PAD + 1) * D);
    expect(Math.max(...padRow.map(Math.abs))).toBeGreaterThan(1e-4);
    // The pad's embedding row enters only at the sampled pads: moving it leaves every log-prob before
    // the first of them as it was (the image's span reads the tower's rows, not that row).
    const before = refScore(cfg, w, seq, 1).logprobs;
    const embed = w.get('model.embed_tokens.weight')!;
    const saved = embed.slice(PAD * D, (PAD + 1) * D);
    embed.subarray(PAD * D, (PAD + 1) * D).fill(0.5);
    const after = refScore(cfg, w, seq, 1).logprobs;
    embed.set(saved, PAD * D);
    expect(after[0]).toBe(before[0]); // ids[28] = 54, predicted from the prompt alone
    expect(after[1]).toBe(before[1]); // ids[29] = the first sampled pad, predicted before it is read
    expect(Math.abs(after[2]! - before[2]!)).toBeGreaterThan(1e-6);
  });

  it('bad image spans are refused with the problem named', async () => {
    const { cfg, w } = await load();
    const embeds = Float64Array.from(expected.vision.merged);
    const base = { ids: expected.input_ids, scoreFrom: 1 };
    expect(() => refScore(cfg, w, { ...base, vision: { embeds, spans: [{ offset: 25, length: LENGTH }], positions: expected.position_ids } }, 1))
      .toThrow(/image 0 span \[25, 31\) must be non-empty, inside the 28 ids/);
    expect(() => refScore(cfg, w, { ...base, vision: { embeds: embeds.subarray(1), spans: [{ offset: OFFSET, length: LENGTH }], positions: expected.position_ids } }, 1))
      .toThrow(/embeds holds 191 values; the spans need 6 rows × 32/);
  });
});
