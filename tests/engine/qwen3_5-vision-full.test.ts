// Full fine-tuning of a Qwen3.5 vision-language model trains the vision tower too, as TRL's full
// fine-tuning of Qwen3_5ForConditionalGeneration does: the gradients of every tensor (the 45 tower
// tensors among them) against transformers' float64 autograd on the tiny VL fixture
// (tests/fixtures/transformers-qwen3_5-vl/make.py: L = Σ_t w_t·logp_t on its image+text prompt), AdamW
// on the tower, its state through saveState/loadState and the full-model export, the memory plan, and
// freezeVisionTower, which keeps the old behaviour (the tower's output a constant).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { decodeToFloat32 } from '../../src/model/safetensors.ts';
import { storedTensorName } from '../../src/model/qwen3-tensors.ts';
import { visionTensorLayout } from '../../src/model/qwen3_5-vision-tensors.ts';
import { fullModelFiles } from '../../src/export/full-model.ts';
import type { VisionTower } from '../../src/engine/vision/tower.ts';
import type { NamedTensor, OptimizerConfig } from '../../src/engine/types.ts';
import { newRefAdamWState, refOptimizerStep, transformersDecays } from '../../src/engine/reference/adamw.ts';
import { relNormError } from './train-helpers.ts';
import { maxAbsDiff, onAdapter } from './helpers.ts';
import { expectBackwardAsPlanned, VL_DIR, vlExpected, vlRequest, vlSequences, vlTensors } from './vl-fixture.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const byName = (ts: NamedTensor[]) => new Map(ts.map((t) => [t.name, t]));
const VISUAL = 'model.visual.';

/** A tensor's family for the report: the tower's by module kind, the language model's as one. */
function family(name: string): string {
  if (!name.startsWith(VISUAL)) return 'language model';
  const rest = name.slice(VISUAL.length).replace(/^blocks\.\d+\./, 'blocks.N.');
  return rest;
}

const OPT: OptimizerConfig = { learningRate: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01, maxGradNorm: 1 };

async function towerWeights(engine: WebGpuEngine): Promise<Map<string, Float32Array>> {
  const tower = engine.internals.vision as VisionTower;
  const rec = engine.internals.recorder('read tower');
  const reads = [...tower.params.values()].map((p) => ({ name: p.name, ids: p.chunks.map((c) => rec.read(c.buffer, 0, c.buffer.size)) }));
  const bufs = await rec.submit();
  return new Map(reads.map(({ name, ids }) => {
    const parts = ids.map((i) => new Float32Array(bufs[i]!));
    const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
    let at = 0;
    for (const p of parts) { out.set(p, at); at += p.length; }
    return [name, out];
  }));
}

const loss = async (engine: WebGpuEngine) => {
  const lp = (await engine.score({ sequences: vlSequences(), temperature: 1 })).logprobs[0]!;
  return -lp.reduce((a, v) => a + v, 0) / lp.length;
};

