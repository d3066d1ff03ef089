// Qwen2VLImageProcessor (what Qwen3VLProcessor uses for images), PIL backend, from the checkpoint's
// processor config: smart_resize to a multiple of patch·merge within [min, max] pixels, PIL bicubic
// resize, rescale and normalise in float32 as numpy does, then patches in spatial-merge-block order
// (grid_h/m, grid_w/m, m, m) with each row (C, temporal, P, P), the frame repeated temporal times.

import type { RgbImage } from './png.ts';
import { resizeBicubic } from './resize.ts';

export interface ImageProcessorConfig {
  patchSize: number;
  temporalPatchSize: number;
  mergeSize: number;
  minPixels: number;
  maxPixels: number;
  mean: [number, number, number];
  std: [number, number, number];
  rescaleFactor: number;
  doResize: boolean;
  doRescale: boolean;
  doNormalize: boolean;
}

type Json = Record<string, unknown>;

/** Python's round(): halves to even. */
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** transformers' smart_resize: (height, width) divisible by factor, pixels within [minPixels, maxPixels], aspect kept. */
export function smartResize(height: number, width: number, factor: number, minPixels: number, maxPixels: number): [number, number] {
  if (Math.max(height, width) / Math.min(height, width) > 200) throw new Error(`image: absolute aspect ratio must be smaller than 200, got ${Math.max(height, width) / Math.min(height, width)}`);
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return [h, w];
}

/** From processor_config.json's image_processor (or a flat preprocessor_config.json), transformers' defaults otherwise. */
export function readImageProcessorConfig(text: string, file: string): ImageProcessorConfig {
  const fail = (msg: string): never => { throw new Error(`${file}: ${msg}`); };
  let json: Json;
  try {
    json = JSON.parse(text) as Json;
  } catch (err) {
    return fail(`not valid JSON: ${(err as Error).message}`);
  }
  const p = (json.image_processor ?? json) as Json;
  const int = (key: string, dflt: number): number => {
    const v = p[key] ?? dflt;
    if (!Number.isInteger(v) || (v as number) <= 0) fail(`${key} must be a positive integer, got ${JSON.stringify(v)}`);
    return v as number;
  };
  const size = (p.size ?? {}) as Json;
  const triple = (key: string, dflt: number): [number, number, number] => {
    const v = p[key] ?? dflt;
    const arr = typeof v === 'number' ? [v, v, v] : v;
    if (!Array.isArray(arr) || arr.length !== 3 || !arr.every((x) => typeof x === 'number' && Number.isFinite(x))) fail(`${key} must be a number or three numbers, got ${JSON.stringify(v)}`);
    return arr as [number, number, number];
  };
  if (p.resample !== undefined && p.resample !== 3) fail(`resample ${JSON.stringify(p.resample)} is not supported (only 3, bicubic)`);
  const flag = (key: string) => p[key] !== false;
  return {
    patchSize: int('patch_size', 16),
    temporalPatchSize: int('temporal_patch_size', 2),
    mergeSize: int('merge_size', 2),
    minPixels: Number(size.shortest_edge ?? p.min_pixels ?? 56 * 56),
    maxPixels: Number(size.longest_edge ?? p.max_pixels ?? 28 * 28 * 1280),
    mean: triple('image_mean', 0.5),
    std: triple('image_std', 0.5),
    rescaleFactor: typeof p.rescale_factor === 'number' ? p.rescale_factor : 1 / 255,
    doResize: flag('do_resize'),
    doRescale: flag('do_rescale'),
    doNormalize: flag('do_normalize'),
  };
}

/** pixel_values (grid_h·grid_w, 3·T·P·P) and the (1, grid_h, grid_w) grid of one image. */
export function preprocessImage(img: RgbImage, c: ImageProcessorConfig): { pixelValues: Float32Array; grid: [number, number, number] } {
  const factor = c.patchSize * c.mergeSize;
  const [h, w] = c.doResize ? smartResize(img.height, img.width, factor, c.minPixels, c.maxPixels) : [img.height, img.width];
  if (h % factor !== 0 || w % factor !== 0) throw new Error(`image: ${w}×${h} is not a multiple of patch_size·merge_size = ${factor} (do_resize is off)`);
  const resized = h === img.height && w === img.width ? img : resizeBicubic(img, w, h);
  const f = Math.fround;
  // numpy: x.astype(float64)·scale → float32, then (x − mean) / std in float32.
  const value = (v: number, ch: number): number => {
    let x = c.doRescale ? f(v * c.rescaleFactor) : v;
    if (c.doNormalize) x = f(f(x - f(c.mean[ch]!)) / f(c.std[ch]!));
    return x;
  };
  const [P, T, m] = [c.patchSize, c.temporalPatchSize, c.mergeSize];
  const [gh, gw] = [h / P, w / P];
  const rowLen = 3 * T * P * P;
  const out = new Float32Array(gh * gw * rowLen);
  let row = 0;
  for (let bh = 0; bh < gh / m; bh++) {
    for (let bw = 0; bw < gw / m; bw++) {
      for (let ih = 0; ih < m; ih++) {
        for (let iw = 0; iw < m; iw++, row++) {
          const [y0, x0] = [(bh * m + ih) * P, (bw * m + iw) * P];
          let o = row * rowLen;
          for (let ch = 0; ch < 3; ch++) {
            for (let t = 0; t < T; t++) {
              for (let py = 0; py < P; py++) {
                for (let px = 0; px < P; px++) out[o++] = value(resized.rgb[((y0 + py) * w + x0 + px) * 3 + ch]!, ch);
              }
            }
          }
        }
      }
    }
  }
  return { pixelValues: out, grid: [1, gh, gw] };
}
