// The tiny Qwen3.5 VL fixture written by transformers (tests/fixtures/transformers-qwen3_5-vl/make.py), as
// the engine tests read it: expected.json, the processor's pixel_values, torch's gradient files, and the
// one image+text request every gradient check scores.
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { WebGpuEngine } from '../../src/engine/engine.ts';
import { readSafetensorsHeader } from '../../src/model/checkpoint.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { decodeToFloat32 } from '../../src/model/safetensors.ts';

export const VL_DIR = new URL('../fixtures/transformers-qwen3_5-vl/', import.meta.url).pathname;

export const vlExpected = JSON.parse(readFileSync(`${VL_DIR}expected.json`, 'utf8')) as {
  input_ids: number[]; image_grid_thw: [number, number, number][]; small_image_grid_thw: [number, number, number][];
  position_ids: [number[], number[], number[]]; vision: { merged: number[] }; score_from: number; temperature: number; logprobs: number[];
  loss_weights: number[];
};

/** The fixture's <|image_pad|> id: the first one marks where the main image's tokens start. */
export const VL_IMAGE_PAD = 484;

/** Every tensor of one of the fixture's safetensors files (grads.safetensors, lora-grads.safetensors, …), as f32. */
export async function vlTensors(file: string): Promise<Map<string, Float32Array>> {
  const files = nodeFolderFiles(VL_DIR);
  const out = new Map<string, Float32Array>();
  for (const t of await readSafetensorsHeader(files, file)) out.set(t.name, decodeToFloat32(t, await files.read(file, t.fileOffset, t.fileOffset + t.byteLength)));
  return out;
}

/** The processor's pixel_values for the main image ('main') or the small one ('small'). */
export function vlPixels(name: 'main' | 'small'): Float32Array {
  const bytes = readFileSync(`${VL_DIR}pixel_values.safetensors`);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, { data_offsets: [number, number] }>;
  const [a, b] = header[name]!.data_offsets;
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset + 8 + n + a, bytes.byteOffset + 8 + n + b));
}

/** The image+text prompt's one sequence, its image placed at the first pad with transformers' M-RoPE positions. */
export const vlSequences = () => [{
  ids: vlExpected.input_ids,
  scoreFrom: vlExpected.score_from,
  images: { pixelValues: vlPixels('main'), grids: vlExpected.image_grid_thw, offsets: [vlExpected.input_ids.indexOf(VL_IMAGE_PAD)], positions: vlExpected.position_ids },
}];

/** The backward request torch's grads were taken for: the fixture's loss weights as dL/dlogp. */
export const vlRequest = () => ({ sequences: vlSequences(), temperature: vlExpected.temperature, dLdLogp: [Float32Array.from(vlExpected.loss_weights)] });

/**
 * One backward on the fixture's request against the engine's memory plan, from the buffers a wrapped
 * createBuffer records in `created` (cleared here): the labels `tower` matches are the plan's "vision tower
 * backward", every other non-transfer buffer the language model's checkpoints and working set; a second
 * backward creates nothing.
 */
export async function expectBackwardAsPlanned(engine: WebGpuEngine, created: { label: string; size: number }[], tower: RegExp, what: string): Promise<void> {
  const item = (name: string) => engine.memoryPlan.items.find((i) => i.name === name)?.bytes ?? 0;
  const sum = (list: { size: number }[]) => list.reduce((a, c) => a + c.size, 0);
  created.length = 0;
  await engine.backward(vlRequest());
  expect(sum(created.filter((c) => tower.test(c.label))), `vision tower backward (${what})`).toBe(item('vision tower backward'));
  // The rest of the call: the language model's planned buffers (the tower's inputs are the forward's scratch, counted in 'vision activations').
  const rest = created.filter((c) => !tower.test(c.label) && !/uniform arena| readback$|^scratch visual\.|^scratch score\.imageRows$|^linear state placeholder$|^scratch linear\.nostate$/.test(c.label));
  expect(sum(rest), `language model backward (${what})`).toBe(item('activation checkpoints') + item('backward working set'));
  created.length = 0;
  await engine.backward(vlRequest());
  expect(sum(created.filter((c) => !/uniform arena| readback$/.test(c.label))), `second backward (${what})`).toBe(0);
}
