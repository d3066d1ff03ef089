// Float64 reference forward of Qwen3.5's vision tower (transformers' Qwen3_5VisionModel), llm.c style:
// patch embedding (the Conv3d is a linear over each flattened patch), the learned position grid
// bilinearly resampled (align_corners) to the image's patch grid, `depth` pre-LayerNorm blocks of
// bidirectional attention with the 2-D axial rotary and a GELU(tanh) MLP, then the merger: LayerNorm,
// m×m neighbouring patches side by side, Linear, GELU(erf), Linear to the text model's width.

import type { VisionConfig } from '../../model/types.ts';

/** Weights by their checkpoint names (model.visual.*), float64, row-major as stored. */
export type RefVisionWeights = ReadonlyMap<string, Float64Array>;

export interface RefVisionOutput {
  /** [patches, hiddenSize]: the last block's output, in the processor's patch order. */
  hidden: Float64Array;
  /** [patches / m², outHiddenSize]: the merged embeddings that replace the image tokens. */
  merged: Float64Array;
}

function get(w: RefVisionWeights, name: string): Float64Array {
  const t = w.get(`model.visual.${name}`);
  if (!t) throw new Error(`vision reference: no tensor 'model.visual.${name}'`);
  return t;
}

/** y[n, out] = x[n, in] · W[out, in]ᵀ + b. */
function linear(x: Float64Array, n: number, inDim: number, W: Float64Array, b: Float64Array, outDim: number): Float64Array {
  const y = new Float64Array(n * outDim);
  for (let i = 0; i < n; i++) {
    for (let o = 0; o < outDim; o++) {
      let s = b[o]!;
      for (let k = 0; k < inDim; k++) s += x[i * inDim + k]! * W[o * inDim + k]!;
      y[i * outDim + o] = s;
    }
  }
  return y;
}

function layerNorm(x: Float64Array, n: number, d: number, g: Float64Array, b: Float64Array, eps: number): Float64Array {
  const y = new Float64Array(n * d);
  for (let i = 0; i < n; i++) {
    let mean = 0;
    for (let k = 0; k < d; k++) mean += x[i * d + k]!;
    mean /= d;
    let v = 0;
    for (let k = 0; k < d; k++) v += (x[i * d + k]! - mean) ** 2;
    const inv = 1 / Math.sqrt(v / d + eps);
    for (let k = 0; k < d; k++) y[i * d + k] = (x[i * d + k]! - mean) * inv * g[k]! + b[k]!;
  }
  return y;
}

