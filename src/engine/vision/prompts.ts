// Prompts with images, shared by scoring and backward: the pack (M-RoPE positions for sequences
// that carry images) and the vision tower's output placed at each image's span of <|image_pad|> rows.
// Images are placed by their offsets, never found by id: a <|image_pad|> the model sampled outside
// the spans is a text token like any other (its own embedding row, its own gradient).

import type { EngineInternals, ImageSplice, PackedBatch, PackedToken } from '../internals.ts';
import type { Recorder } from '../recorder.ts';
import type { ScoreSequence } from '../types.ts';
import { checkGrids, type GridThw } from './inputs.ts';

/** Refuses images on an engine loaded without its vision tower, and images that do not match their ids. */
export function checkImageInputs(fwd: EngineInternals, sequences: ScoreSequence[], what: string): void {
  if (!sequences.some((s) => s.images)) return;
  if (!fwd.vision) throw new Error(`${what}: a sequence has images but the engine has no vision tower (load it with vision: true from a Qwen3.5 vision-language checkpoint)`);
  const { imageTokenId, spatialMergeSize } = fwd.vision.config;
  sequences.forEach((s, i) => {
    if (s.images) checkImages(s, i, imageTokenId, spatialMergeSize, what);
  });
}

/** Packs sequences back to back (scoring layout), with M-RoPE positions where a sequence has images. */
export function packPrompts(fwd: EngineInternals, seqs: ScoreSequence[], make: (role: string, bytes: number) => GPUBuffer): PackedBatch {
  const tokens: PackedToken[] = [];
  seqs.forEach((s, si) => {
    const base = tokens.length;
    const pos = s.images?.positions;
    s.ids.forEach((token, p) => {
      tokens.push({ token, position: p, kvBase: base, kvSlot: base + p, seq: si, ...(pos ? { mrope: [pos[0][p]!, pos[1][p]!, pos[2][p]!] as const } : {}) });
    });
  });
  return fwd.packTokens(tokens, make);
}

/** Checks one sequence's images against its ids: each image's span of placeholders and the position ids. */
function checkImages(s: ScoreSequence, i: number, imageTokenId: number, merge: number, what: string): void {
  const img = s.images!;
  try {
    checkGrids(img.grids, merge);
  } catch (err) {
    throw new Error(`${what}: sequence ${i} ${(err as Error).message}`);
  }
  if (!Array.isArray(img.offsets) || img.offsets.length !== img.grids.length) {
    throw new Error(`${what}: sequence ${i} images.offsets must give one start per image (${img.grids.length} grids), got ${JSON.stringify(img.offsets)}`);
  }
  let end = 0; // first index after the previous image's span
  img.grids.forEach(([t, h, w], k) => {
    const offset = img.offsets[k]!;
    const n = (t * h * w) / (merge * merge);
    if (!Number.isInteger(offset) || offset < end) {
      throw new Error(`${what}: sequence ${i} image ${k} offset ${offset} must be an integer at or after ${end} (${k === 0 ? 'the start of ids' : `the end of image ${k - 1}`})`);
    }
    if (offset + n > s.ids.length) throw new Error(`${what}: sequence ${i} image ${k} spans ${n} tokens from offset ${offset}, past the end of its ${s.ids.length} ids`);
    for (let j = offset; j < offset + n; j++) {
      if (s.ids[j] !== imageTokenId) throw new Error(`${what}: sequence ${i} image ${k} spans ${n} tokens from offset ${offset}, but token ${j} is id ${s.ids[j]}, not the image token ${imageTokenId}`);
    }
    end = offset + n;
  });
  if (img.positions.length !== 3 || img.positions.some((row) => row.length !== s.ids.length || !row.every((v) => Number.isInteger(v) && v >= 0))) {
    throw new Error(`${what}: sequence ${i} images.positions must be 3 rows of ${s.ids.length} non-negative integers (the M-RoPE position ids)`);
  }
}

/** Records the tower over concatenated pixel_values of `grids`: its merged rows (the training backward passes its own, which keeps activations). */
export type ImageEncoder = (rec: Recorder, pixelValues: Float32Array, grids: readonly GridThw[]) => { embeds: GPUBuffer; rows: number };

/**
 * Records the vision tower once over every image of the pack (attention stays within each image) and
 * returns where its rows go: each image's span of tokens in the packed batch, in order. Inputs checked by checkImageInputs.
 * `adapters`: the tower's LoRA adapters apply (as the language model's do).
 */
export function encodeImages(fwd: EngineInternals, rec: Recorder, seqs: ScoreSequence[], adapters: boolean, encoder?: ImageEncoder): ImageSplice | undefined {
  if (!seqs.some((s) => s.images)) return undefined;
  const tower = fwd.vision!;
  const merge = tower.config.spatialMergeSize;
  const grids: GridThw[] = [];
  const pixels: Float32Array[] = [];
  const rows: number[] = [];
  let base = 0;
  seqs.forEach((s) => {
    if (s.images) {
      grids.push(...s.images.grids);
      pixels.push(s.images.pixelValues);
      s.images.grids.forEach(([t, h, w], k) => {
        const start = base + s.images!.offsets[k]!;
        for (let j = 0; j < (t * h * w) / (merge * merge); j++) rows.push(start + j);
      });
    }
    base += s.ids.length;
  });
  const all = new Float32Array(pixels.reduce((a, p) => a + p.length, 0));
  let off = 0;
  for (const p of pixels) { all.set(p, off); off += p.length; }
  const { embeds } = encoder ? encoder(rec, all, grids) : tower.encode(rec, all, grids, adapters);
  const rowBuf = fwd.scratchBuffer('score.imageRows', rows.length * 4);
  fwd.gpu.device.queue.writeBuffer(rowBuf, 0, Uint32Array.from(rows));
  return { embeds, rows: rowBuf, count: rows.length };
}

