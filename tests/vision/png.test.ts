// PNG decoding (src/vision/png.ts) against PIL: the fixture's image.png decodes to the RGB bytes PIL
// gave make.py, and through the processor to transformers' pixel_values exactly.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodePng } from '../../src/vision/png.ts';
import { parseImageProcessorConfig, processImage } from '../../src/vision/image-processor.ts';

const DIR = new URL('../fixtures/transformers-qwen3_5-vl/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as { image: { width: number; height: number; rgb_base64: string } };

function pixelValues(name: string): Float32Array {
  const bytes = readFileSync(`${DIR}pixel_values.safetensors`);
  const n = Number(bytes.readBigUInt64LE(0));
  const [a, b] = (JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, { data_offsets: [number, number] }>)[name]!.data_offsets;
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset + 8 + n + a, bytes.byteOffset + 8 + n + b));
}

describe('decodePng', () => {
  const png = readFileSync(`${DIR}image.png`);

  it('decodes image.png to PIL\'s RGB bytes, and from there to transformers\' pixel_values bit for bit', () => {
    const img = decodePng(png, 'image.png');
    expect([img.width, img.height]).toEqual([expected.image.width, expected.image.height]);
    expect(Buffer.from(img.rgb).equals(Buffer.from(expected.image.rgb_base64, 'base64'))).toBe(true);
    const cfg = parseImageProcessorConfig(JSON.parse(readFileSync(`${DIR}processor_config.json`, 'utf8')));
    expect(processImage(img.rgb, img.width, img.height, cfg).pixelValues).toEqual(pixelValues('main'));
  });

  it('refuses what it does not decode, naming the problem', () => {
    expect(() => decodePng(new Uint8Array([1, 2, 3]), 'x.jpg')).toThrow(/x.jpg: not a PNG file/);
    const sixteen = new Uint8Array(png);
    sixteen[24] = 16; // IHDR bit depth
    expect(() => decodePng(sixteen, 'deep.png')).toThrow(/deep.png: bit depth 16 is not supported/);
    expect(() => decodePng(png.subarray(0, 60), 'cut.png')).toThrow(/cut.png: /);
  });
});
