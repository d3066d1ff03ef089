// The TypeScript image processor and prompt positions against transformers' own output for the
// tiny Qwen3.5 VL fixture (tests/fixtures/transformers-qwen3_5-vl/make.py): pixel_values, grids,
// smart_resize, the expanded image tokens and get_rope_index's M-RoPE positions.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { resizeBicubicRgb } from '../../src/vision/bicubic.ts';
import { parseImageProcessorConfig, processImage } from '../../src/vision/image-processor.ts';
import { expandImageTokens, mropePositionIds } from '../../src/vision/image-prompt.ts';
import { smartResize } from '../../src/vision/smart-resize.ts';

const DIR = 'tests/fixtures/transformers-qwen3_5-vl';
const expected = JSON.parse(await readFile(`${DIR}/expected.json`, 'utf8'));
const cfg = parseImageProcessorConfig(JSON.parse(await readFile(`${DIR}/processor_config.json`, 'utf8')));
const rgb = new Uint8Array(Buffer.from(expected.image.rgb_base64, 'base64'));
const { width: W, height: H } = expected.image;

async function fixturePixels(): Promise<Map<string, { shape: number[]; data: Float32Array }>> {
  const buf = await readFile(`${DIR}/pixel_values.safetensors`);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const [name, t] of Object.entries(header) as [string, { shape: number[]; data_offsets: [number, number] }][]) {
    if (name === '__metadata__') continue;
    const bytes = buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]);
    out.set(name, { shape: t.shape, data: new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) });
  }
  return out;
}

function maxAbs(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe('image processor vs transformers', () => {
  it('reads the processor config transformers saved', () => {
    expect(cfg).toMatchObject({ patchSize: 16, temporalPatchSize: 2, mergeSize: 2, minPixels: 1024, maxPixels: 16384, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] });
    expect(() => parseImageProcessorConfig({ image_processor: { resample: 2 } })).toThrow(/resample 2 is not supported/);
  });

  it('smart_resize gives transformers\' sizes (and errors) on a table of sizes and bounds', () => {
    for (const row of expected.smart_resize) {
      const call = () => smartResize(row.height, row.width, row.factor, row.min_pixels, row.max_pixels);
      if (row.error) expect(call).toThrow(/aspect ratio must be smaller than 200/);
      else expect(call()).toEqual(row.resized);
    }
  });

  it('pixel_values and image_grid_thw equal the processor\'s (bicubic up and down, normalised)', async () => {
    const px = await fixturePixels();
    const main = processImage(rgb, W, H, cfg);
    expect(main.gridThw).toEqual(expected.image_grid_thw[0]);
    expect([main.gridThw[0] * main.gridThw[1] * main.gridThw[2], main.patchDim]).toEqual(expected.pixel_values_shape);
    expect(maxAbs(main.pixelValues, px.get('main')!.data)).toBeLessThanOrEqual(1e-6);

    const small = processImage(rgb, W, H, { ...cfg, minPixels: 256, maxPixels: 2048 });
    expect(small.gridThw).toEqual(expected.small_image_grid_thw[0]);
    expect(maxAbs(small.pixelValues, px.get('small')!.data)).toBeLessThanOrEqual(1e-6);
  });

  it('resizing to the same size is the identity', () => {
    expect(resizeBicubicRgb(rgb, W, H, W, H)).toEqual(rgb);
  });
});

describe('image tokens and M-RoPE positions vs transformers', () => {
  const imageId = 484;
  const grid = expected.image_grid_thw[0] as [number, number, number];
  // The chat template's text holds one <|image_pad|>; the processor expands it.
  const collapsed = (expected.input_ids as number[]).filter((id, i, a) => id !== imageId || a[i - 1] !== imageId);

  it('expands the placeholder to t·h·w/merge² tokens with mm_token_type_ids and the image\'s offset', () => {
    const { ids, mmTokenTypeIds, offsets } = expandImageTokens(collapsed, [{ gridThw: grid }], imageId, 2);
    expect(ids).toEqual(expected.input_ids);
    expect(mmTokenTypeIds).toEqual(expected.mm_token_type_ids);
    expect(offsets).toEqual([(expected.mm_token_type_ids as number[]).indexOf(1)]);
    expect(() => expandImageTokens(collapsed, [], imageId, 2)).toThrow(/more image placeholders than the 0 image/);
    expect(() => expandImageTokens(collapsed, [{ gridThw: grid }, { gridThw: grid }], imageId, 2)).toThrow(/1 image placeholder\(s\) but 2 image/);
  });

  it('positions equal get_rope_index', () => {
    const { positions, ropeDelta } = mropePositionIds(expected.mm_token_type_ids, [{ gridThw: grid }], 2);
    expect(positions).toEqual(expected.position_ids);
    expect(ropeDelta).toBe(expected.rope_delta);
  });
});