describe(onAdapter('full fine-tuning of Qwen3.5 VL trains the vision tower'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  it('the gradient of every tensor, the tower\'s 45 among them, within 1e-3 relative of transformers\' float64 autograd', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const want = await vlTensors('grads.safetensors');
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    engine.setTrainable({ kind: 'full' });
    await engine.backward(vlRequest());
    const grads = await engine.readGrads();
    engine.destroy();
    const tower = visionTensorLayout(ckpt.config.vision!);
    // Every tower tensor, under its checkpoint name and shape; every stored gradient has its counterpart.
    const sorted = (xs: { name: string; shape: number[] }[]) => xs.map((t) => `${t.name} [${t.shape.join(', ')}]`).sort();
    expect(sorted(grads.filter((g) => g.name.startsWith(VISUAL)))).toEqual(sorted(tower));
    expect(grads.length).toBe(want.size);
    const worst = new Map<string, { name: string; rel: number }>();
    for (const g of grads) {
      const w = want.get(storedTensorName(ckpt.config, g.name));
      if (!w) throw new Error(`no reference gradient for ${g.name}`);
      const rel = relNormError(g.data, w);
      const f = family(g.name);
      if (rel >= (worst.get(f)?.rel ?? -1)) worst.set(f, { name: g.name, rel });
    }
    console.log(`full FT grads vs transformers float64, worst relative error per family:\n${[...worst].map(([f, w]) => `  ${f}: ${w.rel.toExponential(2)} (${w.name})`).join('\n')}`);
    for (const w of worst.values()) expect(w.rel, w.name).toBeLessThan(1e-3);
  });

  it('f16 weights: full mode promotes the tower\'s half matrices to f32 master weights, whose gradients stay near torch\'s (the halves\' rounding only)', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const want = await vlTensors('grads.safetensors');
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f16', vision: true });
    const params = (engine.internals.vision as VisionTower).params;
    expect(params.get('model.visual.blocks.0.attn.qkv.weight')!.dtype).toBe('f16');
    engine.setTrainable({ kind: 'full' });
    for (const p of params.values()) expect(p.dtype, p.name).toBe('f32');
    await engine.backward(vlRequest());
    const grads = (await engine.readGrads()).filter((g) => g.name.startsWith(VISUAL));
    engine.destroy();
    const worst = grads.map((g) => ({ name: g.name, rel: relNormError(g.data, want.get(g.name)!) })).sort((a, b) => b.rel - a.rel)[0]!;
    console.log(`f16-loaded, promoted tower: worst tower gradient relative error ${worst.rel.toExponential(2)} (${worst.name})`);
    expect(worst.rel, worst.name).toBeLessThan(2e-2);
  });

  it('AdamW moves every tower tensor as the reference optimizer does, clip_grad_norm_ counts the tower\'s gradients, and the image prompt\'s loss goes down over a few steps', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    engine.setTrainable({ kind: 'full' });
    const before = await towerWeights(engine);
    // SFT on the prompt's own tokens: L = −mean logp.
    const n = vlExpected.input_ids.length - vlExpected.score_from;
    const sft = () => ({ ...vlRequest(), dLdLogp: [new Float32Array(n).fill(-1 / n)] });
    const losses = [await loss(engine)];
    await engine.backward(sft());
    const grads = await engine.readGrads();
    const sumSq = (ts: NamedTensor[]) => ts.reduce((a, t) => a + t.data.reduce((b, v) => b + v * v, 0), 0);
    const towerSq = sumSq(grads.filter((g) => g.name.startsWith(VISUAL)));
    expect(towerSq).toBeGreaterThan(0);
    // The reference optimizer over every tensor: clip_grad_norm_ over the global norm, AdamW with transformers' decay groups.
    const params = new Map((await engine.saveState()).tensors.filter((t) => !/\.exp_avg(_sq)?$/.test(t.name)).map((t) => [t.name, Float64Array.from(t.data)]));
    const refState = newRefAdamWState();
    const clipped = { ...OPT, maxGradNorm: 1e-3 }; // clipped hard: the norm is the global one
    const ref = refOptimizerStep(params, new Map(grads.map((g) => [g.name, Float64Array.from(g.data)])), refState, clipped, transformersDecays);
    const { gradNorm } = await engine.step(clipped);
    expect(gradNorm / Math.sqrt(sumSq(grads))).toBeCloseTo(1, 5);
    expect(Math.abs(gradNorm - ref.gradNorm) / ref.gradNorm).toBeLessThan(1e-4);
    const state = byName((await engine.saveState()).tensors);
    for (const [name, p] of params) {
      if (!name.startsWith(VISUAL)) continue;
      expect(relNormError(state.get(name)!.data, p), name).toBeLessThan(1e-4);
      expect(relNormError(state.get(`${name}.exp_avg`)!.data, refState.m.get(name)!), `${name} m`).toBeLessThan(1e-4);
      expect(relNormError(state.get(`${name}.exp_avg_sq`)!.data, refState.v.get(name)!), `${name} v`).toBeLessThan(1e-4);
    }
    const after = await towerWeights(engine);
    for (const [name, w] of before) expect(maxAbsDiff(after.get(name)!, w), `${name} moved`).toBeGreaterThan(0);
    losses.push(await loss(engine));
    for (let i = 0; i < 4; i++) {
      await engine.backward(sft());
      await engine.step(OPT);
      losses.push(await loss(engine));
    }
    console.log(`image prompt loss (−mean logp) over full-FT steps: ${losses.map((l) => l.toFixed(4)).join(' → ')}; tower share of ‖g‖² at step 1: ${(towerSq / sumSq(grads)).toExponential(2)}`);
    for (let i = 2; i < losses.length; i++) expect(losses[i]!, `step ${i - 1}`).toBeLessThan(losses[i - 1]!);
    engine.destroy();
  });

  it('saveState → loadState keeps the tower\'s weights and moments; the full-model export writes the trained model.visual.* tensors, which load back and score the same', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    engine.setTrainable({ kind: 'full' });
    await engine.backward(vlRequest());
    await engine.step(OPT);
    await engine.backward(vlRequest());
    await engine.step(OPT);
    const state = await engine.saveState();
    const names = state.tensors.map((t) => t.name);
    for (const suffix of ['', '.exp_avg', '.exp_avg_sq']) expect(names).toContain(`model.visual.patch_embed.proj.weight${suffix}`);
    expect(state.tensors.find((t) => t.name === 'model.visual.patch_embed.proj.weight')!.shape).toEqual([32, 3, 2, 16, 16]);
    const trainedScores = await engine.score({ sequences: vlSequences(), temperature: 1 });

    const fresh = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    fresh.setTrainable({ kind: 'full' });
    await fresh.loadState(state);
    const again = byName((await fresh.saveState()).tensors);
    for (const t of state.tensors) expect(maxAbsDiff(again.get(t.name)!.data, t.data), t.name).toBe(0);
    expect(maxAbsDiff((await fresh.score({ sequences: vlSequences(), temperature: 1 })).logprobs[0]!, trainedScores.logprobs[0]!)).toBe(0);
    // A state without the tower (saved with it frozen) is refused by name.
    await expect(fresh.loadState({ tensors: state.tensors.filter((t) => !t.name.startsWith(VISUAL)), step: 2 })).rejects.toThrow(/missing tensor model\.visual\..*loads with it frozen \(freezeVisionTower, freeze_vision_tower: true\)/);
    fresh.destroy();

    const files = new Map((await fullModelFiles(engine, ckpt)).map((f) => [f.name, f.bytes]));
    // Every tensor of the base under its stored name (model.language_model.* for this composite checkpoint), nothing else.
    const storedNames = async (read: (f: string, a: number, b: number) => Promise<Uint8Array>) => {
      const header = await read('model.safetensors', 0, 8);
      const n = Number(new DataView(header.buffer, header.byteOffset, 8).getBigUint64(0, true));
      return Object.keys(JSON.parse(new TextDecoder().decode(await read('model.safetensors', 8, 8 + n)))).filter((k) => k !== '__metadata__').sort();
    };
    expect(await storedNames(async (_f, a, b) => files.get('model.safetensors')!.subarray(a, b))).toEqual(await storedNames((f, a, b) => nodeFolderFiles(VL_DIR).read(f, a, b)));
    const exported = await openCheckpoint(files, { vision: true });
    const weights = byName(state.tensors);
    const tower = visionTensorLayout(ckpt.config.vision!);
    for (const { name, shape } of tower) {
      expect(exported.tensors.get(name)?.shape, name).toEqual(shape);
      const stored = decodeToFloat32({ name, dtype: exported.tensors.get(name)!.dtype }, await exported.readTensor(name));
      expect(maxAbsDiff(stored, weights.get(name)!.data), name).toBe(0); // f32 checkpoint: stored exactly
    }
    const base = await vlTensors('model.safetensors');
    expect(maxAbsDiff(weights.get('model.visual.merger.linear_fc2.weight')!.data, base.get('model.visual.merger.linear_fc2.weight')!)).toBeGreaterThan(0);
    const reloaded = await loadEngine(await openCheckpoint(files), { gpu, weightDtype: 'f32', vision: true });
    const reScores = await reloaded.score({ sequences: vlSequences(), temperature: 1 });
    console.log(`exported full model reloaded: log-probs max |Δ| ${maxAbsDiff(reScores.logprobs[0]!, trainedScores.logprobs[0]!).toExponential(2)} vs the trained engine`);
    expect(maxAbsDiff(reScores.logprobs[0]!, trainedScores.logprobs[0]!)).toBeLessThan(1e-6);
    reloaded.destroy();
    engine.destroy();
  });

  it('freezeVisionTower keeps the tower bit-identical and the language model\'s gradients exactly those of the trained-tower run (the old behaviour: the tower\'s output a constant)', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const frozen = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    frozen.setTrainable({ kind: 'full', freezeVisionTower: true });
    const before = await towerWeights(frozen);
    await frozen.backward(vlRequest());
    const frozenGrads = await frozen.readGrads();
    expect(frozenGrads.some((g) => g.name.startsWith(VISUAL))).toBe(false);
    await frozen.step(OPT);
    const after = await towerWeights(frozen);
    for (const [name, w] of before) expect(maxAbsDiff(after.get(name)!, w), name).toBe(0);
    expect((await frozen.saveState()).tensors.some((t) => t.name.startsWith(VISUAL))).toBe(false);
    frozen.destroy();

    const trained = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    trained.setTrainable({ kind: 'full' });
    await trained.backward(vlRequest());
    const all = byName(await trained.readGrads());
    trained.destroy();
    expect(all.size).toBe(frozenGrads.length + visionTensorLayout(ckpt.config.vision!).length);
    for (const g of frozenGrads) expect(maxAbsDiff(g.data, all.get(g.name)!.data), g.name).toBe(0);
  });

  it('the memory plan counts the tower\'s gradients, moments and backward buffers exactly as allocated (and none of them when frozen)', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const created: { label: string; size: number }[] = [];
    const real = gpu.device.createBuffer.bind(gpu.device);
    gpu.device.createBuffer = (d: GPUBufferDescriptor) => {
      created.push({ label: d.label ?? '', size: d.size });
      return real(d);
    };
    const take = (match: RegExp) => created.filter((c) => match.test(c.label)).reduce((a, c) => a + c.size, 0);
    const notTransfer = /^(?!.*(uniform arena| readback$))/;
    const tower = /^backward vision |^scratch visual\.zeroBias$/;
    try {
      const T = vlExpected.input_ids.length;
      for (const freezeVisionTower of [false, true]) {
        const engine = await loadEngine(ckpt, {
          gpu, weightDtype: 'f32', vision: true,
          plan: { numSequences: 1, maxTokensPerSequence: T, maxImagePatches: 24, mode: { kind: 'full', freezeVisionTower } },
        });
        const item = (name: string) => engine.memoryPlan.items.find((i) => i.name === name)?.bytes ?? 0;
        created.length = 0;
        engine.setTrainable({ kind: 'full', freezeVisionTower });
        expect(take(notTransfer), `training state (frozen ${freezeVisionTower})`).toBe(item('gradients') + item('AdamW moments') + item('gradient norm scratch'));
        await expectBackwardAsPlanned(engine, created, tower, `frozen ${freezeVisionTower}`);
        expect(item('vision tower backward') > 0).toBe(!freezeVisionTower);
        engine.destroy();
      }
    } finally {
      gpu.device.createBuffer = real;
    }
  });
});
