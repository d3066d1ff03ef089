// `webgrpo score` and `webgrpo generate` on Qwen3.5 folders: the two checkpoints transformers wrote
// (tests/fixtures/transformers-qwen3_5-{f32,bf16}: no tokenizer files, so token ids only) scored
// against transformers' own log-probs, and a make-tiny-model --arch qwen3_5 folder (byte tokenizer)
// generating from a text prompt.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { refGreedy } from '../../src/engine/reference/qwen3.ts';
import { refWeightsFromCheckpoint } from '../../src/engine/reference/weights.ts';
import { run as runScore } from '../../src/cli/score.ts';
import { run as runGenerate } from '../../src/cli/generate.ts';
import { captureCliJson } from '../cli-capture.ts';
import { maxAbsDiff } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const fixture = (name: string): string => new URL(`../fixtures/${name}/`, import.meta.url).pathname;

describe('webgrpo score / generate on a Qwen3.5 folder', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'webgrpo-cli-qwen3_5-'));
    const model = await makeTinyModel({ arch: 'qwen3_5', seed: 4, layers: 3, layerTypes: ['linear_attention', 'full_attention', 'linear_attention'] });
    for (const [name, bytes] of model.files) writeFileSync(join(dir, name), bytes);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // The bf16 one has Qwen3's 151936-row vocabulary: log Z summed over it in one running f32 sum was
  // 2e-4 off (entropy 4e-3); logits_stats.wgsl sums in blocks.
  it.each(['transformers-qwen3_5-f32', 'transformers-qwen3_5-bf16'])('score --model %s is within 1e-4 of transformers\' exact log-probs and entropies', async (name) => {
    const e = JSON.parse(readFileSync(`${fixture(name)}expected.json`, 'utf8')) as { ids: number[]; score_from: number; temperature: number; logprobs: number[]; entropies: number[] };
    const { code, json } = await captureCliJson(() => runScore(['--model', fixture(name), '--ids', e.ids.join(','), '--score-from', String(e.score_from), '--temperature', String(e.temperature), '--weights', 'f32']));
    expect(code).toBe(0);
    const err = maxAbsDiff(json.logprobs, e.logprobs);
    console.log(`webgrpo score ${name}: max |Δ logprob| vs transformers = ${err.toExponential(2)}`);
    expect(err).toBeLessThan(1e-4);
    expect(maxAbsDiff(json.entropies, e.entropies)).toBeLessThan(1e-4);
  });

  it('generate on a folder without a tokenizer: token ids in, greedy equals the float64 re-forward; --prompt asks for a tokenizer', async () => {
    const folder = fixture('transformers-qwen3_5-f32');
    const ckpt = await openCheckpoint(folder);
    const w = await refWeightsFromCheckpoint(ckpt);
    const ids = [5, 70, 33, 9, 120, 64, 2];
    const { code, json } = await captureCliJson(() => runGenerate(['--model', folder, '--ids', ids.join(','), '--n', '2', '--max-new-tokens', '6', '--temperature', '0', '--stop-ids', '0', '--weights', 'f32']));
    expect(code).toBe(0);
    const want = refGreedy(ckpt.config, w, ids, 6);
    for (const c of json.completions) {
      expect(c.text).toBeNull();
      expect(c.ids).toEqual(want.slice(0, c.ids.length));
      expect(c.logprobs).toHaveLength(c.ids.length);
    }
    await expect(runGenerate(['--model', folder, '--prompt', 'hi'])).rejects.toThrow(/--prompt needs tokenizer.json .* use --ids instead/);
  });

  it('generate --prompt on a make-tiny-model --arch qwen3_5 folder: text in and out, greedy equals the float64 re-forward', async () => {
    const ckpt = await openCheckpoint(dir);
    expect(ckpt.config.architecture).toBe('qwen3_5');
    const w = await refWeightsFromCheckpoint(ckpt);
    const { code, json } = await captureCliJson(() => runGenerate(['--model', dir, '--prompt', 'hello there', '--n', '3', '--max-new-tokens', '5', '--temperature', '0', '--stop-ids', '0', '--weights', 'f32']));
    expect(code).toBe(0);
    expect(json.completions).toHaveLength(3);
    const want = refGreedy(ckpt.config, w, json.prompt_ids, 5);
    for (const c of json.completions) {
      expect(typeof c.text).toBe('string');
      expect(c.ids).toEqual(want.slice(0, c.ids.length));
    }
  });
});
