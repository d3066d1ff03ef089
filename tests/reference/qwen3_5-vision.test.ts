// The float64 vision-tower reference against transformers' float64 answer on the tiny Qwen3.5 VL
// fixture (tests/fixtures/transformers-qwen3_5-vl/make.py): the last block's output and the merged
// embeddings, from the processor's own pixel_values.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { openCheckpoint, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { erf, refVisionForward } from '../../src/engine/reference/qwen3_5_vision.ts';
import { parseImageProcessorConfig, processImage } from '../../src/vision/image-processor.ts';

const DIR = 'tests/fixtures/transformers-qwen3_5-vl';
const expected = JSON.parse(await readFile(`${DIR}/expected.json`, 'utf8'));

function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe('Qwen3.5 vision reference (float64) vs transformers', () => {
  it('erf is exact to within 2 ulp', () => {
    // Python's math.erf (libm) at these points.
    for (const [x, y] of [[0.5, 0.5204998778130465], [-1.7, -0.9837904585907745], [3.5, 0.9999992569016276], [0.01, 0.011283415555849616]]) {
      expect(Math.abs(erf(x!) - y!)).toBeLessThanOrEqual(4.5e-16);
    }
  });

  it('tower output and merged embeddings equal transformers\' to 1e-10', async () => {
    const ckpt = await openCheckpoint(DIR, { vision: true });
    const vision = ckpt.config.vision!;
    const weights = new Map<string, Float64Array>();
    for (const name of ckpt.tensors.keys()) if (name.startsWith('model.visual.')) weights.set(name, Float64Array.from(await readTensorFloat32(ckpt, name)));
    const cfg = parseImageProcessorConfig(JSON.parse(await readFile(`${DIR}/processor_config.json`, 'utf8')));
    const rgb = new Uint8Array(Buffer.from(expected.image.rgb_base64, 'base64'));
    const img = processImage(rgb, expected.image.width, expected.image.height, cfg);
    const out = refVisionForward(vision, weights, img.pixelValues, img.gridThw);
    const scale = Math.max(...expected.vision.merged.map(Math.abs));
    expect(maxAbs(out.hidden, expected.vision.hidden)).toBeLessThan(1e-10);
    expect(maxAbs(out.merged, expected.vision.merged)).toBeLessThan(1e-10 * Math.max(1, scale));
    expect(out.merged.length).toBe(expected.vision.merged_shape[0] * expected.vision.merged_shape[1]);
  });
});
