// PIL's `Image.thumbnail((size, size), Image.LANCZOS)`, which TRL's BrowserGymVLMEnv applies to every
// screenshot (`--image-size`, default 512): the largest size within the box that keeps the aspect
// ratio (never enlarging), then PIL's separable Lanczos-3 resampling with its 8-bit fixed-point
// arithmetic — horizontal pass first, clipped to bytes, then vertical — so the pixels equal Pillow's
// (tests/fixtures/pil-thumbnail). Not reproduced: Pillow's `reducing_gap` pre-reduction, which only
// applies to sources over 2 × 2 = 4 times the box (4096 pixels wide for TRL's 512).

import type { RolloutImage } from './images.ts';

/** Pillow's `PRECISION_BITS` for 8-bit images (32 - 8 - 2). */
const PRECISION_BITS = 22;
const LANCZOS_SUPPORT = 3;

function sinc(x: number): number {
  if (x === 0) return 1;
  const px = x * Math.PI;
  return Math.sin(px) / px;
}

function lanczos(x: number): number {
  return x >= -LANCZOS_SUPPORT && x < LANCZOS_SUPPORT ? sinc(x) * sinc(x / LANCZOS_SUPPORT) : 0;
}

/** PIL's thumbnail size for a `box` × `box` bound, or null when the image already fits. */
export function thumbnailSize(width: number, height: number, box: number): [number, number] | null {
  if (!(Number.isInteger(box) && box > 0)) throw new Error(`thumbnail: the box must be a positive integer, got ${box}`);
  if (box >= width && box >= height) return null;
  const aspect = width / height;
  // round_aspect: floor or ceil, whichever keeps the aspect closer (floor on ties), at least 1.
  const roundAspect = (n: number, error: (v: number) => number): number => {
    const lo = Math.floor(n), hi = Math.ceil(n);
    return Math.max(error(hi) < error(lo) ? hi : lo, 1);
  };
  let x = box, y = box;
  if (x / y >= aspect) x = roundAspect(y * aspect, (v) => Math.abs(aspect - v / y));
  else y = roundAspect(x / aspect, (v) => (v === 0 ? 0 : Math.abs(aspect - x / v)));
  return [x, y];
}

/** Pillow's `precompute_coeffs` + `normalize_coeffs_8bpc`: per output pixel, its first input pixel and integer weights. */
function coefficients(inSize: number, outSize: number): { first: Int32Array; weights: Float64Array[] } {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = LANCZOS_SUPPORT * filterScale;
  const first = new Int32Array(outSize);
  const weights: Float64Array[] = [];
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    // C's (int) cast truncates toward zero; the arguments here are ≥ -support + 0.5.
    const xmin = Math.max(0, Math.trunc(center - support + 0.5));
    const xmax = Math.min(inSize, Math.trunc(center + support + 0.5)) - xmin;
    const w = new Float64Array(Math.max(0, xmax));
    let sum = 0;
    for (let x = 0; x < xmax; x++) sum += (w[x] = lanczos((x + xmin - center + 0.5) / filterScale));
    for (let x = 0; x < xmax; x++) {
      const k = sum !== 0 ? w[x]! / sum : w[x]!;
      w[x] = k < 0 ? Math.trunc(-0.5 + k * (1 << PRECISION_BITS)) : Math.trunc(0.5 + k * (1 << PRECISION_BITS));
    }
    first[xx] = xmin;
    weights.push(w);
  }
  return { first, weights };
}

function clip8(acc: number): number {
  const v = Math.floor(acc / (1 << PRECISION_BITS));
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

/** One resampling pass over RGB(A) rows: `horizontal` resamples along x, otherwise along y. */
function pass(src: RolloutImage, outW: number, outH: number, horizontal: boolean): RolloutImage {
  const { first, weights } = coefficients(horizontal ? src.width : src.height, horizontal ? outW : outH);
  const rgba = new Uint8Array(outW * outH * 4);
  const half = 1 << (PRECISION_BITS - 1);
  for (let y = 0; y < outH; y++) {
    for (let x = 0; x < outW; x++) {
      const i = horizontal ? x : y;
      const w = weights[i]!;
      const start = first[i]!;
      const o = (y * outW + x) * 4;
      for (let c = 0; c < 3; c++) {
        let acc = half;
        for (let k = 0; k < w.length; k++) {
          const s = horizontal ? (y * src.width + start + k) * 4 : ((start + k) * src.width + x) * 4;
          acc += src.rgba[s + c]! * w[k]!;
        }
        rgba[o + c] = clip8(acc);
      }
      rgba[o + 3] = 255;
    }
  }
  return { width: outW, height: outH, rgba };
}

/** The image scaled down to fit `box` × `box` as TRL's `screenshot_image.thumbnail((box, box), Image.LANCZOS)`; the same object when it already fits. */
export function thumbnail(image: RolloutImage, box: number): RolloutImage {
  const size = thumbnailSize(image.width, image.height, box);
  if (size === null) return image;
  const [w, h] = size;
  const wide = w === image.width ? image : pass(image, w, image.height, true);
  return h === image.height ? wide : pass(wide, w, h, false);
}
