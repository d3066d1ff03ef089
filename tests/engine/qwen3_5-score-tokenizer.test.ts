// Qwen3.5 scoring on a whole Qwen3.5-layout checkpoint folder (tests/fixtures/transformers-qwen3_5-tok, made
// by its make.py): Qwen3_5ForCausalLM with the 248320-row tied embedding in bf16, its own tokenizer files,
// and a chat-templated conversation with an XML tool call whose ids include Qwen3.5's specials (248044..).
// Per-token log-probs and entropies within 1e-4 of transformers' float64 computation.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { loadCheckpointTokenizer } from '../../src/model/tokenizer.ts';
import { maxAbsDiff, onAdapter } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const DIR = new URL('../fixtures/transformers-qwen3_5-tok/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as {
  text: string; ids: number[]; score_from: number; temperature: number; logprobs: number[]; entropies: number[];
};

describe(onAdapter('Qwen3.5 scoring with its own tokenizer folder vs transformers'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  it("the folder's tokenizer gives transformers' ids; log-probs and entropies within 1e-4 (vocab 248320, bf16 checkpoint read as f32, both layer types, GQA)", async () => {
    const tok = await loadCheckpointTokenizer(nodeFolderFiles(DIR), DIR);
    expect(tok.encode(expected.text)).toEqual(expected.ids);
    expect(Math.max(...expected.ids)).toBeGreaterThanOrEqual(248044);
    const ckpt = await openCheckpoint(DIR);
    expect(ckpt.config.vocabSize).toBe(248320);
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32' });
    const out = await engine.score({ sequences: [{ ids: expected.ids, scoreFrom: expected.score_from }], temperature: expected.temperature });
    const err = maxAbsDiff(out.logprobs[0]!, expected.logprobs);
    console.log(`qwen3_5 (248320 vocab) score: max |Δ logprob| vs transformers float64 = ${err.toExponential(2)}`);
    expect(err).toBeLessThan(1e-4);
    expect(maxAbsDiff(out.entropy[0]!, expected.entropies)).toBeLessThan(1e-4);
    engine.destroy();
  });
});
