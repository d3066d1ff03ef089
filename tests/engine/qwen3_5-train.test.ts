// Qwen3.5's backward in the engine (Gated DeltaNet + gated attention) against torch autograd: the
// tiny checkpoint transformers wrote (tests/fixtures/transformers-qwen3_5-f32, its make.py), with
// dL/dθ of L = Σ_t w_t·logp_t for every parameter (full fine-tuning) and dL/dA, dL/dB of PEFT's LoRA
// on all twelve linears (nonzero B), each tensor within 1e-3 relative. Then the LoRA adapter the
// engine exports reads back, and one AdamW step raises the scored log-probs (the loss falls). Last,
// LoRA over f16-stored matrices against float64 on the same rounded weights.
import { mkdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint, readSafetensorsHeader } from '../../src/model/checkpoint.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { decodeToFloat32 } from '../../src/model/safetensors.ts';
import { peftAdapterFiles, peftTensorName, readPeftAdapter } from '../../src/engine/peft-adapter.ts';
import { QWEN3_5_LINEARS } from '../../src/model/qwen3-tensors.ts';
import type { NamedTensor } from '../../src/engine/types.ts';
import { relNormError } from './train-helpers.ts';
import { refBackward } from '../../src/engine/reference/qwen3.ts';
import { refLoraFromTensors, refWeightsFromCheckpoint } from '../../src/engine/reference/weights.ts';
import { floatToHalf, halfToFloat } from '../../src/model/safetensors.ts';
import { loraTensorName } from '../../src/engine/train/trainable.ts';
import { maxAbsDiff, onAdapter } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const DIR = new URL('../fixtures/transformers-qwen3_5-f32/', import.meta.url).pathname;

interface Expected { ids: number[]; score_from: number; temperature: number; loss_weights: number[] }

async function tensorsOf(dir: string, file: string): Promise<Map<string, Float32Array>> {
  const files = nodeFolderFiles(dir);
  const out = new Map<string, Float32Array>();
  for (const t of await readSafetensorsHeader(files, file)) out.set(t.name, decodeToFloat32(t, await files.read(file, t.fileOffset, t.fileOffset + t.byteLength)));
  return out;
}

/** Every tensor's relative error, worst first. */
function worstErrors(got: NamedTensor[], want: (name: string) => Float32Array | undefined): { name: string; rel: number }[] {
  return got.map((t) => {
    const w = want(t.name);
    if (!w) throw new Error(`no reference gradient for ${t.name}`);
    return { name: t.name, rel: relNormError(t.data, w) };
  }).sort((a, b) => b.rel - a.rel);
}

