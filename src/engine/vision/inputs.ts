// Host-side inputs of the vision tower and of M-RoPE, computed on the CPU in f32 as transformers
// does (vision_utils.py, Qwen3_5VisionRotaryEmbedding, Qwen3_5TextRotaryEmbedding): integer
// layouts and a few thousand angles, not worth kernels, and the GPU's sin/cos of large angles is
// imprecise (see rope-table.ts).

import { ropeInvFreq } from '../rope-table.ts';

/** One image (or video) grid in patches: temporal, height, width (transformers' image_grid_thw row). */
export type GridThw = readonly [number, number, number];

export interface PatchLayout {
  /** Patches over all grids (rows of pixel_values). */
  patches: number;
  /** (patches, 4) taps into the learned position table and (patches, 4) their bilinear weights. */
  posIndex: Uint32Array<ArrayBuffer>;
  posWeight: Float32Array<ArrayBuffer>;
  /** (patches, headDim/2, 2) cos, sin of the 2-D rotary angles (rope.wgsl's table layout). */
  rope: Float32Array<ArrayBuffer>;
  /** (patches, 4) attention.wgsl metadata: [first patch of the frame, frame length − 1, 0, frame]: bidirectional within a frame. */
  meta: Uint32Array<ArrayBuffer>;
}

/** Checks a grid list against the merge size (the processor only emits grids divisible by it). */
export function checkGrids(grids: readonly GridThw[], mergeSize: number): void {
  if (grids.length === 0) throw new Error('vision: no image grids');
  grids.forEach((g, i) => {
    if (g.length !== 3 || !g.every((v) => Number.isInteger(v) && v > 0)) throw new Error(`vision: grid ${i} must be three positive integers (t, h, w), got ${JSON.stringify(g)}`);
    if (g[1] % mergeSize !== 0 || g[2] % mergeSize !== 0) throw new Error(`vision: grid ${i} (${g.join('×')}) has h or w not divisible by spatial_merge_size ${mergeSize}`);
  });
}

/** (row, col) of patch s of a t·h·w grid: pixel_values come in spatial-merge-block order, m×m blocks row-major. */
function patchRowCol(s: number, h: number, w: number, m: number): [number, number] {
  const within = s % (h * w);
  const blocksW = w / m;
  const inCol = within % m;
  const inRow = Math.floor(within / m) % m;
  const blockCol = Math.floor(within / (m * m)) % blocksW;
  const blockRow = Math.floor(within / (m * m * blocksW));
  return [blockRow * m + inRow, blockCol * m + inCol];
}

/** Bilinear taps (align_corners=True, border clamp) of target index i on an axis of `size` into `side` table rows, in f32. */
function axisTaps(i: number, size: number, side: number): [number, number, number, number] {
  const f = Math.fround;
  const src = f(f(i * (side - 1)) / Math.max(size - 1, 1));
  const floor = Math.floor(src);
  const w0 = Math.max(f(1 - Math.abs(f(src - floor))), 0);
  const w1 = Math.max(f(1 - Math.abs(f(f(src - floor) - 1))), 0);
  return [Math.min(Math.max(floor, 0), side - 1), Math.min(floor + 1, side - 1), w0, w1];
}

