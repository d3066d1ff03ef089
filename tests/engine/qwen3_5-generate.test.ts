// Qwen3.5 generation with the per-sequence Gated DeltaNet state (linear-state.ts) on the checkpoint
// transformers wrote (tests/fixtures/transformers-qwen3_5-f32): greedy tokens equal argmax of full
// re-forwards (the float64 reference), sampled log-probs equal a full re-score, for one sequence and
// for a batch whose sequences join and leave a decode session. A recurrent state cannot be truncated,
// so what the tests lean on hardest is every place a state must be copied: chains that overshoot a
// stop (the session restores the state it snapshotted), turns appended after such a stop, and the
// pool growing (slots copied) while sequences hold state.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { refGreedy } from '../../src/engine/reference/qwen3.ts';
import { refWeightsFromCheckpoint, type RefWeights } from '../../src/engine/reference/weights.ts';
import type { ModelConfig } from '../../src/model/types.ts';
import type { SequenceHandle } from '../../src/engine/types.ts';
import { planMemory } from '../../src/engine/memory-plan.ts';
import { maxAbsDiff, onAdapter, someIds } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const DIR = new URL('../fixtures/transformers-qwen3_5-f32/', import.meta.url).pathname;
const greedy = { temperature: 0, topP: 1, topK: 0, seed: 0 };

