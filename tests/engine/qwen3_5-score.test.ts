// Qwen3.5 (hybrid Gated DeltaNet + gated attention) scoring against transformers itself: the tiny
// checkpoint transformers' save_pretrained wrote (tests/fixtures/transformers-qwen3_5-f32, made by
// its make.py), with transformers' float64 per-token log-probs and entropies.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { maxAbsDiff, onAdapter } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const DIR = new URL('../fixtures/transformers-qwen3_5-f32/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as {
  ids: number[]; score_from: number; temperature: number; logprobs: number[]; entropies: number[];
  decode: { prefill: number; logprobs: number[] };
};

/** The same model's answers for a 256-token sequence, its whole context: four 64-token chunks (transformers-qwen3_5-long/make.py). */
const LONG = new URL('../fixtures/transformers-qwen3_5-long/', import.meta.url).pathname;
const long = JSON.parse(readFileSync(`${LONG}expected.json`, 'utf8')) as typeof expected;

describe(onAdapter('Qwen3.5 scoring vs transformers'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  // The delta rule's two multi-token kernels: the chunked default and the recurrent one (decode's).
  it.each(['chunked', 'recurrent'] as const)('per-token log-probs and entropies within 1e-4 of transformers (f32 weights; both layer types, GQA in attention and DeltaNet; %s delta rule)', async (deltaRule) => {
    const ckpt = await openCheckpoint(DIR);
    expect(ckpt.config.layerTypes).toEqual(['linear_attention', 'full_attention', 'linear_attention']);
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32', deltaRule });
    const seq = { ids: expected.ids, scoreFrom: expected.score_from };
    // Packed with a second, shorter sequence in front: no state may leak across the boundary.
    const other = { ids: expected.ids.slice(5, 22).reverse(), scoreFrom: 1 };
    const out = await engine.score({ sequences: [other, seq], temperature: expected.temperature });
    const err = maxAbsDiff(out.logprobs[1]!, expected.logprobs);
    expect(err).toBeLessThan(1e-4);
    expect(maxAbsDiff(out.entropy[1]!, expected.entropies)).toBeLessThan(1e-4);
    // The same sequence alone scores the same (the pack is only a layout).
    const alone = await engine.score({ sequences: [seq], temperature: expected.temperature });
    expect(maxAbsDiff(alone.logprobs[0]!, expected.logprobs)).toBeLessThan(1e-4);
    console.log(`qwen3_5 score (${deltaRule}): max |Δ logprob| vs transformers float64 = ${err.toExponential(2)}`);
    engine.destroy();
  });
  it.each(['chunked', 'recurrent'] as const)('256 tokens (four 64-token chunks): per-token log-probs and entropies within 1e-4 of transformers (%s delta rule)', async (deltaRule) => {
    const engine = await loadEngine(await openCheckpoint(DIR), { gpu, weightDtype: 'f32', deltaRule });
    const out = await engine.score({ sequences: [{ ids: long.ids, scoreFrom: long.score_from }], temperature: long.temperature });
    const err = maxAbsDiff(out.logprobs[0]!, long.logprobs);
    console.log(`qwen3_5 score, 256 tokens (${deltaRule}): max |Δ logprob| vs transformers float64 = ${err.toExponential(2)}`);
    expect(err).toBeLessThan(1e-4);
    expect(maxAbsDiff(out.entropy[0]!, long.entropies)).toBeLessThan(1e-4);
    engine.destroy();
  });
  it('decode with the conv + recurrent state (and the KV cache of the attention layer) equals the full re-score and transformers\' cached decode', async () => {
    const ckpt = await openCheckpoint(DIR);
    const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32' });
    const fwd = engine.internals;
    const cfg = fwd.config;
    const la = cfg.linearAttention!;
    const ids = expected.ids;
    const C = 2 * la.numKeyHeads * la.keyHeadDim + la.numValueHeads * la.valueHeadDim;
    const kvWidth = cfg.numKvHeads * cfg.headDim;
    const make = (label: string, bytes: number) => fwd.createBuffer(label, bytes);
    const kv = { k: cfg.layerTypes.map(() => make('k cache', ids.length * kvWidth * 4)), v: cfg.layerTypes.map(() => make('v cache', ids.length * kvWidth * 4)), dtype: 'f32' as const };
    // State slot 1 of 2 (slot 0 stays unused), so that the slot indexing is exercised too.
    const linearState = {
      conv: cfg.layerTypes.map(() => make('conv state', 2 * C * (la.convKernelDim - 1) * 4)),
      recurrent: cfg.layerTypes.map(() => make('recurrent state', 2 * la.numValueHeads * la.keyHeadDim * la.valueHeadDim * 4)),
    };
    /** Feeds ids[from, to) after the cached prefix; returns log p(ids[to]) from the last row. */
    const feed = async (from: number, to: number): Promise<number> => {
      const tokens = Array.from({ length: to - from }, (_, i) => ({ token: ids[from + i]!, position: from + i, kvBase: 0, kvSlot: from + i, seq: 0 }));
      const batch = fwd.packTokens(tokens, make, [1]);
      const acts = fwd.createLayerActs(batch.T, 'decode test');
      const rec = fwd.recorder('decode test');
      const hidden = fwd.encodeTrunk(rec, batch, acts, { adapters: false, kv, linearState });
      const row = make('row', 4);
      gpu.device.queue.writeBuffer(row, 0, Uint32Array.of(batch.T - 1));
      const target = make('target', 4);
      gpu.device.queue.writeBuffer(target, 0, Uint32Array.of(ids[to]!));
      const out = fwd.encodeLogprobs(rec, fwd.encodeFinalHidden(rec, hidden, row, 1), 1, target, 1);
      rec.read(out, 0, 4);
      const [bytes] = await rec.submit();
      return new Float32Array(bytes!)[0]!;
    };
    const prefill = expected.decode.prefill;
    const got: number[] = [await feed(0, prefill), await feed(prefill, prefill + 3)]; // a prefill, then a 3-token continuation
    for (let t = prefill + 3; t < ids.length - 1; t++) got.push(await feed(t, t + 1));
    const rescored = (await engine.score({ sequences: [{ ids, scoreFrom: 1 }], temperature: 1 })).logprobs[0]!;
    // got[0] predicts ids[prefill], got[1] ids[prefill + 3], then ids[t + 1]; logprobs[i] predicts ids[i + 1].
    const at = [prefill - 1, prefill + 2, ...Array.from({ length: ids.length - prefill - 4 }, (_, i) => prefill + 3 + i)];
    expect(maxAbsDiff(got, at.map((i) => rescored[i]!))).toBeLessThan(1e-5);
    expect(maxAbsDiff(got, at.map((i) => expected.decode.logprobs[i]!))).toBeLessThan(1e-4);
    engine.destroy();
  });
});
