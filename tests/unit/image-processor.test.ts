// The image processor (src/vision) against transformers' Qwen2VLImageProcessor (PIL backend) on the
// fixture's image.png: decoded pixels, smart_resize, and pixel_values (two resize targets).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodePng } from '../../src/vision/png.ts';
import { preprocessImage, readImageProcessorConfig, smartResize } from '../../src/vision/processor.ts';

const DIR = new URL('../fixtures/transformers-qwen3_5-vl/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as {
  image: { width: number; height: number; rgb_base64: string };
  image_grid_thw: number[][]; small_image_grid_thw: number[][];
  smart_resize: { height: number; width: number; min_pixels: number; max_pixels: number; factor: number; resized?: [number, number]; error?: string }[];
};

function pixelValues(name: string): Float32Array {
  const bytes = readFileSync(`${DIR}pixel_values.safetensors`);
  const n = Number(bytes.readBigUInt64LE(0));
  const [a, b] = (JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, { data_offsets: [number, number] }>)[name]!.data_offsets;
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset + 8 + n + a, bytes.byteOffset + 8 + n + b));
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe('image processor vs transformers', () => {
  const img = decodePng(readFileSync(`${DIR}image.png`), 'image.png');
  const config = readImageProcessorConfig(readFileSync(`${DIR}processor_config.json`, 'utf8'), 'processor_config.json');

  it('decodes image.png to PIL\'s RGB bytes', () => {
    expect([img.width, img.height]).toEqual([expected.image.width, expected.image.height]);
    expect(Buffer.from(img.rgb).equals(Buffer.from(expected.image.rgb_base64, 'base64'))).toBe(true);
  });

  it('smart_resize agrees on every size of the fixture\'s table', () => {
    for (const c of expected.smart_resize) {
      const run = () => smartResize(c.height, c.width, c.factor, c.min_pixels, c.max_pixels);
      if (c.error) expect(run, JSON.stringify(c)).toThrow(/aspect ratio/);
      else expect(run(), JSON.stringify(c)).toEqual(c.resized);
    }
  });

  it('pixel_values (bit for bit) and grids equal the processor\'s (a 70→64 / 90→96 resize, and a 32×32 downscale)', () => {
    const main = preprocessImage(img, config);
    expect([main.grid]).toEqual(expected.image_grid_thw);
    expect(maxAbsDiff(main.pixelValues, pixelValues('main'))).toBe(0);
    const small = preprocessImage(img, { ...config, minPixels: 256, maxPixels: 2048 });
    expect([small.grid]).toEqual(expected.small_image_grid_thw);
    expect(maxAbsDiff(small.pixelValues, pixelValues('small'))).toBe(0);
  });

  it('refuses what it does not decode, naming the problem', () => {
    expect(() => decodePng(new Uint8Array([1, 2, 3]), 'x.jpg')).toThrow(/x.jpg: not a PNG file/);
    // A 16-bit greyscale IHDR.
    const png = readFileSync(`${DIR}image.png`);
    const sixteen = new Uint8Array(png);
    sixteen[24] = 16;
    expect(() => decodePng(sixteen, 'deep.png')).toThrow(/bit depth 16 is not supported/);
  });
});
