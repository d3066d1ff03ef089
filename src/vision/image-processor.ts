// The Qwen2-VL/Qwen3.5 image processor (transformers' Qwen2VLImageProcessor, PIL backend) on 8-bit RGB:
// smart_resize to the processor's pixel bounds, Pillow-exact bicubic, rescale and normalise in float32
// as numpy does, then the patches in pixel_values order with image_grid_thw.

import { resizeBicubicRgb } from './bicubic.ts';
import { smartResize } from './smart-resize.ts';

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

/**
 * processor_config.json (transformers 5: `{image_processor: {...}}`) or preprocessor_config.json (the
 * flat older form; min_pixels/max_pixels override size as transformers does).
 */
export function parseImageProcessorConfig(json: unknown, file = 'processor_config.json'): ImageProcessorConfig {
  const fail = (msg: string): never => {
    throw new Error(`${file}: ${msg}`);
  };
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return fail('expected a JSON object');
  const top = json as Json;
  const c = (top.image_processor && typeof top.image_processor === 'object' ? top.image_processor : top) as Json;
  const int = (key: string, dflt: number): number => {
    const v = c[key] ?? dflt;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) return fail(`${key} must be a positive integer, got ${JSON.stringify(v)}`);
    return v;
  };
  const triple = (key: string, dflt: number[]): [number, number, number] => {
    const v = c[key] ?? dflt;
    const arr = typeof v === 'number' ? [v, v, v] : v;
    if (!Array.isArray(arr) || arr.length !== 3 || arr.some((x) => typeof x !== 'number' || !Number.isFinite(x))) return fail(`${key} must be three numbers, got ${JSON.stringify(v)}`);
    return arr as [number, number, number];
  };
  const size = (c.size ?? {}) as Json;
  const minPixels = c.min_pixels ?? size.shortest_edge ?? size.min_pixels ?? 56 * 56;
  const maxPixels = c.max_pixels ?? size.longest_edge ?? size.max_pixels ?? 28 * 28 * 1280;
  if (typeof minPixels !== 'number' || typeof maxPixels !== 'number' || !(minPixels > 0 && maxPixels >= minPixels)) {
    fail(`pixel bounds (size.shortest_edge ${JSON.stringify(minPixels)}, size.longest_edge ${JSON.stringify(maxPixels)}) must be positive with min ≤ max`);
  }
  const resample = c.resample ?? 3;
  if (resample !== 3) fail(`resample ${JSON.stringify(resample)} is not supported (only 3, bicubic)`);
  const type = c.image_processor_type;
  if (type !== undefined && !/^Qwen2VLImageProcessor/.test(String(type))) fail(`image_processor_type ${JSON.stringify(type)} is not supported (Qwen2VLImageProcessor)`);
  const std = triple('image_std', [0.26862954, 0.26130258, 0.27577711]);
  if (std.some((x) => x === 0)) fail('image_std must not contain 0');
  return {
    patchSize: int('patch_size', 14),
    temporalPatchSize: int('temporal_patch_size', 2),
    mergeSize: int('merge_size', 2),
    minPixels: minPixels as number,
    maxPixels: maxPixels as number,
    mean: triple('image_mean', [0.48145466, 0.4578275, 0.40821073]),
    std,
    rescaleFactor: typeof c.rescale_factor === 'number' ? c.rescale_factor : 1 / 255,
    doResize: c.do_resize !== false,
    doRescale: c.do_rescale !== false,
    doNormalize: c.do_normalize !== false,
  };
}

export interface ProcessedImage {
  /** [gridT·gridH·gridW, 3·tp·p·p] row-major, in the processor's (merge-block) patch order. */
  pixelValues: Float32Array;
  patchDim: number;
  /** image_grid_thw: [1, height / p, width / p]. */
  gridThw: [number, number, number];
  resizedHeight: number;
  resizedWidth: number;
}

/** 8-bit RGB (height×width×3, interleaved) → pixel_values and image_grid_thw, as transformers' processor. */
export function processImage(rgb: Uint8Array, width: number, height: number, cfg: ImageProcessorConfig): ProcessedImage {
  const p = cfg.patchSize;
  const m = cfg.mergeSize;
  const factor = p * m;
  const [rh, rw] = cfg.doResize ? smartResize(height, width, factor, cfg.minPixels, cfg.maxPixels) : [height, width];
  if (rh % factor !== 0 || rw % factor !== 0) throw new Error(`image ${width}×${height} is not a multiple of ${factor} and do_resize is false`);
  const img = rh === height && rw === width ? rgb : resizeBicubicRgb(rgb, width, height, rw, rh);
  // numpy: uint8 → float64 · scale → float32, then (x − mean) / std in float32.
  const plane = new Float32Array(3 * rh * rw); // channels first
  const mean = cfg.mean.map(Math.fround);
  const std = cfg.std.map(Math.fround);
  for (let i = 0; i < rh * rw; i++) {
    for (let c = 0; c < 3; c++) {
      let x = cfg.doRescale ? Math.fround(img[i * 3 + c]! * cfg.rescaleFactor) : img[i * 3 + c]!;
      if (cfg.doNormalize) x = Math.fround(Math.fround(x - mean[c]!) / std[c]!);
      plane[c * rh * rw + i] = x;
    }
  }
  const gh = rh / p;
  const gw = rw / p;
  const tp = cfg.temporalPatchSize;
  const patchDim = 3 * tp * p * p;
  const out = new Float32Array(gh * gw * patchDim);
  // Patch order: merge block row, block column, row in block, column in block; inside a patch:
  // channel, frame (the image repeated tp times), pixel row, pixel column.
  let o = 0;
  for (let bh = 0; bh < gh / m; bh++) {
    for (let bw = 0; bw < gw / m; bw++) {
      for (let ih = 0; ih < m; ih++) {
        for (let iw = 0; iw < m; iw++) {
          const py = (bh * m + ih) * p;
          const px = (bw * m + iw) * p;
          for (let c = 0; c < 3; c++) {
            for (let t = 0; t < tp; t++) {
              for (let y = 0; y < p; y++) {
                const row = c * rh * rw + (py + y) * rw + px;
                for (let x = 0; x < p; x++) out[o++] = plane[row + x]!;
              }
            }
          }
        }
      }
    }
  }
  return { pixelValues: out, patchDim, gridThw: [1, gh, gw], resizedHeight: rh, resizedWidth: rw };
}
