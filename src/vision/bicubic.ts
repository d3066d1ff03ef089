// Bicubic resize of 8-bit RGB exactly as Pillow's Image.resize(BICUBIC) computes it (what transformers'
// PIL image-processor backend calls): separable, horizontal pass then vertical, each rounding to 8 bits;
// the kernel (Keys, a = −0.5) widened by the scale when shrinking (antialiasing), its weights normalised
// and turned into 22-bit fixed point, so the uint8 output matches Pillow's bit for bit.

const PRECISION_BITS = 32 - 8 - 2;
const ONE = 2 ** PRECISION_BITS;
const HALF = 2 ** (PRECISION_BITS - 1);
const SUPPORT = 2;

function cubic(x: number): number {
  const a = -0.5;
  x = Math.abs(x);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

interface Taps {
  first: Int32Array; // first input index of each output
  count: Int32Array; // taps used
  ksize: number;
  weights: Int32Array; // fixed-point weights, ksize per output
}

/** Pillow's precompute_coeffs + normalize_coeffs_8bpc for one axis. */
function taps(inSize: number, outSize: number): Taps {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = SUPPORT * filterScale;
  const ksize = Math.ceil(support) * 2 + 1;
  const first = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const weights = new Int32Array(outSize * ksize);
  const k = new Float64Array(ksize);
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    const ss = 1 / filterScale;
    // C casts truncate toward zero.
    const xmin = Math.max(Math.trunc(center - support + 0.5), 0);
    const n = Math.min(Math.trunc(center + support + 0.5), inSize) - xmin;
    let ww = 0;
    k.fill(0);
    for (let x = 0; x < n; x++) {
      const w = cubic((x + xmin - center + 0.5) * ss);
      k[x] = w;
      ww += w;
    }
    for (let x = 0; x < n; x++) {
      const w = ww !== 0 ? k[x]! / ww : k[x]!;
      weights[xx * ksize + x] = w < 0 ? Math.trunc(-0.5 + w * ONE) : Math.trunc(0.5 + w * ONE);
    }
    first[xx] = xmin;
    count[xx] = n;
  }
  return { first, count, ksize, weights };
}

function clip8(ss: number): number {
  const v = Math.floor(ss / ONE); // an arithmetic shift right, for negative sums too
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

/** Resizes interleaved 8-bit RGB (height×width×3) to outHeight×outWidth, as Pillow's BICUBIC does. */
export function resizeBicubicRgb(rgb: Uint8Array, width: number, height: number, outWidth: number, outHeight: number): Uint8Array {
  if (rgb.length !== width * height * 3) throw new Error(`RGB buffer has ${rgb.length} bytes, expected ${width}×${height}×3`);
  if (!(outWidth > 0 && outHeight > 0)) throw new Error(`resize target must be positive, got ${outWidth}×${outHeight}`);
  let src = rgb;
  let rowOffset = 0;
  const vert = outHeight !== height ? taps(height, outHeight) : null;
  if (outWidth !== width) {
    // Pillow runs the horizontal pass only over the rows the vertical pass will read.
    let r0 = 0;
    let r1 = height;
    if (vert) {
      r0 = vert.first[0]!;
      r1 = vert.first[outHeight - 1]! + vert.count[outHeight - 1]!;
    }
    const h = taps(width, outWidth);
    const out = new Uint8Array((r1 - r0) * outWidth * 3);
    for (let y = r0; y < r1; y++) {
      for (let xx = 0; xx < outWidth; xx++) {
        const f = h.first[xx]!;
        const n = h.count[xx]!;
        for (let c = 0; c < 3; c++) {
          let ss = HALF;
          for (let x = 0; x < n; x++) ss += src[(y * width + f + x) * 3 + c]! * h.weights[xx * h.ksize + x]!;
          out[((y - r0) * outWidth + xx) * 3 + c] = clip8(ss);
        }
      }
    }
    src = out;
    rowOffset = r0;
  }
  if (!vert) return src === rgb ? rgb.slice() : src;
  const out = new Uint8Array(outHeight * outWidth * 3);
  for (let yy = 0; yy < outHeight; yy++) {
    const f = vert.first[yy]! - rowOffset;
    const n = vert.count[yy]!;
    for (let x = 0; x < outWidth * 3; x++) {
      let ss = HALF;
      for (let y = 0; y < n; y++) ss += src[(f + y) * outWidth * 3 + x]! * vert.weights[yy * vert.ksize + y]!;
      out[yy * outWidth * 3 + x] = clip8(ss);
    }
  }
  return out;
}
