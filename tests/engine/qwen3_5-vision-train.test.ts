// LoRA on Qwen3.5's vision tower (train/vision-backward.ts): the backward from the image tokens
// through the merger and the blocks, against transformers' float64 gradients of the tiny VL fixture
// (tests/fixtures/transformers-qwen3_5-vl, grads.safetensors has dL/dW of every tower linear) and,
// with nonzero B, against central differences on the float64 reference tower.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { QWEN3_5_LINEARS } from '../../src/model/qwen3-tensors.ts';
import { VISION_LORA_TARGETS, visionAdaptedLinears } from '../../src/model/qwen3_5-vision-tensors.ts';
import { createTrainableSet } from '../../src/engine/train/trainable.ts';
import { TrainOps } from '../../src/engine/train/ops.ts';
import { VisionBackward } from '../../src/engine/train/vision-backward.ts';
import { refVisionForward } from '../../src/engine/reference/qwen3_5_vision.ts';
import { peftAdapterFiles, readPeftAdapter } from '../../src/engine/peft-adapter.ts';
import type { VisionTower } from '../../src/engine/vision/tower.ts';
import type { NamedTensor } from '../../src/engine/types.ts';
import { mulberry32 } from '../../src/random.ts';
import { relNormError } from './train-helpers.ts';
import { maxAbsDiff, onAdapter } from './helpers.ts';
import { expectBackwardAsPlanned, VL_DIR, vlExpected, vlPixels, vlRequest, vlTensors } from './vl-fixture.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const R = 2;
const ALPHA = 4;
const SCALE = ALPHA / R;

const byName = (ts: NamedTensor[]) => new Map(ts.map((t) => [t.name, t]));

/** s·G·Aᵀ: dL/dB of a LoRA at B = 0 from the base weight's gradient G (out, in) and A (r, in). */
function loraBGrad(G: Float32Array, A: Float32Array, out: number, inp: number): Float64Array {
  const dB = new Float64Array(out * R);
  for (let o = 0; o < out; o++) for (let j = 0; j < R; j++) {
    let s = 0;
    for (let i = 0; i < inp; i++) s += G[o * inp + i]! * A[j * inp + i]!;
    dB[o * R + j] = SCALE * s;
  }
  return dB;
}

