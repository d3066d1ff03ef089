// `webgrpo score --image FILE.png --text TEXT` on the transformers-written tiny Qwen3.5 VL: the
// processor's ids, and per-token log-probs within 1e-4 of transformers' float64 ones.
import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { run as runScore } from '../../src/cli/score.ts';
import { captureCliJson } from '../cli-capture.ts';
import { maxAbsDiff } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const DIR = new URL('../fixtures/transformers-qwen3_5-vl/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as {
  messages: { content: { type: string; text?: string }[] }[]; input_ids: number[]; image_grid_thw: number[][]; logprobs: number[];
};

describe('webgrpo score --image --text', () => {
  it('prints the ids the processor makes and log-probs within 1e-4 of transformers', async () => {
    const text = expected.messages[0]!.content.find((c) => c.type === 'text')!.text!;
    const { code, json } = await captureCliJson(() => runScore(['--model', DIR, '--image', `${DIR}image.png`, '--text', text, '--weights', 'f32']));
    expect(code).toBe(0);
    expect(json.ids).toEqual(expected.input_ids);
    expect(json.image_grid_thw).toEqual(expected.image_grid_thw);
    expect(json.image_offsets).toEqual([expected.input_ids.indexOf(484)]);
    const err = maxAbsDiff(json.logprobs, expected.logprobs);
    console.log(`score --image: max |Δ logprob| vs transformers float64 = ${err.toExponential(2)}`);
    expect(err).toBeLessThan(1e-4);
    await expect(runScore(['--model', DIR, '--image', `${DIR}image.png`])).rejects.toThrow(/--image and --text go together/);
    await expect(runScore(['--model', DIR, '--image', `${DIR}config.json`, '--text', 'x'])).rejects.toThrow(/config.json: not a PNG file/);
  });
});