describe(onAdapter('Qwen3.5 training gradients vs torch autograd'), () => {
  let gpu: Gpu;
  let e: Expected;
  beforeAll(async () => {
    gpu = await getGpu();
    e = JSON.parse(await readFile(`${DIR}expected.json`, 'utf8')) as Expected;
  });
  afterAll(() => gpu?.device.destroy());
  const request = () => ({
    sequences: [{ ids: e.ids, scoreFrom: e.score_from }],
    temperature: e.temperature,
    dLdLogp: [Float32Array.from(e.loss_weights)],
  });

  it('full fine-tuning: every parameter (conv1d, A_log, dt_bias, norms, embeddings, head) within 1e-3 relative', async () => {
    const ckpt = await openCheckpoint(DIR);
    // `auto` keeps an f32 checkpoint in f32 (lavapipe's shader-f16 included).
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'auto' });
    engine.setTrainable({ kind: 'full' });
    await engine.backward(request());
    const got = await engine.readGrads();
    const want = await tensorsOf(DIR, 'grads.safetensors');
    expect(new Set(got.map((t) => t.name))).toEqual(new Set(want.keys()));
    const worst = worstErrors(got, (n) => want.get(n));
    console.log(`qwen3_5 full-FT grads: worst relative error ${worst[0]!.rel.toExponential(2)} (${worst[0]!.name}); median ${worst[worst.length >> 1]!.rel.toExponential(2)}`);
    expect(worst[0]!.rel, JSON.stringify(worst.slice(0, 3))).toBeLessThan(1e-3);
    engine.destroy();
  });

  // 256 tokens (the whole context): many delta-rule segments, each replayed from its saved state.
  it.each(['chunked', 'recurrent'] as const)('full fine-tuning over 256 tokens (four 64-token chunks): every parameter within 1e-3 relative (%s delta rule)', async (deltaRule) => {
    const LONG = new URL('../fixtures/transformers-qwen3_5-long/', import.meta.url).pathname;
    const long = JSON.parse(await readFile(`${LONG}expected.json`, 'utf8')) as Expected;
    const engine = await loadEngine(await openCheckpoint(DIR), { gpu, weightDtype: 'f32', deltaRule });
    engine.setTrainable({ kind: 'full' });
    await engine.backward({ sequences: [{ ids: long.ids, scoreFrom: long.score_from }], temperature: long.temperature, dLdLogp: [Float32Array.from(long.loss_weights)] });
    const got = await engine.readGrads();
    const want = await tensorsOf(LONG, 'grads.safetensors');
    expect(new Set(got.map((t) => t.name))).toEqual(new Set(want.keys()));
    const worst = worstErrors(got, (n) => want.get(n));
    console.log(`qwen3_5 full-FT grads, 256 tokens (${deltaRule}): worst relative error ${worst[0]!.rel.toExponential(2)} (${worst[0]!.name}); median ${worst[worst.length >> 1]!.rel.toExponential(2)}`);
    expect(worst[0]!.rel, JSON.stringify(worst.slice(0, 3))).toBeLessThan(1e-3);
    engine.destroy();
  });

  it('LoRA on all twelve linears (PEFT\'s adapter, nonzero B): every A and B within 1e-3 relative; the export reads back; a step lowers the loss', async () => {
    const ckpt = await openCheckpoint(DIR);
    const cfg = ckpt.config;
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'auto' });
    const adapter = await readPeftAdapter(`${DIR}adapter`, cfg);
    engine.setTrainable({ kind: 'lora', lora: { r: 2, alpha: 4, targetModules: [...QWEN3_5_LINEARS], seed: 1 } });
    const zeros = (t: NamedTensor, suffix: string) => ({ name: t.name + suffix, shape: t.shape, data: new Float32Array(t.data.length) });
    await engine.loadState({ tensors: adapter.tensors.flatMap((t) => [t, zeros(t, '.exp_avg'), zeros(t, '.exp_avg_sq')]), step: 0 });
    await engine.backward(request());
    const got = await engine.readGrads();
    // 2 DeltaNet layers × (5 + 3) linears + 1 attention layer × 7, A and B each.
    expect(got.length).toBe(46);
    const want = await tensorsOf(DIR, 'lora-grads.safetensors');
    const worst = worstErrors(got, (n) => want.get(peftTensorName(n, cfg)));
    console.log(`qwen3_5 LoRA grads: worst relative error ${worst[0]!.rel.toExponential(2)} (${worst[0]!.name})`);
    expect(worst[0]!.rel, JSON.stringify(worst.slice(0, 3))).toBeLessThan(1e-3);

    // The exported adapter is PEFT's, and reads back into the same factors.
    const exported = await engine.exportAdapter('tiny-qwen3_5');
    const back = await readPeftAdapter(peftAdapterFiles(exported), cfg);
    expect(back.settings.targetModules).toEqual([...QWEN3_5_LINEARS]);
    const byName = new Map(adapter.tensors.map((t) => [t.name, t.data]));
    expect(back.tensors.map((t) => t.name).sort()).toEqual([...byName.keys()].sort());
    for (const t of back.tensors) expect(maxAbsDiff(t.data, byName.get(t.name)!), t.name).toBe(0);
    const seq = { ids: e.ids, scoreFrom: e.score_from };
    const before = await engine.score({ sequences: [seq], temperature: 1 });

    // Sanity: one AdamW step on L = −Σ logp raises the mean log-prob.
    engine.zeroGrad();
    await engine.backward({ sequences: [seq], temperature: 1, dLdLogp: [new Float32Array(seq.ids.length - seq.scoreFrom).fill(-1 / seq.ids.length)] });
    await engine.step({ learningRate: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 });
    const after = await engine.score({ sequences: [seq], temperature: 1 });
    const mean = (a: ArrayLike<number>) => Array.from(a).reduce((s, x) => s + x, 0) / a.length;
    console.log(`qwen3_5 LoRA step: mean logp ${mean(before.logprobs[0]!).toFixed(4)} → ${mean(after.logprobs[0]!).toFixed(4)}`);
    expect(mean(after.logprobs[0]!)).toBeGreaterThan(mean(before.logprobs[0]!) + 1e-3);
    // The trained adapter, for tests/fixtures/transformers-qwen3_5-f32/check_peft_adapter.py (PEFT loads it by hand).
    const out = process.env.WEBGRPO_PEFT_CHECK_DIR;
    if (out) {
      mkdirSync(out, { recursive: true });
      for (const [name, bytes] of peftAdapterFiles(await engine.exportAdapter('tiny-qwen3_5'))) writeFileSync(join(out, name), bytes);
      writeFileSync(join(out, 'engine-logprobs.json'), JSON.stringify({ ids: seq.ids, score_from: seq.scoreFrom, logprobs: Array.from(after.logprobs[0]!) }));
    }
    engine.destroy();
  });

  it('LoRA over f16-stored base matrices (the default where shader-f16 exists): every A and B within 1e-3 of float64 on the same f16 weights', async () => {
    const ckpt = await openCheckpoint(DIR);
    const cfg = ckpt.config;
    // Native `array<f16>` loads where the adapter has shader-f16 (lavapipe), u32 unpacking elsewhere.
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f16', halfLoads: gpu.f16 ? 'native' : 'u32' });
    const adapter = await readPeftAdapter(`${DIR}adapter`, cfg);
    engine.setTrainable({ kind: 'lora', lora: { r: 2, alpha: 4, targetModules: [...QWEN3_5_LINEARS], seed: 1 } });
    const zeros = (t: NamedTensor, suffix: string) => ({ name: t.name + suffix, shape: t.shape, data: new Float32Array(t.data.length) });
    await engine.loadState({ tensors: adapter.tensors.flatMap((t) => [t, zeros(t, '.exp_avg'), zeros(t, '.exp_avg_sq')]), step: 0 });
    await engine.backward(request());
    const got = await engine.readGrads();
    // The reference on exactly the weights the engine holds: its f16 matrices rounded to half.
    const w = await refWeightsFromCheckpoint(ckpt);
    const halves = [...engine.internals.params.values()].filter((p) => p.dtype === 'f16').map((p) => p.name);
    expect(halves).toContain('model.layers.0.linear_attn.in_proj_qkv.weight');
    for (const name of halves) w.set(name, w.get(name)!.map((x) => halfToFloat(floatToHalf(x))));
    const lora = refLoraFromTensors(cfg, { r: 2, alpha: 4, targets: [...QWEN3_5_LINEARS] }, adapter.tensors);
    const { loraGrads } = refBackward(cfg, w, { ids: e.ids, scoreFrom: e.score_from }, e.temperature, e.loss_weights, lora, { baseGrads: false });
    const want = new Map<string, Float32Array>();
    for (const [name, g] of loraGrads!.A) want.set(loraTensorName(name, 'A'), Float32Array.from(g));
    for (const [name, g] of loraGrads!.B) want.set(loraTensorName(name, 'B'), Float32Array.from(g));
    const worst = worstErrors(got, (n) => want.get(n));
    console.log(`qwen3_5 LoRA grads, f16 weights (${engine.internals.kernelVariants.halfLoads} loads): worst relative error ${worst[0]!.rel.toExponential(2)} (${worst[0]!.name})`);
    expect(worst[0]!.rel, JSON.stringify(worst.slice(0, 3))).toBeLessThan(1e-3);
    engine.destroy();
  });
});
