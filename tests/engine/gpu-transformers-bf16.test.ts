// A bf16 checkpoint written by transformers itself (tests/fixtures/transformers-qwen3-bf16: save_pretrained
// of transformers 5.12.1, tied embeddings so no lm_head.weight, `rope_parameters`, `dtype`; make.py
// says how it was made) with transformers' own float64 scores of one sequence on those bf16 weights.
// On an adapter with shader-f16 (lavapipe, GPUs) `webgrpo score` stores the weights in f16 and must stay
// within 1e-4 of transformers; without it (SwiftShader) the same halves are unpacked from u32 words.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { refScore } from '../../src/engine/reference/qwen3.ts';
import { refWeightsFromTensors } from '../../src/engine/reference/weights.ts';
import { openCheckpoint, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { run as runScore } from '../../src/cli/score.ts';
import { captureCliJson } from '../cli-capture.ts';
import { ADAPTER, maxAbsDiff, onAdapter } from './helpers.ts';

const DIR = fileURLToPath(new URL('../fixtures/transformers-qwen3-bf16', import.meta.url));
interface Expected { writer: Record<string, string>; ids: number[]; score_from: number; logprobs: number[]; entropies: number[] }
const expected = JSON.parse(readFileSync(`${DIR}/expected.json`, 'utf8')) as Expected;

describe(onAdapter('a bf16 checkpoint written by transformers'), () => {
  let gpu: Gpu;
  beforeAll(async () => {
    gpu = await getGpu();
  });
  afterAll(() => gpu?.device.destroy());

  it('is read as transformers wrote it, and our float64 reference equals transformers\' float64 scores', async () => {
    const ckpt = await openCheckpoint(DIR);
    expect(expected.writer.transformers).toBe('5.12.1');
    expect(ckpt.config.tieWordEmbeddings).toBe(true);
    expect(ckpt.tensors.has('lm_head.weight')).toBe(false);
    expect(ckpt.config.ropeTheta).toBe(1e6);
    expect([...ckpt.tensors.values()].every((t) => t.dtype === 'BF16')).toBe(true);
    const tensors = await Promise.all([...ckpt.tensors.keys()].map(async (name) => ({ name, data: await readTensorFloat32(ckpt, name) })));
    const ref = refScore(ckpt.config, refWeightsFromTensors(ckpt.config, tensors), { ids: expected.ids, scoreFrom: expected.score_from }, 1);
    // Same bf16 values, both in float64 — except that transformers' Qwen3RMSNorm and rotary embedding
    // compute in float32 even in a float64 model (measured: 3.8e-6 apart; 1 % on one
    // element of one weight moves it by 4e-3 to 2e-2).
    expect(maxAbsDiff(ref.logprobs, expected.logprobs)).toBeLessThan(1e-5);
    expect(maxAbsDiff(ref.entropy, expected.entropies)).toBeLessThan(1e-5);
    // The scores are far from uniform, so every weight matters to them.
    expect(Math.max(...expected.logprobs) - Math.min(...expected.logprobs)).toBeGreaterThan(2);
  });

  it('`webgrpo score` with weights stored in f16: within 1e-4 of transformers, JSON names adapter and "weight_dtype": "f16"', async () => {
    // Where the adapter has shader-f16, `auto` must choose f16 by itself.
    const { code, json } = await captureCliJson(() => runScore(['--model', DIR, '--ids', expected.ids.join(','), '--weights', gpu.f16 ? 'auto' : 'f16']));
    expect(code).toBe(0);
    expect(json.weight_dtype).toBe('f16');
    expect(json.adapter).toMatch(ADAPTER === 'lavapipe' ? /llvmpipe/ : ADAPTER === 'swiftshader' ? /SwiftShader/i : /./);
    // Measured: 7.5e-6 on lavapipe (native f16 loads), 1.0e-5 on SwiftShader (halves unpacked from u32).
    expect(maxAbsDiff(json.logprobs, expected.logprobs)).toBeLessThan(1e-4);
    expect(maxAbsDiff(json.entropies, expected.entropies)).toBeLessThan(1e-4);
  });
});
