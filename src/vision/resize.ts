// PIL's Image.resize(BICUBIC) on 8-bit images, as Pillow's Resample.c computes it (the processor's
// resize; transformers' PIL backend calls exactly that): separable, horizontal pass first, each output
// sample a normalised window of the bicubic kernel (a = −0.5) widened by the downscale factor
// (antialiasing), weights in fixed point with 22 fractional bits, each pass rounded and clamped to 0…255.

import type { RgbImage } from './png.ts';

const PRECISION_BITS = 32 - 8 - 2;
const SUPPORT = 2;

function bicubic(x: number): number {
  const a = -0.5;
  x = Math.abs(x);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

interface Coeffs { ksize: number; bounds: Int32Array; kk: Int32Array }

/** Per output sample: first input sample, count, and fixed-point weights. */
function coefficients(inSize: number, outSize: number): Coeffs {
  const scale = inSize / outSize;
  const filterscale = Math.max(scale, 1);
  const support = SUPPORT * filterscale;
  const ksize = Math.ceil(support) * 2 + 1;
  const bounds = new Int32Array(outSize * 2);
  const kk = new Int32Array(outSize * ksize);
  const k = new Float64Array(ksize);
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    const ss = 1 / filterscale;
    const xmin = Math.max(Math.trunc(center - support + 0.5), 0);
    const xmax = Math.min(Math.trunc(center + support + 0.5), inSize) - xmin;
    let ww = 0;
    for (let x = 0; x < xmax; x++) {
      k[x] = bicubic((x + xmin - center + 0.5) * ss);
      ww += k[x]!;
    }
    for (let x = 0; x < xmax; x++) {
      const w = ww !== 0 ? k[x]! / ww : k[x]!;
      kk[xx * ksize + x] = Math.trunc(w < 0 ? -0.5 + w * (1 << PRECISION_BITS) : 0.5 + w * (1 << PRECISION_BITS));
    }
    bounds[xx * 2] = xmin;
    bounds[xx * 2 + 1] = xmax;
  }
  return { ksize, bounds, kk };
}

function clip8(ss: number): number {
  const v = Math.floor(ss / (1 << PRECISION_BITS));
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

export function resizeBicubic(img: RgbImage, width: number, height: number): RgbImage {
  const horiz = coefficients(img.width, width);
  const vert = coefficients(img.height, height);
  let cur = img;
  if (width !== img.width) {
    // Only the input rows the vertical pass reads.
    const first = height !== img.height ? vert.bounds[0]! : 0;
    const last = height !== img.height ? vert.bounds[height * 2 - 2]! + vert.bounds[height * 2 - 1]! : img.height;
    const out = new Uint8Array((last - first) * width * 3);
    for (let y = 0; y < last - first; y++) {
      for (let xx = 0; xx < width; xx++) {
        const [xmin, xmax] = [horiz.bounds[xx * 2]!, horiz.bounds[xx * 2 + 1]!];
        for (let c = 0; c < 3; c++) {
          let ss = 1 << (PRECISION_BITS - 1);
          for (let x = 0; x < xmax; x++) ss += cur.rgb[((y + first) * cur.width + x + xmin) * 3 + c]! * horiz.kk[xx * horiz.ksize + x]!;
          out[(y * width + xx) * 3 + c] = clip8(ss);
        }
      }
    }
    if (height !== img.height) for (let i = 0; i < height; i++) vert.bounds[i * 2] = vert.bounds[i * 2]! - first;
    cur = { width, height: last - first, rgb: out };
  }
  if (height !== img.height) {
    const out = new Uint8Array(height * width * 3);
    for (let yy = 0; yy < height; yy++) {
      const [ymin, ymax] = [vert.bounds[yy * 2]!, vert.bounds[yy * 2 + 1]!];
      for (let xx = 0; xx < width; xx++) {
        for (let c = 0; c < 3; c++) {
          let ss = 1 << (PRECISION_BITS - 1);
          for (let y = 0; y < ymax; y++) ss += cur.rgb[((y + ymin) * width + xx) * 3 + c]! * vert.kk[yy * vert.ksize + y]!;
          out[(yy * width + xx) * 3 + c] = clip8(ss);
        }
      }
    }
    cur = { width, height, rgb: out };
  }
  return cur;
}
