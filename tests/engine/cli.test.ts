// `webgrpo score` and `webgrpo generate` on a generated checkpoint folder (Hugging Face layout).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { openCheckpoint, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { refBackward, refGreedy, refScore } from '../../src/engine/reference/qwen3.ts';
import { parseSafetensors, decodeToFloat32 } from '../../src/model/safetensors.ts';
import { refWeightsFromTensors } from '../../src/engine/reference/weights.ts';
import { run as runScore } from '../../src/cli/score.ts';
import { run as runGenerate } from '../../src/cli/generate.ts';
import { captureCliJson, captureCliLines } from '../cli-capture.ts';
import { maxAbsDiff } from './helpers.ts';

// Slow by nature (the CLI on WebGPU): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const capture = captureCliJson;

describe('webgrpo score / generate', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'webgrpo-cli-'));
    const model = await makeTinyModel({ seed: 3, hidden: 32, layers: 2, heads: 4, kvHeads: 2, headDim: 8, intermediate: 64, dtype: 'bf16' });
    for (const [name, bytes] of model.files) writeFileSync(join(dir, name), bytes);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function reference() {
    const ckpt = await openCheckpoint(dir);
    const tensors = await Promise.all([...ckpt.tensors.keys()].map(async (name) => ({ name, data: await readTensorFloat32(ckpt, name) })));
    return { cfg: ckpt.config, w: refWeightsFromTensors(ckpt.config, tensors) };
  }

  it('score prints logprobs and entropies equal to the reference', async () => {
    const { cfg, w } = await reference();
    const ids = [5, 70, 33, 9, 120, 64, 2];
    const { code, json } = await capture(() => runScore(['--model', dir, '--ids', ids.join(','), '--temperature', '0.9', '--weights', 'f32']));
    expect(code).toBe(0);
    const ref = refScore(cfg, w, { ids, scoreFrom: 1 }, 0.9);
    expect(json.logprobs).toHaveLength(ids.length - 1);
    expect(maxAbsDiff(json.logprobs, ref.logprobs)).toBeLessThan(1e-4);
    expect(maxAbsDiff(json.entropies, ref.entropy)).toBeLessThan(1e-4);
  });

  it('score --grads writes d(mean logprob)/dW of every parameter under the checkpoint names', async () => {
    const { cfg, w } = await reference();
    const ids = [7, 3, 99, 41, 12];
    const out = join(dir, 'grads.safetensors');
    const { code, json } = await capture(() => runScore(['--model', dir, '--ids', ids.join(','), '--grads', out]));
    expect(code).toBe(0);
    expect(json.grads.file).toBe(out);
    const bytes = new Uint8Array(readFileSync(out));
    const header = parseSafetensors(bytes);
    const ref = refBackward(cfg, w, { ids, scoreFrom: 1 }, 1, new Array(ids.length - 1).fill(1 / (ids.length - 1))).grads;
    expect(new Set(header.tensors.map((t) => t.name))).toEqual(new Set(ref.keys()));
    for (const t of header.tensors) {
      const got = decodeToFloat32(t, bytes.subarray(t.fileOffset, t.fileOffset + t.byteLength));
      const want = ref.get(t.name)!;
      let diff = 0;
      let norm = 0;
      for (let i = 0; i < want.length; i++) {
        diff += (got[i]! - want[i]!) ** 2;
        norm += want[i]! ** 2;
      }
      expect(Math.sqrt(diff) / Math.max(Math.sqrt(norm), 1e-12), t.name).toBeLessThan(1e-3);
    }
  });

  it('generate prints n completions with text; greedy equals the reference', async () => {
    const { cfg, w } = await reference();
    const { code, json } = await capture(() => runGenerate(['--model', dir, '--prompt', 'hello there', '--n', '3', '--max-new-tokens', '5', '--temperature', '0', '--stop-ids', '0', '--weights', 'f32']));
    expect(code).toBe(0);
    expect(json.completions).toHaveLength(3);
    const expected = refGreedy(cfg, w, json.prompt_ids, 5);
    for (const c of json.completions) {
      expect(typeof c.text).toBe('string');
      expect(c.logprobs).toHaveLength(c.ids.length);
      // greedy stops early only at the stop id 0
      expect(c.ids).toEqual(expected.slice(0, c.ids.length));
    }
    const sampled = await capture(() => runGenerate(['--model', dir, '--ids', '1,2,3', '--n', '2', '--max-new-tokens', '6', '--seed', '5', '--top-k', '20', '--top-p', '0.9']));
    const again = await capture(() => runGenerate(['--model', dir, '--ids', '1,2,3', '--n', '2', '--max-new-tokens', '6', '--seed', '5', '--top-k', '20', '--top-p', '0.9']));
    expect(sampled.json.completions.map((c: { ids: number[] }) => c.ids)).toEqual(again.json.completions.map((c: { ids: number[] }) => c.ids));
  });

  // The adapter decides a step's time (lavapipe ~13× SwiftShader on the same CPU): the user must see it,
  // first, on stderr, and stdout must stay one JSON object for the machine reading it.
  it('names the WebGPU adapter it runs on, on the first stderr line; stdout stays one JSON object', async () => {
    const stderr: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => stderr.push(String(chunk)) > 0);
    let out;
    try {
      out = await captureCliLines(() => runGenerate(['--model', dir, '--ids', '1,2,3', '--max-new-tokens', '1']));
    } finally {
      spy.mockRestore();
    }
    expect(out.code).toBe(0);
    expect(out.lines).toHaveLength(1);
    const json = JSON.parse(out.lines[0]!) as { adapter: string };
    const first = stderr.join('').split('\n')[0]!;
    const pinned = process.env.WEBGPU_ADAPTER;
    expect(first).toMatch(pinned
      ? new RegExp(`^webgrpo generate: WebGPU adapter ${pinned} \\(.+, software; WEBGPU_ADAPTER=${pinned}\\)$`)
      : /^webgrpo generate: WebGPU adapter .+ \((.+, )?(software|hardware GPU); (WEBGPU_ADAPTER=swiftshader\|lavapipe to pick|the Vulkan driver VK_ICD_FILENAMES\/VK_DRIVER_FILES names)\)$/);
    // The adapter named is the one the engine ran on (its report's description).
    expect(first).toContain(json.adapter.replace(/ \(software\)$/, ''));
  });

  it('rejects bad arguments by name', async () => {
    await expect(runScore(['--model', dir, '--ids', '1'])).rejects.toThrow(/at least 2/);
    await expect(runScore(['--model', dir, '--ids', '1,x'])).rejects.toThrow(/--ids/);
    await expect(runGenerate(['--model', dir, '--ids', '1', '--prompt', 'a'])).rejects.toThrow(/exactly one/);
    await expect(runGenerate(['--model', dir, '--ids', '1', '--bogus', '2'])).rejects.toThrow(/unknown option '--bogus'/);
  });
});
