// Qwen3.5's vision tower and image+text prompts on WebGPU against transformers itself: the tiny
// Qwen3_5ForConditionalGeneration of tests/fixtures/transformers-qwen3_5-vl (its make.py), with the
// processor's pixel_values, the M-RoPE position ids, the tower's float64 output and float64 log-probs.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import type { GridThw } from '../../src/engine/vision/inputs.ts';
import type { VisionTower } from '../../src/engine/vision/tower.ts';
import { peftTensorName, readPeftAdapter } from '../../src/engine/peft-adapter.ts';
import { QWEN3_5_LINEARS, storedTensorName } from '../../src/model/qwen3-tensors.ts';
import type { NamedTensor } from '../../src/engine/types.ts';
import { refBackward, refScore, type RefSequence } from '../../src/engine/reference/qwen3.ts';
import { refLoraFromTensors, refWeightsFromCheckpoint } from '../../src/engine/reference/weights.ts';
import { mropePositionIds } from '../../src/vision/image-prompt.ts';
import { relNormError } from './train-helpers.ts';
import { maxAbsDiff, onAdapter } from './helpers.ts';
import { VL_DIR, VL_IMAGE_PAD, vlExpected, vlPixels, vlTensors } from './vl-fixture.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

/** The worst relative error over the engine's gradients, each against `want(name)`. */
function worstError(got: NamedTensor[], want: (name: string) => Float32Array | undefined): { name: string; rel: number } {
  return got.map((t) => {
    const w = want(t.name);
    if (!w) throw new Error(`no reference gradient for ${t.name}`);
    return { name: t.name, rel: relNormError(t.data, w) };
  }).sort((a, b) => b.rel - a.rel)[0]!;
}

const OFFSET = vlExpected.input_ids.indexOf(VL_IMAGE_PAD);
const LENGTH = vlExpected.input_ids.filter((t) => t === VL_IMAGE_PAD).length;

/**
 * The fixture's image prompt and a completion that sampled <|image_pad|> twice: those are text tokens
 * (types 0 for get_rope_index, their own embedding row), only the image's span holds the tower's rows.
 */
function strayPadSequence(): { ids: number[]; scoreFrom: number; positions: [number[], number[], number[]] } {
  const ids = [...vlExpected.input_ids, 54, VL_IMAGE_PAD, 71, VL_IMAGE_PAD, 412];
  const types = ids.map((_, t) => (t >= OFFSET && t < OFFSET + LENGTH ? 1 : 0));
  return { ids, scoreFrom: vlExpected.input_ids.length, positions: mropePositionIds(types, [{ gridThw: vlExpected.image_grid_thw[0]! }], 2).positions };
}

async function towerOutput(engine: WebGpuEngine, pixelValues: Float32Array, grids: GridThw[]): Promise<Float32Array> {
  const fwd = engine.internals;
  const rec = fwd.recorder('vision test');
  const { embeds, rows } = fwd.vision!.encode(rec, pixelValues, grids);
  const read = rec.read(embeds, 0, rows * fwd.config.hiddenSize * 4);
  return new Float32Array((await rec.submit())[read]!);
}

