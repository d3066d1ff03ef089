// An f32 checkpoint written by transformers' save_pretrained (tests/fixtures/transformers-qwen3-f32, made
// by its make.py with transformers 5.18) and transformers' own float64 scores of one sequence. With its
// default options `webgrpo score` keeps f32 weights in f32 — also where the adapter has shader-f16
// (lavapipe), where `auto` used to store them in f16 — and so lands within 1e-4 of transformers; the
// JSON says why the weights sit as they do and what f16 would cost.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run as runScore } from '../../src/cli/score.ts';
import { captureCliJson } from '../cli-capture.ts';
import { maxAbsDiff, onAdapter } from './helpers.ts';

const DIR = fileURLToPath(new URL('../fixtures/transformers-qwen3-f32', import.meta.url));
interface Expected { writer: Record<string, string>; ids: number[]; logprobs: number[]; entropies: number[] }
const expected = JSON.parse(readFileSync(`${DIR}/expected.json`, 'utf8')) as Expected;
const score = (extra: string[]) => captureCliJson(() => runScore(['--model', DIR, '--ids', expected.ids.join(','), ...extra]));

describe(onAdapter('an f32 checkpoint written by transformers'), () => {
  it('`webgrpo score` with default options keeps it in f32: within 1e-4 of transformers', async () => {
    expect(expected.writer.transformers).toBe('5.18.0');
    const { code, json } = await score([]);
    expect(code).toBe(0);
    expect(json.weight_dtype).toBe('f32');
    expect(json.weight_precision).toEqual({ checkpoint: 'F32', stored: 'f32', reason: "the checkpoint's own precision", expected_logprob_error: 0 });
    // Measured: 7.4e-6 on lavapipe, 5.5e-6 on SwiftShader (entropies 1.8e-5 on both).
    expect(maxAbsDiff(json.logprobs, expected.logprobs)).toBeLessThan(1e-4);
    expect(maxAbsDiff(json.entropies, expected.entropies)).toBeLessThan(1e-4);
  });

  it('with --weights f16 the JSON states the error f16 costs, and the scores show it', async () => {
    const { json } = await score(['--weights', 'f16']);
    expect(json.weight_precision).toMatchObject({ checkpoint: 'F32', stored: 'f16', expected_logprob_error: 2e-3 });
    expect(json.weight_precision.reason).toMatch(/rounded to f16 \(log-probs typically off by ~2e-3/);
    // Measured 1.3e-2: this tiny model's logits are sharp (log-probs spread over 18 nats).
    expect(maxAbsDiff(json.logprobs, expected.logprobs)).toBeGreaterThan(1e-3);
  });
});
