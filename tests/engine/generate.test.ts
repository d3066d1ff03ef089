import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { refGreedy, refLogits } from '../../src/engine/reference/qwen3.ts';
import type { WebGpuEngine } from '../../src/engine/engine.ts';
import type { RefWeights } from '../../src/engine/reference/weights.ts';
import { maxAbsDiff, someIds, tinyConfig, tinyEngine, onAdapter } from './helpers.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const greedy = { temperature: 0, topP: 1, topK: 0, seed: 0 };

describe(onAdapter('engine generation (KV cache, batched decode, GPU sampling)'), () => {
  const cfg = tinyConfig({ numLayers: 2, vocabSize: 80 });
  let gpu: Gpu;
  let engine: WebGpuEngine;
  let weights: RefWeights;
  beforeAll(async () => {
    gpu = await getGpu();
    ({ engine, weights } = await tinyEngine(gpu, cfg, 7));
  });
  afterAll(() => {
    engine?.destroy();
    gpu?.device.destroy();
  });

  it('greedy batched decode of prompts with different lengths equals the reference re-forward', async () => {
    const prompts = [someIds(7, cfg.vocabSize, 1), someIds(3, cfg.vocabSize, 2), someIds(12, cfg.vocabSize, 3)];
    const seqs = prompts.map(() => engine.newSequence());
    const out = await engine.generate({
      items: prompts.map((p, i) => ({ seq: seqs[i]!, append: p, maxNewTokens: [6, 9, 4][i]! })),
      sampling: greedy,
      stopIds: [],
    });
    prompts.forEach((p, i) => {
      expect(out[i]!.tokens).toEqual(refGreedy(cfg, weights, p, [6, 9, 4][i]!));
      expect(out[i]!.finishReason).toBe('length');
      expect(seqs[i]!.length).toBe(p.length + out[i]!.tokens.length);
    });
    seqs.forEach((s) => engine.releaseSequence(s));
  });

  it('cached sampling logprobs equal scoring the final sequence at the same temperature', async () => {
    const prompts = [someIds(5, cfg.vocabSize, 4), someIds(8, cfg.vocabSize, 5)];
    const seqs = prompts.map(() => engine.newSequence());
    const sampling = { temperature: 0.8, topP: 1, topK: 0, seed: 1234 };
    const out = await engine.generate({ items: prompts.map((p, i) => ({ seq: seqs[i]!, append: p, maxNewTokens: 7 })), sampling, stopIds: [] });
    const scored = await engine.score({
      sequences: prompts.map((p, i) => ({ ids: [...p, ...out[i]!.tokens], scoreFrom: p.length })),
      temperature: 0.8,
    });
    prompts.forEach((_, i) => expect(maxAbsDiff(out[i]!.logprobs, scored.logprobs[i]!)).toBeLessThan(1e-4));
    seqs.forEach((s) => engine.releaseSequence(s));
  });

  it('is reproducible: the same seed gives the same tokens, another seed different ones', async () => {
    const prompt = someIds(4, cfg.vocabSize, 6);
    const run = async (seed: number) => {
      const seqs = [engine.newSequence(), engine.newSequence()];
      const out = await engine.generate({
        items: seqs.map((seq) => ({ seq, append: prompt, maxNewTokens: 12 })),
        sampling: { temperature: 1.5, topP: 1, topK: 0, seed },
        stopIds: [],
      });
      seqs.forEach((s) => engine.releaseSequence(s));
      return out.map((o) => o.tokens);
    };
    const a = await run(42);
    const b = await run(42);
    const c = await run(43);
    expect(a).toEqual(b);
    expect(c).not.toEqual(a);
    // two items of one request with the same prompt draw from different streams
    expect(a[0]).not.toEqual(a[1]);
  });

  it('top-k = 1 at any temperature is argmax', async () => {
    const prompt = someIds(6, cfg.vocabSize, 8);
    const seq = engine.newSequence();
    const out = await engine.generate({ items: [{ seq, append: prompt, maxNewTokens: 5 }], sampling: { temperature: 2, topP: 1, topK: 1, seed: 9 }, stopIds: [] });
    expect(out[0]!.tokens).toEqual(refGreedy(cfg, weights, prompt, 5));
    for (const lp of out[0]!.logprobs) expect(Math.abs(lp)).toBeLessThan(1e-6); // a single kept token has probability 1
    engine.releaseSequence(seq);
  });

  it('stops on a stop id, then continues after appended tokens without re-prefill', async () => {
    const prompt = someIds(5, cfg.vocabSize, 10);
    const expected = refGreedy(cfg, weights, prompt, 4);
    const seq = engine.newSequence();
    const first = await engine.generate({ items: [{ seq, append: prompt, maxNewTokens: 10 }], sampling: greedy, stopIds: [expected[2]!] });
    // stops at the first occurrence of the stop id (which is included)
    const stopAt = expected.indexOf(expected[2]!);
    expect(first[0]!.tokens).toEqual(expected.slice(0, stopAt + 1));
    expect(first[0]!.finishReason).toBe('stop');
    const tool = someIds(4, cfg.vocabSize, 11);
    const before = engine.stats.prefillTokens;
    const second = await engine.generate({ items: [{ seq, append: tool, maxNewTokens: 6 }], sampling: greedy, stopIds: [] });
    // only the pending stop token and the tool tokens (but the last) were prefilled
    expect(engine.stats.prefillTokens - before).toBe(1 + tool.length - 1);
    const full = [...prompt, ...first[0]!.tokens, ...tool];
    expect(second[0]!.tokens).toEqual(refGreedy(cfg, weights, full, 6));
    expect(seq.length).toBe(full.length + 6);
    engine.releaseSequence(seq);
  });

  it('a sequence that outgrows its KV region moves (or the cache grows) without losing its prefix', async () => {
    const a = engine.newSequence();
    const b = engine.newSequence();
    const pa = someIds(3, cfg.vocabSize, 20);
    const pb = someIds(4, cfg.vocabSize, 21);
    // a's region is reserved for 3 + 2 tokens; b's region lands right after it
    const first = await engine.generate({ items: [{ seq: a, append: pa, maxNewTokens: 2 }, { seq: b, append: pb, maxNewTokens: 2 }], sampling: greedy, stopIds: [] });
    const more = someIds(40, cfg.vocabSize, 22);
    const second = await engine.generate({ items: [{ seq: a, append: more, maxNewTokens: 3 }], sampling: greedy, stopIds: [] });
    expect(second[0]!.tokens).toEqual(refGreedy(cfg, weights, [...pa, ...first[0]!.tokens, ...more], 3));
    const third = await engine.generate({ items: [{ seq: b, append: [1], maxNewTokens: 3 }], sampling: greedy, stopIds: [] });
    expect(third[0]!.tokens).toEqual(refGreedy(cfg, weights, [...pb, ...first[1]!.tokens, 1], 3));
    engine.releaseSequence(a);
    engine.releaseSequence(b);
  });

  it('per-item streams: a sequence samples the same tokens in one call as token by token in changing batches', async () => {
    // Continuous batching decodes a sequence one step at a time next to whichever sequences are ready.
    const prompts = [someIds(5, cfg.vocabSize, 40), someIds(9, cfg.vocabSize, 41), someIds(3, cfg.vocabSize, 42)];
    const streams = [11, 7, 3];
    const sampling = { temperature: 1.3, topP: 1, topK: 0, seed: 99 };
    const whole = prompts.map(() => engine.newSequence());
    const once = await engine.generate({ items: prompts.map((p, i) => ({ seq: whole[i]!, append: p, maxNewTokens: 6, stream: streams[i] })), sampling, stopIds: [] });
    const split = prompts.map(() => engine.newSequence());
    const got: number[][] = prompts.map(() => []);
    const logps: number[][] = prompts.map(() => []);
    // Step k decodes a different subset in a different order; each sequence gets 6 single-token calls.
    const schedule = [[2], [0, 2], [1, 0], [2, 1, 0], [0], [1, 2], [0, 1], [2, 0], [1], [1], [2], [0]];
    for (const subset of schedule) {
      const items = subset.filter((i) => got[i]!.length < 6);
      const out = await engine.generate({
        items: items.map((i) => ({ seq: split[i]!, append: got[i]!.length === 0 ? prompts[i]! : [], maxNewTokens: 1, stream: streams[i] })),
        sampling,
        stopIds: [],
      });
      items.forEach((i, j) => {
        got[i]!.push(...out[j]!.tokens);
        logps[i]!.push(...out[j]!.logprobs);
      });
    }
    prompts.forEach((_, i) => {
      expect(got[i]).toEqual(once[i]!.tokens);
      expect(maxAbsDiff(logps[i]!, once[i]!.logprobs)).toBeLessThan(1e-5);
    });
    // Different streams for the same prompt give different samples (the stream is really used).
    const twins = [engine.newSequence(), engine.newSequence()];
    const tw = await engine.generate({ items: twins.map((seq, i) => ({ seq, append: prompts[0]!, maxNewTokens: 8, stream: 100 + i })), sampling, stopIds: [] });
    expect(tw[0]!.tokens).not.toEqual(tw[1]!.tokens);
    [...whole, ...split, ...twins].forEach((s) => engine.releaseSequence(s));
  });

  it('overlapping generate and score calls run one at a time and stay correct', async () => {
    const prompt = someIds(6, cfg.vocabSize, 30);
    const seq = engine.newSequence();
    const ids = someIds(9, cfg.vocabSize, 31);
    const [gen, scored] = await Promise.all([
      engine.generate({ items: [{ seq, append: prompt, maxNewTokens: 4 }], sampling: greedy, stopIds: [] }),
      engine.score({ sequences: [{ ids, scoreFrom: 1 }], temperature: 1 }),
    ]);
    expect(gen[0]!.tokens).toEqual(refGreedy(cfg, weights, prompt, 4));
    const alone = await engine.score({ sequences: [{ ids, scoreFrom: 1 }], temperature: 1 });
    expect(Array.from(scored.logprobs[0]!)).toEqual(Array.from(alone.logprobs[0]!));
    engine.releaseSequence(seq);
  });

  it('samples with the right frequencies, and top-k / top-p keep the right sets', async () => {
    const prompt = someIds(3, cfg.vocabSize, 12);
    const logits = refLogits(cfg, weights, prompt).at(-1)!;
    const temperature = 0.5;
    const z = Array.from(logits, (v) => v / temperature);
    const m = Math.max(...z);
    const Z = z.reduce((a, v) => a + Math.exp(v - m), 0);
    const probs = z.map((v) => Math.exp(v - m) / Z);
    const order = probs.map((p, i) => [p, i] as const).sort((a, b) => b[0] - a[0]);
    const N = 400;
    const draw = async (topK: number, topP: number, seed: number) => {
      const seqs = Array.from({ length: N }, () => engine.newSequence());
      const out = await engine.generate({
        items: seqs.map((seq) => ({ seq, append: prompt, maxNewTokens: 1 })),
        sampling: { temperature, topP, topK, seed },
        stopIds: [],
      });
      seqs.forEach((s) => engine.releaseSequence(s));
      return out.map((o) => ({ id: o.tokens[0]!, logprob: o.logprobs[0]! }));
    };
    const plain = await draw(0, 1, 5);
    const counts = new Map<number, number>();
    for (const { id, logprob } of plain) {
      counts.set(id, (counts.get(id) ?? 0) + 1);
      expect(Math.abs(logprob - Math.log(probs[id]!))).toBeLessThan(1e-4);
    }
    // the most likely token's frequency is within 4 standard deviations of its probability
    const [p0, i0] = order[0]!;
    expect(Math.abs((counts.get(i0) ?? 0) / N - p0)).toBeLessThan(4 * Math.sqrt((p0 * (1 - p0)) / N));

    const top3 = new Set(order.slice(0, 3).map(([, i]) => i));
    const k3 = await draw(3, 1, 6);
    const mass3 = order.slice(0, 3).reduce((a, [p]) => a + p, 0);
    for (const { id, logprob } of k3) {
      expect(top3.has(id)).toBe(true);
      expect(Math.abs(logprob - Math.log(probs[id]! / mass3))).toBeLessThan(1e-4);
    }
    // nucleus: the smallest prefix (by probability) whose mass reaches top_p
    const topP = (order[0]![0] + order[1]![0] / 2);
    const nucleus = new Set(order.slice(0, 2).map(([, i]) => i));
    const np = await draw(0, topP, 7);
    for (const { id } of np) expect(nucleus.has(id)).toBe(true);
    expect(new Set(np.map((d) => d.id)).size).toBe(2);
  });
});