/** erf to ~1e-16: its Taylor series below 3, the continued fraction of erfc above. */
export function erf(x: number): number {
  const ax = Math.abs(x);
  if (ax < 3) {
    let term = ax;
    let sum = ax;
    for (let n = 1; n < 200; n++) {
      term *= (-ax * ax) / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc(x) = exp(−x²)/√π · 1/(x + 1/2/(x + 1/(x + 3/2/(x + …)))), evaluated bottom-up.
  let f = ax;
  for (let k = 60; k >= 1; k--) f = ax + k / 2 / f;
  return Math.sign(x) * (1 - Math.exp(-ax * ax) / Math.sqrt(Math.PI) / f);
}

const geluTanh = (x: number): number => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
const geluErf = (x: number): number => 0.5 * x * (1 + erf(x / Math.SQRT2));

/** (row, col) of each patch in the processor's merge-block order. */
function patchCoords(gh: number, gw: number, m: number): [number, number][] {
  const out: [number, number][] = [];
  for (let bh = 0; bh < gh / m; bh++) for (let bw = 0; bw < gw / m; bw++) for (let ih = 0; ih < m; ih++) for (let iw = 0; iw < m; iw++) out.push([bh * m + ih, bw * m + iw]);
  return out;
}

/** One image's tower output. `pixelValues` is [t·gh·gw, 3·tp·p·p] as the processor makes it. */
export function refVisionForward(cfg: VisionConfig, w: RefVisionWeights, pixelValues: ArrayLike<number>, gridThw: [number, number, number]): RefVisionOutput {
  const [t, gh, gw] = gridThw;
  const m = cfg.spatialMergeSize;
  const D = cfg.hiddenSize;
  const P = cfg.inChannels * cfg.temporalPatchSize * cfg.patchSize * cfg.patchSize;
  const N = t * gh * gw;
  if (pixelValues.length !== N * P) throw new Error(`pixel_values has ${pixelValues.length} values, grid ${gridThw.join('×')} needs ${N}×${P}`);
  if (gh % m !== 0 || gw % m !== 0) throw new Error(`grid ${gh}×${gw} is not a multiple of the merge size ${m}`);

  let x = linear(Float64Array.from(pixelValues), N, P, get(w, 'patch_embed.proj.weight'), get(w, 'patch_embed.proj.bias'), D);

  // Position grid: bilinear, align_corners, each axis resampled from `side` to the patch grid.
  const side = cfg.positionGridSide;
  const pos = get(w, 'pos_embed.weight');
  const coords = patchCoords(gh, gw, m);
  const axis = (i: number, size: number): [number, number, number] => {
    const src = (i * (side - 1)) / Math.max(size - 1, 1);
    const f = Math.floor(src);
    return [Math.min(f, side - 1), Math.min(f + 1, side - 1), src - f];
  };
  for (let n = 0; n < N; n++) {
    const [r, c] = coords[n % (gh * gw)]!;
    const [r0, r1, fr] = axis(r, gh);
    const [c0, c1, fc] = axis(c, gw);
    const taps: [number, number][] = [[r0 * side + c0, (1 - fr) * (1 - fc)], [r0 * side + c1, (1 - fr) * fc], [r1 * side + c0, fr * (1 - fc)], [r1 * side + c1, fr * fc]];
    for (const [row, weight] of taps) for (let k = 0; k < D; k++) x[n * D + k] += weight * pos[row * D + k]!;
  }

  // Axial rotary: headDim/4 frequencies; angles [row·f, col·f] repeated twice over the head.
  const hd = cfg.headDim;
  const nf = hd / 4;
  const invFreq = Array.from({ length: nf }, (_, i) => 1 / cfg.ropeTheta ** ((2 * i) / (hd / 2)));
  const cos = new Float64Array(N * hd);
  const sin = new Float64Array(N * hd);
  for (let n = 0; n < N; n++) {
    const [r, c] = coords[n % (gh * gw)]!;
    for (let j = 0; j < hd; j++) {
      const q = j % (hd / 2);
      const angle = q < nf ? r * invFreq[q]! : c * invFreq[q - nf]!;
      cos[n * hd + j] = Math.cos(angle);
      sin[n * hd + j] = Math.sin(angle);
    }
  }
  const rotate = (v: Float64Array, n: number, off: number): void => {
    const half = hd / 2;
    const tmp = v.slice(off, off + hd);
    for (let j = 0; j < hd; j++) {
      const rot = j < half ? -tmp[j + half]! : tmp[j - half]!;
      v[off + j] = tmp[j]! * cos[n * hd + j]! + rot * sin[n * hd + j]!;
    }
  };

  const H = cfg.numHeads;
  const frame = gh * gw; // attention stays within a frame (cu_seqlens per frame)
  const act = cfg.hiddenAct === 'gelu' ? geluErf : geluTanh;
  for (let b = 0; b < cfg.depth; b++) {
    const p = `blocks.${b}.`;
    const h1 = layerNorm(x, N, D, get(w, `${p}norm1.weight`), get(w, `${p}norm1.bias`), cfg.layerNormEps);
    const qkv = linear(h1, N, D, get(w, `${p}attn.qkv.weight`), get(w, `${p}attn.qkv.bias`), 3 * D);
    for (let n = 0; n < N; n++) for (let h = 0; h < H; h++) {
      rotate(qkv, n, n * 3 * D + h * hd);
      rotate(qkv, n, n * 3 * D + D + h * hd);
    }
    const att = new Float64Array(N * D);
    const scale = 1 / Math.sqrt(hd);
    const scores = new Float64Array(frame);
    for (let n = 0; n < N; n++) {
      const f0 = Math.floor(n / frame) * frame;
      for (let h = 0; h < H; h++) {
        let max = -Infinity;
        for (let j = 0; j < frame; j++) {
          let s = 0;
          for (let k = 0; k < hd; k++) s += qkv[n * 3 * D + h * hd + k]! * qkv[(f0 + j) * 3 * D + D + h * hd + k]!;
          scores[j] = s * scale;
          max = Math.max(max, scores[j]!);
        }
        let sum = 0;
        for (let j = 0; j < frame; j++) sum += scores[j] = Math.exp(scores[j]! - max);
        for (let j = 0; j < frame; j++) {
          const pj = scores[j]! / sum;
          for (let k = 0; k < hd; k++) att[n * D + h * hd + k] += pj * qkv[(f0 + j) * 3 * D + 2 * D + h * hd + k]!;
        }
      }
    }
    const o = linear(att, N, D, get(w, `${p}attn.proj.weight`), get(w, `${p}attn.proj.bias`), D);
    for (let i = 0; i < x.length; i++) x[i] += o[i]!;
    const h2 = layerNorm(x, N, D, get(w, `${p}norm2.weight`), get(w, `${p}norm2.bias`), cfg.layerNormEps);
    const up = linear(h2, N, D, get(w, `${p}mlp.linear_fc1.weight`), get(w, `${p}mlp.linear_fc1.bias`), cfg.intermediateSize);
    for (let i = 0; i < up.length; i++) up[i] = act(up[i]!);
    const down = linear(up, N, cfg.intermediateSize, get(w, `${p}mlp.linear_fc2.weight`), get(w, `${p}mlp.linear_fc2.bias`), D);
    for (let i = 0; i < x.length; i++) x[i] += down[i]!;
  }

  // Merger: consecutive m² patches (one merge block, by the processor's order) side by side.
  const M = D * m * m;
  const G = N / (m * m);
  const normed = layerNorm(x, N, D, get(w, 'merger.norm.weight'), get(w, 'merger.norm.bias'), cfg.layerNormEps);
  const mid = linear(normed, G, M, get(w, 'merger.linear_fc1.weight'), get(w, 'merger.linear_fc1.bias'), M);
  for (let i = 0; i < mid.length; i++) mid[i] = geluErf(mid[i]!);
  const merged = linear(mid, G, M, get(w, 'merger.linear_fc2.weight'), get(w, 'merger.linear_fc2.bias'), cfg.outHiddenSize);
  return { hidden: x, merged };
}
