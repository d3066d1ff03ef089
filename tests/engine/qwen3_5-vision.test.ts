// Qwen3.5's vision tower and image prompts on WebGPU against transformers itself.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { maxAbsDiff, onAdapter } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const DIR = process.env.VL_DIR ?? '/tmp/h23b-vl/model/';
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as {
  ids: number[]; image_grid_thw: [number, number, number][]; position_ids: [number[], number[], number[]]; merged: number[]; logprobs: number[];
};

function readF32(file: string, name: string): Float32Array {
  const bytes = readFileSync(file);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, { data_offsets: [number, number] }>;
  const [a, b] = header[name]!.data_offsets;
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset + 8 + n + a, bytes.byteOffset + 8 + n + b));
}

describe(onAdapter('Qwen3.5 vision-language scoring vs transformers'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  it('vision tower output and image+text log-probs within 1e-4 of transformers', async () => {
    const ckpt = await openCheckpoint(DIR);
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true });
    const pixelValues = readF32(`${DIR}pixel_values.safetensors`, 'pixel_values');
    const fwd = engine.internals;
    const rec = fwd.recorder('vision test');
    const { embeds, rows } = fwd.vision!.encode(rec, pixelValues, expected.image_grid_thw);
    const read = rec.read(embeds, 0, rows * fwd.config.hiddenSize * 4);
    const merged = new Float32Array((await rec.submit())[read]!);
    const towerErr = maxAbsDiff(merged, expected.merged);
    console.log(`vision tower: max |Δ| vs transformers float64 = ${towerErr.toExponential(2)} (max |x| ${Math.max(...expected.merged.map(Math.abs)).toFixed(2)})`);
    expect(towerErr).toBeLessThan(1e-4);
    const images = { pixelValues, grids: expected.image_grid_thw, positions: expected.position_ids };
    const out = await engine.score({ sequences: [{ ids: expected.ids, scoreFrom: 1, images }], temperature: 1 });
    const err = maxAbsDiff(out.logprobs[0]!, expected.logprobs);
    console.log(`image+text log-probs: max |Δ| vs transformers float64 = ${err.toExponential(2)}`);
    expect(err).toBeLessThan(1e-4);
    engine.destroy();
  });
});