describe(onAdapter('Qwen3.5 generation (conv + recurrent state slots, KV cache for the attention layer)'), () => {
  let gpu: Gpu;
  let engine: WebGpuEngine;
  let cfg: ModelConfig;
  let w: RefWeights;
  beforeAll(async () => {
    gpu = await getGpu();
    const ckpt = await openCheckpoint(DIR);
    cfg = ckpt.config;
    w = await refWeightsFromCheckpoint(ckpt);
    engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32' });
  });
  afterAll(() => {
    engine?.destroy();
    gpu?.device.destroy();
  });

  const prompt = (n: number, salt: number): number[] => someIds(n, cfg.vocabSize, salt);
  /** Log-probs (temperature 1, as greedy sampling reports them) of `gen` after `ctx`, from a full re-score. */
  const rescore = async (ctx: number[], gen: number[]): Promise<ArrayLike<number>> =>
    (await engine.score({ sequences: [{ ids: [...ctx, ...gen], scoreFrom: ctx.length }], temperature: 1 })).logprobs[0]!;

  it('G=1: engine.generate gives argmax-of-re-forward tokens and re-score log-probs, also after a chain overshot a stop and a turn was appended', async () => {
    const p = prompt(9, 1);
    const seq = engine.newSequence();
    const out = await engine.generate({ items: [{ seq, append: p, maxNewTokens: 10 }], sampling: greedy, stopIds: [] });
    const want = refGreedy(cfg, w, p, 10);
    expect(out[0]!.tokens).toEqual(want);
    expect(maxAbsDiff(out[0]!.logprobs, await rescore(p, want))).toBeLessThan(1e-4);
    engine.releaseSequence(seq);

    // The same prompt stopping at its 2nd token: the 4-step chain feeds 2 tokens past the stop into
    // the recurrent state. A tool turn appended after the stop must continue from the state at the
    // stop, as a full re-forward of the whole conversation does.
    const stop = want[1]!;
    expect(want[0]).not.toBe(stop);
    const s2 = engine.newSequence();
    const first = await engine.generate({ items: [{ seq: s2, append: p, maxNewTokens: 10 }], sampling: greedy, stopIds: [stop] });
    expect(first[0]!.tokens).toEqual(want.slice(0, 2));
    expect(first[0]!.finishReason).toBe('stop');
    const tool = prompt(3, 2);
    const second = await engine.generate({ items: [{ seq: s2, append: tool, maxNewTokens: 6 }], sampling: greedy, stopIds: [] });
    const ctx = [...p, ...want.slice(0, 2), ...tool];
    const want2 = refGreedy(cfg, w, ctx, 6);
    expect(second[0]!.tokens).toEqual(want2);
    expect(maxAbsDiff(second[0]!.logprobs, await rescore(ctx, want2))).toBeLessThan(1e-4);
    engine.releaseSequence(s2);
  });

  it('G=4 in one decode session: sequences join and leave between steps, chains overshoot one row\'s stop, a left sequence rejoins with a turn', async () => {
    const prompts = [prompt(7, 3), prompt(4, 4), prompt(11, 5), prompt(5, 6)];
    const refs = prompts.map((p) => refGreedy(cfg, w, p, 9));
    // Row 1 stops at its 3rd token, inside a chain of the others.
    const stop = refs[1]![2]!;
    for (const r of refs) expect(r.slice(0, r === refs[1] ? 2 : 9)).not.toContain(stop);
    const seqs = prompts.map(() => engine.newSequence());
    const got: { token: number; logprob: number }[][] = prompts.map(() => []);
    const session = engine.openDecode({ sampling: greedy, stopIds: [stop], maxRows: 4 });
    const step = async (rows: number[], steps: number, append: (i: number) => number[] = (i) => (got[i]!.length === 0 ? prompts[i]! : [])) => {
      const sampled = await session.step(rows.map((i) => ({ seq: seqs[i]!, append: append(i), maxNewTokens: 9 - got[i]!.length, stream: i })), steps);
      rows.forEach((i, r) => got[i]!.push(...sampled[r]!));
    };
    await step([0, 1], 1); // 0 and 1 join
    await step([0, 1, 2], 1); // 2 joins
    await step([0, 1, 2], 4); // a chain: 1 stops at its 3rd token, 2 tokens into the chain
    expect(got[1]!.map((t) => t.token)).toEqual(refs[1]!.slice(0, 3));
    await step([0, 2, 3], 1); // 1 left; 3 joins
    await step([0, 2, 3], 2); // 0 is done after this chain
    // 1 rejoins with a tool turn appended after its stop (its state must be the one at the stop).
    const tool = prompt(4, 7);
    const ctx1 = [...prompts[1]!, ...refs[1]!.slice(0, 3), ...tool];
    const before1 = got[1]!.length;
    await step([2, 3, 1], 1, (i) => (i === 1 ? tool : []));
    await step([3, 1], 2);
    await session.close();
    for (const i of [0, 2, 3]) {
      const tokens = got[i]!.map((t) => t.token);
      expect(tokens, `row ${i}`).toEqual(refs[i]!.slice(0, tokens.length));
      expect(maxAbsDiff(got[i]!.map((t) => t.logprob), await rescore(prompts[i]!, tokens))).toBeLessThan(1e-4);
    }
    expect(got[0]).toHaveLength(9);
    const after1 = got[1]!.slice(before1);
    expect(after1.length).toBeGreaterThan(0);
    expect(after1.map((t) => t.token)).toEqual(refGreedy(cfg, w, ctx1, 3).slice(0, after1.length));
    expect(maxAbsDiff(after1.map((t) => t.logprob), await rescore(ctx1, after1.map((t) => t.token)))).toBeLessThan(1e-4);
    seqs.forEach((s) => engine.releaseSequence(s));
  });

  it('the state pool grows (slots copied) while a sequence holds state; released slots come back zeroed', async () => {
    const first = prompt(6, 8);
    const keep = engine.newSequence();
    const a = await engine.generate({ items: [{ seq: keep, append: first, maxNewTokens: 2 }], sampling: greedy, stopIds: [] });
    // Enough sequences at once to outgrow the pool's slots; `keep` continues with a turn meanwhile.
    const tool = prompt(2, 9);
    const ctx = [...first, ...a[0]!.tokens, ...tool];
    const fresh = Array.from({ length: 8 }, (_, i) => prompt(3 + i, 10 + i));
    const seqs: SequenceHandle[] = fresh.map(() => engine.newSequence());
    const out = await engine.generate({
      items: [{ seq: keep, append: tool, maxNewTokens: 3 }, ...fresh.map((p, i) => ({ seq: seqs[i]!, append: p, maxNewTokens: 3 }))],
      sampling: greedy,
      stopIds: [],
    });
    expect(out[0]!.tokens).toEqual(refGreedy(cfg, w, ctx, 3));
    fresh.forEach((p, i) => expect(out[i + 1]!.tokens, `sequence ${i}`).toEqual(refGreedy(cfg, w, p, 3)));
    [keep, ...seqs].forEach((s) => engine.releaseSequence(s));
    // A new sequence reuses a released slot: it starts from S₀ = 0, not from what the slot held.
    const again = engine.newSequence();
    const p = prompt(5, 20);
    const b = await engine.generate({ items: [{ seq: again, append: p, maxNewTokens: 3 }], sampling: greedy, stopIds: [] });
    expect(b[0]!.tokens).toEqual(refGreedy(cfg, w, p, 3));
    engine.releaseSequence(again);
  });

  it('a decode session allocates its rows\' states and snapshots when it opens, exactly what the memory plan counts; its steps allocate none', async () => {
    const fresh = await loadEngine(await openCheckpoint(DIR), { gpu, weightDtype: 'f32' });
    const device = gpu.device;
    const own = device.createBuffer;
    const made: { label: string; size: number }[] = [];
    device.createBuffer = (d: GPUBufferDescriptor) => {
      made.push({ label: d.label ?? '', size: d.size });
      return own.call(device, d);
    };
    const stateBytes = (): number => made.filter((b) => /^(conv|recurrent) state/.test(b.label)).reduce((n, b) => n + b.size, 0);
    try {
      const rows = 3;
      const session = fresh.openDecode({ sampling: greedy, stopIds: [], maxRows: rows });
      const atOpen = stateBytes();
      const plan = planMemory({ config: cfg, weightDtype: 'f32', mode: { kind: 'full' }, numSequences: rows, maxTokensPerSequence: 32, limits: gpu.limits });
      const planned = plan.items.filter((i) => i.name.startsWith('linear-attention state')).reduce((n, i) => n + i.bytes, 0);
      expect(atOpen).toBe(planned);
      const seqs = [0, 1, 2].map(() => fresh.newSequence());
      const item = (i: number, append: number[], maxNewTokens: number) => ({ seq: seqs[i]!, append, maxNewTokens, stream: i });
      await session.step([item(0, prompt(5, 30), 8)]);
      await session.step([item(0, [], 7), item(1, prompt(6, 31), 8)]);
      await session.step([item(0, [], 6), item(1, [], 7), item(2, prompt(4, 32), 8)], 3); // a chain of 3 rows: snapshots taken
      await session.close();
      expect(stateBytes()).toBe(atOpen);
    } finally {
      device.createBuffer = own;
      fresh.destroy();
    }
  });
});
