// The kernels of Qwen3.5's Gated DeltaNet layers and gated attention, each against a float64
// implementation written here (transformers' modeling_qwen3_5.py is the definition), forward and
// backward; backward against float64 central differences of the forward. Tiny packed batches of two
// sequences, so that nothing leaks across a sequence boundary.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { f32, groups1d } from '../../src/engine/recorder.ts';
import { KernelHarness, numericGrad, wave } from './kernel-harness.ts';
import { maxAbsDiff, onAdapter } from './helpers.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const silu = (x: number) => x * sigmoid(x);

/** Packed layout of sequences with these lengths: per-token sequence index and [first, end) bounds. */
function pack(lengths: number[]): { T: number; tokSeq: number[]; bounds: number[]; firsts: number[] } {
  const tokSeq: number[] = [];
  const bounds: number[] = [];
  const firsts: number[] = [];
  let at = 0;
  lengths.forEach((n, s) => {
    firsts.push(at);
    for (let i = 0; i < n; i++) {
      tokSeq.push(s);
      bounds.push(at, at + n);
    }
    at += n;
  });
  return { T: at, tokSeq, bounds, firsts };
}

// ---- causal depthwise conv1d + SiLU -------------------------------------------------------------

/** transformers' causal_conv1d_fn + SiLU over each sequence (rows of x), zero left padding. */
function refConv(x: Float64Array, w: Float64Array, lengths: number[], C: number, K: number): Float64Array {
  const out = new Float64Array(x.length);
  let first = 0;
  for (const n of lengths) {
    for (let t = first; t < first + n; t++) {
      for (let c = 0; c < C; c++) {
        let acc = 0;
        for (let k = 0; k < K; k++) {
          const src = t - (K - 1 - k);
          if (src >= first) acc += w[c * K + k]! * x[src * C + c]!;
        }
        out[t * C + c] = silu(acc);
      }
    }
    first += n;
  }
  return out;
}

describe(onAdapter('linear-attention kernels'), () => {
  let gpu: Gpu;
  let h: KernelHarness;
  beforeAll(async () => {
    gpu = await getGpu();
    h = new KernelHarness(gpu);
  });
  afterAll(() => gpu?.device.destroy());

  const C = 6;
  const K = 4;

  it('conv1d_silu: scoring equals float64; prefill then two one-token decode calls with the conv state equal the full sequences', async () => {
    const lengths = [6, 4];
    const { T, tokSeq, firsts } = pack(lengths);
    const x = wave(T * C, 1);
    const w = wave(C * K, 2, 0.8);
    const want = refConv(x, w, lengths, C, K);
    const wBuf = h.buffer(w);
    // Scoring: every sequence starts fresh, no state.
    const seqsAll = h.buffer([firsts[0]!, 6, 0, 0, firsts[1]!, 4, 0, 0], 'u32');
    const out = h.buffer(T * C * 4);
    const [scored] = await h.run((rec) => {
      rec.dispatch(h.pipeline('conv1d_silu.wgsl', { KSIZE: K, PASS: 0, WITH_STATE: false }), [h.buffer(x), wBuf, h.buffer(tokSeq, 'u32'), seqsAll, h.buffer(16), out], [T, C, 2, 0], groups1d(T * C));
    }, [[out, T * C]]);
    expect(maxAbsDiff(scored!, want)).toBeLessThan(1e-6);

    // Stateful: rows [0,4) of sequence 0 and [0,2) of sequence 1, then one row each, twice. Sequence 0
    // keeps its state in slot 1, sequence 1 in slot 0.
    const state = h.buffer(2 * C * (K - 1) * 4);
    const calls = [[4, 2], [1, 1], [1, 1]];
    const done = [0, 0];
    for (const rows of calls) {
      const callTok: number[] = [];
      const xs: number[] = [];
      const wantRows: number[] = [];
      rows.forEach((n, s) => {
        for (let i = 0; i < n; i++) {
          callTok.push(s);
          const t = firsts[s]! + done[s]! + i;
          xs.push(...x.subarray(t * C, (t + 1) * C));
          wantRows.push(...want.subarray(t * C, (t + 1) * C));
        }
      });
      const seqs = h.buffer([0, rows[0]!, 1, 0, rows[0]!, rows[1]!, 0, 0], 'u32');
      const Tc = rows[0]! + rows[1]!;
      const xBuf = h.buffer(xs);
      const tokBuf = h.buffer(callTok, 'u32');
      const o = h.buffer(Tc * C * 4);
      const [got] = await h.run((rec) => {
        const storage = [xBuf, wBuf, tokBuf, seqs, state, o];
        rec.dispatch(h.pipeline('conv1d_silu.wgsl', { KSIZE: K, PASS: 0, WITH_STATE: true }), storage, [Tc, C, 2, 0], groups1d(Tc * C));
        rec.dispatch(h.pipeline('conv1d_silu.wgsl', { KSIZE: K, PASS: 1, WITH_STATE: true }), storage, [Tc, C, 2, 0], groups1d(2 * C));
      }, [[o, Tc * C]]);
      expect(maxAbsDiff(got!, wantRows), `call ${JSON.stringify(rows)}`).toBeLessThan(1e-6);
      done[0]! += rows[0]!;
      done[1]! += rows[1]!;
    }
  });

  it('conv1d_silu_backward: dx and dw (accumulated) equal float64 central differences', async () => {
    const lengths = [5, 3];
    const { T, bounds } = pack(lengths);
    const x = wave(T * C, 3);
    const w = wave(C * K, 4, 0.8);
    const dy = wave(T * C, 5);
    const wantDx = numericGrad((v) => refConv(v, w, lengths, C, K), x, dy);
    const wantDw = numericGrad((v) => refConv(x, v, lengths, C, K), w, dy);
    const dx = h.buffer(T * C * 4);
    const dw = h.buffer(new Float64Array(C * K).fill(1));
    const [gotDx, gotDw] = await h.run((rec) => {
      const storage = [h.buffer(x), h.buffer(w), h.buffer(bounds, 'u32'), h.buffer(dy), h.buffer(T * C * 4), dx, dw];
      for (const PASS of [0, 1]) rec.dispatch(h.pipeline('conv1d_silu_backward.wgsl', { KSIZE: K, PASS }), storage, [T, C, 0, 0], groups1d(T * C));
      rec.dispatch(h.pipeline('conv1d_silu_backward.wgsl', { KSIZE: K, PASS: 2 }), storage, [T, C, 0, 0], groups1d(C * K));
    }, [[dx, T * C], [dw, C * K]]);
    expect(maxAbsDiff(gotDx!, wantDx)).toBeLessThan(1e-5);
    expect(maxAbsDiff(gotDw!.map((v) => v - 1), wantDw)).toBeLessThan(1e-5);
  });
});