describe(onAdapter('LoRA on the Qwen3.5 vision tower'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  const towerTargets = [...VISION_LORA_TARGETS];
  const setLora = (engine: WebGpuEngine, vision: boolean) => engine.setTrainable({
    kind: 'lora', lora: { r: R, alpha: ALPHA, targetModules: [...QWEN3_5_LINEARS], seed: 5, ...(vision ? { visionTargetModules: towerTargets } : {}) },
  });

  it('at B = 0 every tower adapter\'s dL/dB is s·G·Aᵀ of transformers\' full gradient (within 1e-3 relative) and dL/dA = 0; the text adapters\' gradients are bit-identical to LoRA without the tower', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const full = await vlTensors('grads.safetensors');
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    setLora(engine, true);
    const weights = byName((await engine.saveState()).tensors);
    await engine.backward(vlRequest());
    const grads = byName(await engine.readGrads());
    const vc = ckpt.config.vision!;
    let worst = { name: '', rel: 0 };
    for (const { name, shape: [out, inp] } of visionAdaptedLinears(vc, towerTargets)) {
      const base = name.slice(0, -'.weight'.length);
      const A = weights.get(`${base}.lora_A.weight`)!.data;
      const want = loraBGrad(full.get(name)!, A, out, inp);
      const rel = relNormError(grads.get(`${base}.lora_B.weight`)!.data, want);
      if (rel > worst.rel) worst = { name, rel };
      expect(Math.max(...grads.get(`${base}.lora_A.weight`)!.data.map(Math.abs)), `${base} dA`).toBe(0);
    }
    console.log(`vision tower LoRA dB at B = 0 vs s·G·Aᵀ of transformers: worst relative error ${worst.rel.toExponential(2)} (${worst.name})`);
    expect(worst.rel, worst.name).toBeLessThan(1e-3);

    // The same text adapters (same seed: the tower's are drawn after them) without the tower's.
    const textOnly = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    setLora(textOnly, false);
    await textOnly.backward(vlRequest());
    const textGrads = await textOnly.readGrads();
    expect(textGrads.length).toBe(grads.size - 4 * visionAdaptedLinears(vc, towerTargets).length / 2);
    for (const t of textGrads) expect(maxAbsDiff(t.data, grads.get(t.name)!.data), t.name).toBe(0);
    textOnly.destroy();

    // One optimizer step moves the tower's B off zero (A stays: its gradient is zero, no decay here).
    await engine.step({ learningRate: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 0 });
    const after = byName((await engine.saveState()).tensors);
    for (const { name } of visionAdaptedLinears(vc, towerTargets)) {
      const base = name.slice(0, -'.weight'.length);
      expect(Math.max(...after.get(`${base}.lora_B.weight`)!.data.map(Math.abs)), `${base} B after a step`).toBeGreaterThan(1e-3);
    }
    engine.destroy();
  });

  it('nonzero A and B: the adapted tower\'s output matches the float64 reference, and the tower backward from a given dL/d(merged) matches its central differences', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    const fwd = engine.internals;
    const tower = fwd.vision as VisionTower;
    const vc = ckpt.config.vision!;
    const set = createTrainableSet(fwd, { kind: 'lora', lora: { r: R, alpha: ALPHA, targetModules: ['q_proj'], visionTargetModules: towerTargets, seed: 9 } })!;
    const rand = mulberry32(17);
    const factors = new Map<string, Float64Array>(); // lora tensor name → values (f32-exact)
    for (const [name, p] of set.lora) {
      if (!name.startsWith('model.visual.')) continue;
      const base = name.slice(0, -'.weight'.length);
      for (const [which, t] of [['A', p.a], ['B', p.b]] as const) {
        const data = Float32Array.from({ length: t.chunks[0]!.count }, () => 0.4 * (2 * rand() - 1));
        gpu.device.queue.writeBuffer(t.chunks[0]!.weight, 0, data);
        factors.set(`${base}.lora_${which}.weight`, Float64Array.from(data));
      }
    }
    const weights = new Map<string, Float64Array>();
    for (const [name, w] of await vlTensors('model.safetensors')) if (name.startsWith('model.visual.')) weights.set(name, Float64Array.from(w));
    const adapted = visionAdaptedLinears(vc, towerTargets);
    /** The tower's weights with W' = W + s·B·A. */
    const merged = (f: Map<string, Float64Array>) => {
      const w = new Map(weights);
      for (const { name, shape: [out, inp] } of adapted) {
        const base = name.slice(0, -'.weight'.length);
        const A = f.get(`${base}.lora_A.weight`)!;
        const B = f.get(`${base}.lora_B.weight`)!;
        const W = Float64Array.from(weights.get(name)!);
        for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) {
          let s = 0;
          for (let j = 0; j < R; j++) s += B[o * R + j]! * A[j * inp + i]!;
          W[o * inp + i] += SCALE * s;
        }
        w.set(name, W);
      }
      return w;
    };
    const pixels = vlPixels('main');
    const grid = vlExpected.image_grid_thw[0]!;
    const G = 6;
    const D = vc.outHiddenSize;
    const g = Float32Array.from({ length: G * D }, () => 2 * rand() - 1); // dL/d(merged)
    const loss = (f: Map<string, Float64Array>) => refVisionForward(vc, merged(f), pixels, grid).merged.reduce((s, v, i) => s + v * g[i]!, 0);

    const S = 24;
    const vb = new VisionBackward(fwd, new TrainOps(fwd), tower, new Map([...set.lora].filter(([n]) => n.startsWith('model.visual.'))), null, S, R, (role, bytes) => fwd.createBuffer(role, bytes));
    const rec = fwd.recorder('vision train forward');
    const { embeds, rows } = vb.encode(rec, pixels, vlExpected.image_grid_thw);
    const read = rec.read(embeds, 0, rows * D * 4);
    const got = new Float32Array((await rec.submit())[read]!);
    const want = refVisionForward(vc, merged(factors), pixels, grid).merged;
    const fwdErr = maxAbsDiff(got, want);
    expect(fwdErr).toBeLessThan(1e-4);
    // dL/d(merged) enters as "dL/dx_0" rows 0..G−1.
    const gBuf = fwd.createBuffer('test g', g.byteLength);
    const rowsBuf = fwd.createBuffer('test rows', G * 4);
    gpu.device.queue.writeBuffer(gBuf, 0, g);
    gpu.device.queue.writeBuffer(rowsBuf, 0, Uint32Array.from({ length: G }, (_, i) => i));
    const grec = fwd.recorder('gather');
    vb.gatherEmbedGrads(grec, gBuf, { embeds, rows: rowsBuf, count: G });
    await grec.submit();
    await vb.run();

    // Central differences (float64, h = 1e-5) at a few entries of every factor.
    let worst = { name: '', rel: 0 };
    const h = 1e-5;
    for (const [name, p] of set.lora) {
      if (!name.startsWith('model.visual.')) continue;
      const base = name.slice(0, -'.weight'.length);
      for (const [which, t] of [['A', p.a], ['B', p.b]] as const) {
        const key = `${base}.lora_${which}.weight`;
        const rrec = fwd.recorder('read grad');
        const ri = rrec.read(t.chunks[0]!.grad, 0, t.chunks[0]!.count * 4);
        const engineGrad = new Float32Array((await rrec.submit())[ri]!);
        const idx = Array.from({ length: 4 }, () => Math.floor(rand() * engineGrad.length));
        const fd = idx.map((i) => {
          const v = factors.get(key)!;
          const keep = v[i]!;
          v[i] = keep + h;
          const up = loss(factors);
          v[i] = keep - h;
          const down = loss(factors);
          v[i] = keep;
          return (up - down) / (2 * h);
        });
        const rel = relNormError(idx.map((i) => engineGrad[i]!), fd);
        if (rel > worst.rel) worst = { name: key, rel };
      }
    }
    console.log(`adapted tower: forward max |Δ| ${fwdErr.toExponential(2)} vs float64; LoRA grads vs central differences: worst relative error ${worst.rel.toExponential(2)} (${worst.name})`);
    expect(worst.rel, worst.name).toBeLessThan(1e-3);
    set.destroy();
    engine.destroy();
  });

  it('the memory plan counts the tower\'s LoRA state and its backward\'s buffers exactly as allocated', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const created: { label: string; size: number }[] = [];
    const real = gpu.device.createBuffer.bind(gpu.device);
    gpu.device.createBuffer = (d: GPUBufferDescriptor) => {
      created.push({ label: d.label ?? '', size: d.size });
      return real(d);
    };
    const take = (match: RegExp) => {
      const sum = created.filter((c) => match.test(c.label)).reduce((a, c) => a + c.size, 0);
      return sum;
    };
    try {
      const T = vlExpected.input_ids.length;
      const engine = await loadEngine(ckpt, {
        gpu, weightDtype: 'f32', vision: true,
        plan: { numSequences: 1, maxTokensPerSequence: T, maxImagePatches: 24, mode: { kind: 'lora', r: R, targets: [...QWEN3_5_LINEARS], visionTargets: towerTargets } },
      });
      const item = (name: string) => engine.memoryPlan.items.find((i) => i.name === name)?.bytes ?? 0;
      created.length = 0;
      setLora(engine, true);
      const notTransfer = /^(?!.*(uniform arena| readback$))/;
      expect(take(notTransfer), 'training state').toBe(item('LoRA params + grads') + item('AdamW moments') + item('gradient norm scratch'));
      await expectBackwardAsPlanned(engine, created, /^backward vision |^scratch visual\.(lora\.u|zeroBias)$/, 'LoRA on the tower');
      expect(item('vision tower backward')).toBeGreaterThan(0);
      engine.destroy();
    } finally {
      gpu.device.createBuffer = real;
    }
  });

  it('a saved adapter carries the tower\'s factors under PEFT\'s names and loads back to the same log-probs; scoring runs the tower\'s adapters', async () => {
    const ckpt = await openCheckpoint(VL_DIR);
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    setLora(engine, true);
    await engine.backward(vlRequest());
    await engine.step({ learningRate: 5e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 0 });
    const exported = await engine.exportAdapter('tiny-vl');
    const names = exported.tensors.map((t) => t.name);
    expect(names).toContain('base_model.model.model.visual.blocks.0.attn.qkv.lora_A.weight');
    expect(names).toContain('base_model.model.model.visual.merger.linear_fc2.lora_B.weight');
    expect(exported.adapterConfig.target_modules).toEqual([...QWEN3_5_LINEARS, ...VISION_LORA_TARGETS]);
    const files = peftAdapterFiles(exported);
    const adapter = await readPeftAdapter(files, ckpt.config);
    expect(adapter.settings.visionTargetModules).toEqual([...VISION_LORA_TARGETS]);
    const seq = vlRequest().sequences;
    const before = await engine.score({ sequences: seq, temperature: 1 });
    const policyOnly = await engine.score({ sequences: seq, temperature: 1, adapters: false });
    const fresh = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    await fresh.loadAdapter(files);
    const after = await fresh.score({ sequences: seq, temperature: 1 });
    expect(maxAbsDiff(after.logprobs[0]!, before.logprobs[0]!)).toBeLessThan(1e-6);
    expect(maxAbsDiff(before.logprobs[0]!, policyOnly.logprobs[0]!)).toBeGreaterThan(1e-4);
    // The tower's trained B zeroed: the scores move, so scoring runs the tower's adapters.
    const towerOff = peftAdapterFiles({ ...exported, tensors: exported.tensors.map((t) => (t.name.includes('.visual.') && t.name.endsWith('lora_B.weight') ? { ...t, data: new Float32Array(t.data.length) } : t)) });
    const textOnly = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    await textOnly.loadAdapter(towerOff);
    const textScores = await textOnly.score({ sequences: seq, temperature: 1 });
    expect(maxAbsDiff(textScores.logprobs[0]!, before.logprobs[0]!)).toBeGreaterThan(1e-4);
    textOnly.destroy();
    fresh.destroy();
    engine.destroy();
  });
});