export function patchLayout(grids: readonly GridThw[], cfg: { spatialMergeSize: number; numPositionEmbeddings: number; headDim: number; ropeTheta: number }): PatchLayout {
  const m = cfg.spatialMergeSize;
  checkGrids(grids, m);
  const side = Math.floor(Math.sqrt(cfg.numPositionEmbeddings));
  const patches = grids.reduce((a, [t, h, w]) => a + t * h * w, 0);
  const quarter = cfg.headDim / 4; // h and w each rotate headDim/4 frequency pairs
  const inv = ropeInvFreq(cfg.headDim / 2, cfg.ropeTheta);
  const out: PatchLayout = {
    patches,
    posIndex: new Uint32Array(patches * 4),
    posWeight: new Float32Array(patches * 4),
    rope: new Float32Array(patches * quarter * 4),
    meta: new Uint32Array(patches * 4),
  };
  let s0 = 0;
  let frame = 0;
  for (const [t, h, w] of grids) {
    for (let s = 0; s < t * h * w; s++) {
      const p = s0 + s;
      const [row, col] = patchRowCol(s, h, w, m);
      const [r0, r1, rw0, rw1] = axisTaps(row, h, side);
      const [c0, c1, cw0, cw1] = axisTaps(col, w, side);
      out.posIndex.set([r0 * side + c0, r0 * side + c1, r1 * side + c0, r1 * side + c1], p * 4);
      out.posWeight.set([Math.fround(rw0 * cw0), Math.fround(rw0 * cw1), Math.fround(rw1 * cw0), Math.fround(rw1 * cw1)], p * 4);
      for (let j = 0; j < 2 * quarter; j++) {
        const angle = j < quarter ? Math.fround(row * inv[j]!) : Math.fround(col * inv[j - quarter]!);
        out.rope[(p * 2 * quarter + j) * 2] = Math.cos(angle);
        out.rope[(p * 2 * quarter + j) * 2 + 1] = Math.sin(angle);
      }
      const frameStart = s0 + Math.floor(s / (h * w)) * h * w;
      out.meta.set([frameStart, h * w - 1, 0, frame + Math.floor(s / (h * w))], p * 4);
    }
    s0 += t * h * w;
    frame += t;
  }
  return out;
}

/**
 * The position taps of a layout inverted per table row, for the table's gradient
 * (pos_embed_backward.wgsl): the taps reading row j are entries offsets[j] .. offsets[j + 1] of
 * `patch` (which patch) and `weight` (its bilinear weight), in patch order.
 */
export function positionTapsByRow(layout: PatchLayout, tableRows: number): { offsets: Uint32Array<ArrayBuffer>; patch: Uint32Array<ArrayBuffer>; weight: Float32Array<ArrayBuffer> } {
  const taps = layout.posIndex.length;
  const offsets = new Uint32Array(tableRows + 1);
  for (let e = 0; e < taps; e++) offsets[layout.posIndex[e]! + 1]!++;
  for (let j = 0; j < tableRows; j++) offsets[j + 1]! += offsets[j]!;
  const next = offsets.slice(0, tableRows);
  const patch = new Uint32Array(taps);
  const weight = new Float32Array(taps);
  for (let e = 0; e < taps; e++) {
    const at = next[layout.posIndex[e]!]!++;
    patch[at] = Math.floor(e / 4);
    weight[at] = layout.posWeight[e]!;
  }
  return { offsets, patch, weight };
}

/**
 * M-RoPE cos/sin (T, rotaryDim/2, 2) of the full-attention layers: frequency j takes the temporal
 * position, except the interleaved ones that take height (j ≡ 1 mod 3, j < 3·section[1]) and width
 * (j ≡ 2 mod 3, j < 3·section[2]), as Qwen3_5TextRotaryEmbedding.recomposition_frequencies. Equal
 * t/h/w positions give exactly the plain table (text-only prompts are unchanged).
 */
export function mropeTable(positions: readonly (readonly [number, number, number])[], rotaryDim: number, theta: number, section: readonly number[]): Float32Array<ArrayBuffer> {
  const inv = ropeInvFreq(rotaryDim, theta);
  const half = rotaryDim / 2;
  const axis = new Uint8Array(half);
  for (let j = 0; j < half; j++) {
    if (j % 3 === 1 && j < 3 * section[1]!) axis[j] = 1;
    else if (j % 3 === 2 && j < 3 * section[2]!) axis[j] = 2;
  }
  const out = new Float32Array(positions.length * half * 2);
  positions.forEach((pos, t) => {
    for (let j = 0; j < half; j++) {
      const angle = Math.fround(pos[axis[j]!]! * inv[j]!);
      out[(t * half + j) * 2] = Math.cos(angle);
      out[(t * half + j) * 2 + 1] = Math.sin(angle);
    }
  });
  return out;
}