describe(onAdapter('Qwen3.5 vision-language scoring vs transformers'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  for (const weightDtype of ['f32', 'f16'] as const) {
    it(`${weightDtype} weights: the vision tower's merged embeddings and the image+text prompt's per-token log-probs vs transformers float64`, async () => {
      const engine = await loadEngine(await openCheckpoint(VL_DIR), { gpu, weightDtype, vision: true });
      expect(engine.memoryPlan.items.map((i) => i.name)).toEqual(expect.arrayContaining(['vision tower weights', 'vision activations']));
      // f16: the tower's matrices are halves too; their rounding costs ~1e-3 in the tower, ~4e-3 in log-probs (a broken kernel costs O(1)).
      const towerParams = (engine.internals.vision as VisionTower).params;
      expect(towerParams.get('model.visual.blocks.0.attn.qkv.weight')!.dtype).toBe(weightDtype);
      // The plan counts exactly the bytes the tower's weights were uploaded into.
      const uploaded = [...towerParams.values()].reduce((a, p) => a + p.chunks.reduce((b, c) => b + c.buffer.size, 0), 0);
      expect(engine.memoryPlan.items.find((i) => i.name === 'vision tower weights')!.bytes).toBe(uploaded);
      const tol = weightDtype === 'f32' ? 1e-4 : 2e-2;
      const main = vlPixels('main');
      const merged = await towerOutput(engine, main, vlExpected.image_grid_thw);
      const towerErr = maxAbsDiff(merged, vlExpected.vision.merged);
      expect(towerErr).toBeLessThan(tol);

      const images = { pixelValues: main, grids: vlExpected.image_grid_thw, offsets: [vlExpected.input_ids.indexOf(VL_IMAGE_PAD)], positions: vlExpected.position_ids };
      const seq = { ids: vlExpected.input_ids, scoreFrom: vlExpected.score_from, images };
      // Packed behind a text-only sequence: its plain positions and the image rows must not mix.
      const text = { ids: vlExpected.input_ids.filter((t) => t !== 484).slice(0, 12), scoreFrom: 1 };
      const out = await engine.score({ sequences: [text, seq], temperature: vlExpected.temperature });
      const err = maxAbsDiff(out.logprobs[1]!, vlExpected.logprobs);
      console.log(`${weightDtype}: vision tower max |Δ| = ${towerErr.toExponential(2)}, image+text log-probs max |Δ| = ${err.toExponential(2)} vs transformers float64`);
      expect(err).toBeLessThan(tol);
      const alone = await engine.score({ sequences: [text], temperature: vlExpected.temperature });
      expect(maxAbsDiff(out.logprobs[0]!, alone.logprobs[0]!)).toBeLessThan(1e-6);
      engine.destroy();
    });
  }

  it('gradients on the image+text prompt (vision tower frozen): LoRA on all twelve text linears and full fine-tuning of the language model within 1e-3 relative of torch', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const cfg = ckpt.config;
    const images = { pixelValues: vlPixels('main'), grids: vlExpected.image_grid_thw, offsets: [vlExpected.input_ids.indexOf(VL_IMAGE_PAD)], positions: vlExpected.position_ids };
    const request = () => ({
      sequences: [{ ids: vlExpected.input_ids, scoreFrom: vlExpected.score_from, images }],
      temperature: vlExpected.temperature,
      dLdLogp: [Float32Array.from(vlExpected.loss_weights)],
    });
    const lora = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    const adapter = await readPeftAdapter(`${VL_DIR}adapter`, cfg);
    lora.setTrainable({ kind: 'lora', lora: { r: 2, alpha: 4, targetModules: [...QWEN3_5_LINEARS], seed: 1 } });
    const zeros = (t: NamedTensor, suffix: string) => ({ name: t.name + suffix, shape: t.shape, data: new Float32Array(t.data.length) });
    await lora.loadState({ tensors: adapter.tensors.flatMap((t) => [t, zeros(t, '.exp_avg'), zeros(t, '.exp_avg_sq')]), step: 0 });
    await lora.backward(request());
    const loraWant = await vlTensors('lora-grads.safetensors');
    const loraWorst = worstError(await lora.readGrads(), (n) => loraWant.get(peftTensorName(n, cfg)));
    lora.destroy();

    const full = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    // The tower trained too: qwen3_5-vision-full.test.ts.
    full.setTrainable({ kind: 'full', freezeVisionTower: true });
    await full.backward(request());
    const fullWant = await vlTensors('grads.safetensors');
    const fullWorst = worstError(await full.readGrads(), (n) => fullWant.get(storedTensorName(cfg, n)));
    full.destroy();
    console.log(`image prompt grads: LoRA worst relative error ${loraWorst.rel.toExponential(2)} (${loraWorst.name}), full FT ${fullWorst.rel.toExponential(2)} (${fullWorst.name})`);
    expect(loraWorst.rel, loraWorst.name).toBeLessThan(1e-3);
    expect(fullWorst.rel, fullWorst.name).toBeLessThan(1e-3);
  });

  it('several images in one pass attend within their own image only; bad image inputs fail with the problem named', async () => {
    const engine = await loadEngine(await openCheckpoint(VL_DIR), { gpu, weightDtype: 'f32', vision: true });
    const main = vlPixels('main');
    const small = vlPixels('small');
    const both = new Float32Array(main.length + small.length);
    both.set(small);
    both.set(main, small.length);
    const out = await towerOutput(engine, both, [...vlExpected.small_image_grid_thw, ...vlExpected.image_grid_thw]);
    const smallRows = vlExpected.small_image_grid_thw.reduce((a, [t, h, w]) => a + (t * h * w) / 4, 0);
    expect(maxAbsDiff(out.subarray(smallRows * engine.config.hiddenSize), vlExpected.vision.merged)).toBeLessThan(1e-4);

    const images = { pixelValues: main, grids: vlExpected.image_grid_thw, offsets: [vlExpected.input_ids.indexOf(VL_IMAGE_PAD)], positions: vlExpected.position_ids };
    const ids = vlExpected.input_ids;
    const score = (seq: Partial<typeof images>, seqIds = ids) => engine.score({ sequences: [{ ids: seqIds, scoreFrom: 1, images: { ...images, ...seq } }], temperature: 1 });
    await expect(score({}, ids.filter((_, i) => i !== 4))).rejects.toThrow(/sequence 0 image 0 spans 6 tokens from offset 4, but token 9 is id 482, not the image token 484/);
    await expect(score({ offsets: [OFFSET - 1] })).rejects.toThrow(/image 0 spans 6 tokens from offset 3, but token 3 is id 481/);
    await expect(score({ offsets: [] })).rejects.toThrow(/images.offsets must give one start per image \(1 grids\), got \[\]/);
    await expect(score({ offsets: [ids.length - 2] })).rejects.toThrow(/image 0 spans 6 tokens from offset 26, past the end of its 28 ids/);
    await expect(score({ offsets: [1.5] })).rejects.toThrow(/image 0 offset 1.5 must be an integer at or after 0/);
    // Two images whose spans overlap: the second (6 tokens) starts on the first's (1 token).
    await expect(score({ pixelValues: both, grids: [...vlExpected.small_image_grid_thw, ...vlExpected.image_grid_thw], offsets: [OFFSET, OFFSET] }))
      .rejects.toThrow(/image 1 offset 4 must be an integer at or after 5 \(the end of image 0\)/);
    // A stray image token id outside the spans is text, not an error (the old id count refused it).
    const stray = [...ids, VL_IMAGE_PAD];
    const strayPositions = vlExpected.position_ids.map((r) => [...r, r[r.length - 1]! + 1]) as [number[], number[], number[]];
    expect((await score({ positions: strayPositions }, stray)).logprobs[0]).toHaveLength(stray.length - 1);
    await expect(engine.score({ sequences: [{ ids, scoreFrom: 1, images: { ...images, pixelValues: main.subarray(1) } }], temperature: 1 }))
      .rejects.toThrow(/pixel_values holds 36863 values; the grids \[\[1,4,6\]\] need 24 patches × 1536/);
    engine.destroy();
    const textOnly = await loadEngine(await openCheckpoint(VL_DIR), { gpu, weightDtype: 'f32' });
    await expect(textOnly.score({ sequences: [{ ids, scoreFrom: 1, images }], temperature: 1 })).rejects.toThrow(/no vision tower/);
    textOnly.destroy();
  });
  it('a completion that sampled <|image_pad|>: log-probs, full-FT gradients (the pad embedding row included) and LoRA gradients vs the float64 reference with the same placement', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const cfg = ckpt.config;
    const w = await refWeightsFromCheckpoint(ckpt);
    const { ids, scoreFrom, positions } = strayPadSequence();
    const ref: RefSequence = { ids, scoreFrom, vision: { embeds: Float64Array.from(vlExpected.vision.merged), spans: [{ offset: OFFSET, length: LENGTH }], positions } };
    const images = { pixelValues: vlPixels('main'), grids: vlExpected.image_grid_thw, offsets: [OFFSET], positions };
    const dLdLogp = [0.7, -1.1, 0.4, 0.9, -0.5];
    const request = { sequences: [{ ids, scoreFrom, images }], temperature: 1, dLdLogp: [Float32Array.from(dLdLogp)] };
    const full = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    let err: number;
    let worst: { name: string; rel: number };
    let padErr: number;
    let padRowRef: number[];
    try {
      const out = await full.score({ sequences: request.sequences, temperature: 1 });
      err = maxAbsDiff(out.logprobs[0]!, refScore(cfg, w, ref, 1).logprobs);
      full.setTrainable({ kind: 'full', freezeVisionTower: true }); // the reference takes the tower's output as given
      await full.backward(request);
      const grads = await full.readGrads();
      const { grads: refGrads } = refBackward(cfg, w, ref, 1, dLdLogp);
      worst = worstError(grads, (n) => refGrads.get(n) && Float32Array.from(refGrads.get(n)!));
      const D = cfg.hiddenSize;
      const row = (g: ArrayLike<number>) => Array.from({ length: D }, (_, i) => g[VL_IMAGE_PAD * D + i]!);
      padRowRef = row(refGrads.get('model.embed_tokens.weight')!);
      padErr = relNormError(row(grads.find((t) => t.name === 'model.embed_tokens.weight')!.data), padRowRef);
    } finally {
      full.destroy();
    }

    const lora = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    let loraWorst: { name: string; rel: number };
    try {
      const adapter = await readPeftAdapter(`${VL_DIR}adapter`, cfg);
      lora.setTrainable({ kind: 'lora', lora: { r: 2, alpha: 4, targetModules: [...QWEN3_5_LINEARS], seed: 1 } });
      const zeros = (t: NamedTensor, suffix: string) => ({ name: t.name + suffix, shape: t.shape, data: new Float32Array(t.data.length) });
      await lora.loadState({ tensors: adapter.tensors.flatMap((t) => [t, zeros(t, '.exp_avg'), zeros(t, '.exp_avg_sq')]), step: 0 });
      await lora.backward(request);
      const refLora = refLoraFromTensors(cfg, { r: 2, alpha: 4, targets: [...QWEN3_5_LINEARS] }, adapter.tensors);
      const { loraGrads } = refBackward(cfg, w, ref, 1, dLdLogp, refLora, { baseGrads: false });
      loraWorst = worstError(await lora.readGrads(), (n) => {
        const m = /^(.+)\.lora_([AB])\.weight$/.exec(n);
        const g = m && (m[2] === 'A' ? loraGrads!.A : loraGrads!.B).get(`${m[1]}.weight`);
        return g ? Float32Array.from(g) : undefined;
      });
    } finally {
      lora.destroy();
    }
    console.log(`sampled <|image_pad|>: log-probs max |Δ| ${err.toExponential(2)} vs the float64 reference; full-FT grads worst ${worst.rel.toExponential(2)} (${worst.name}), pad embedding row ${padErr.toExponential(2)}; LoRA grads worst ${loraWorst.rel.toExponential(2)} (${loraWorst.name})`);
    expect(err).toBeLessThan(1e-4);
    expect(worst.rel, worst.name).toBeLessThan(1e-3);
    // The sampled pads train their embedding row like any token (an id-based mask would zero it).
    expect(Math.max(...padRowRef.map(Math.abs))).toBeGreaterThan(1e-4);
    expect(padErr).toBeLessThan(1e-3);
    expect(loraWorst.rel, loraWorst.name).toBeLessThan(1e-3);
  });
});
