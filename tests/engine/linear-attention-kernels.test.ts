// The kernels of Qwen3.5's Gated DeltaNet layers and gated attention, each against a float64
// implementation written here (transformers' modeling_qwen3_5.py is the definition), forward and
// backward; backward against float64 central differences of the forward. Tiny packed batches of two
// sequences, so that nothing leaks across a sequence boundary.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { f32, groups1d } from '../../src/engine/recorder.ts';
import { KernelHarness, numericGrad, wave } from './kernel-harness.ts';
import { deltaBackwardThreads, deltaBackwardWork, sequenceTable } from '../../src/engine/linear-attention-plan.ts';
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


// ---- l2norm, gates, gated delta rule ------------------------------------------------------------

/** transformers' l2norm of rows (t, h) read at offset + t·stride + h·n. */
function refL2(x: Float64Array, T: number, heads: number, n: number, offset: number, stride: number, eps: number): Float64Array {
  const y = new Float64Array(T * heads * n);
  for (let t = 0; t < T; t++) {
    for (let hh = 0; hh < heads; hh++) {
      const base = offset + t * stride + hh * n;
      let ss = 0;
      for (let i = 0; i < n; i++) ss += x[base + i]! ** 2;
      const r = 1 / Math.sqrt(ss + eps);
      for (let i = 0; i < n; i++) y[(t * heads + hh) * n + i] = x[base + i]! * r;
    }
  }
  return y;
}

const softplus = (x: number) => (x > 20 ? x : Math.log1p(Math.exp(x)));

/** g = −exp(A_log)·softplus(a + dt_bias), β = σ(b), interleaved (T, Hv, 2). */
function refGates(a: Float64Array, b: Float64Array, aLog: Float64Array, dt: Float64Array): Float64Array {
  const hv = aLog.length;
  const out = new Float64Array(a.length * 2);
  for (let i = 0; i < a.length; i++) {
    out[2 * i] = -Math.exp(aLog[i % hv]!) * softplus(a[i]! + dt[i % hv]!);
    out[2 * i + 1] = sigmoid(b[i]!);
  }
  return out;
}

interface DeltaDims { hk: number; hv: number; dk: number; dv: number }

/**
 * transformers' torch_recurrent_gated_delta_rule per sequence (q scaled by dk^-½ inside, value head h
 * reading key head h/(Hv/Hk)); qk (T, 2·Hk, dk), v (T, Hv, dv), gb (T, Hv, 2). `states` (per
 * sequence, Hv·dk·dv) are the initial states, updated in place.
 */
function refDelta(qk: Float64Array, v: Float64Array, gb: Float64Array, lengths: number[], d: DeltaDims, states?: Float64Array[]): Float64Array {
  const { hk, hv, dk, dv } = d;
  const scale = 1 / Math.sqrt(dk);
  const out = new Float64Array(v.length);
  let first = 0;
  lengths.forEach((n, si) => {
    for (let h = 0; h < hv; h++) {
      const S = states ? states[si]!.subarray(h * dk * dv, (h + 1) * dk * dv) : new Float64Array(dk * dv);
      const kh = Math.floor(h / (hv / hk));
      for (let t = first; t < first + n; t++) {
        const q = qk.subarray((t * 2 * hk + kh) * dk, (t * 2 * hk + kh + 1) * dk);
        const k = qk.subarray((t * 2 * hk + hk + kh) * dk, (t * 2 * hk + hk + kh + 1) * dk);
        const alpha = Math.exp(gb[(t * hv + h) * 2]!);
        const beta = gb[(t * hv + h) * 2 + 1]!;
        for (let j = 0; j < dv; j++) {
          let kv = 0;
          for (let i = 0; i < dk; i++) {
            S[i * dv + j] *= alpha;
            kv += S[i * dv + j]! * k[i]!;
          }
          const delta = beta * (v[(t * hv + h) * dv + j]! - kv);
          let o = 0;
          for (let i = 0; i < dk; i++) {
            S[i * dv + j] += k[i]! * delta;
            o += S[i * dv + j]! * q[i]! * scale;
          }
          out[(t * hv + h) * dv + j] = o;
        }
      }
    }
    first += n;
  });
  return out;
}

// ---- norms, the attention gate, partial rotary ----------------------------------------------------

/** x · rstd per row of n, rstd = 1/sqrt(mean(x²) + eps). */
function refRms(x: Float64Array, n: number, eps: number): Float64Array {
  const y = new Float64Array(x.length);
  for (let r = 0; r < x.length / n; r++) {
    let ss = 0;
    for (let i = 0; i < n; i++) ss += x[r * n + i]! ** 2;
    const s = 1 / Math.sqrt(ss / n + eps);
    for (let i = 0; i < n; i++) y[r * n + i] = x[r * n + i]! * s;
  }
  return y;
}

/** Qwen3_5RMSNormGated: w ⊙ rmsnorm(x) ⊙ silu(z), rows of n. */
function refGatedNorm(x: Float64Array, z: Float64Array, w: Float64Array, eps: number): Float64Array {
  return refRms(x, w.length, eps).map((v, i) => w[i % w.length]! * v * silu(z[i]!));
}

/** Qwen3_5RMSNorm: (1 + w) ⊙ rmsnorm(x). */
function refNorm1p(x: Float64Array, w: Float64Array, eps: number): Float64Array {
  return refRms(x, w.length, eps).map((v, i) => (1 + w[i % w.length]!) * v);
}

/** rotate-half RoPE on the first 2·half dims of each head of d; table (T, half, 2). */
function refRope(x: Float64Array, table: Float64Array, T: number, heads: number, d: number, half: number): Float64Array {
  const y = Float64Array.from(x);
  for (let t = 0; t < T; t++) {
    for (let hh = 0; hh < heads; hh++) {
      const base = (t * heads + hh) * d;
      for (let j = 0; j < half; j++) {
        const c = table[(t * half + j) * 2]!, sn = table[(t * half + j) * 2 + 1]!;
        y[base + j] = x[base + j]! * c - x[base + j + half]! * sn;
        y[base + j + half] = x[base + j + half]! * c + x[base + j]! * sn;
      }
    }
  }
  return y;
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
      rec.dispatch(h.pipeline('conv1d_silu.wgsl', { KSIZE: K, PASS: 0, WITH_STATE: false }), [h.buffer(x), wBuf, h.buffer(tokSeq.flatMap((s) => [0, 0, 0, s]), 'u32'), seqsAll, h.buffer(16), out], [T, C, 2, 0], groups1d(T * C));
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
      const tokBuf = h.buffer(callTok.flatMap((s) => [0, 0, 0, s]), 'u32');
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
  it('l2norm over a strided view equals float64; its backward (summing value-head groups) equals central differences', async () => {
    const T = 5, heads = 4, n = 8, stride = 40, offset = 3, group = 2, eps = 1e-6;
    const x = wave(T * stride + offset, 6);
    const dy = wave(T * heads * group * n, 7);
    const xBuf = h.buffer(x);
    const y = h.buffer(T * heads * n * 4);
    const inv = h.buffer(T * heads * 4);
    const dx = h.buffer(x.length * 4);
    const [gotY, gotDx] = await h.run((rec) => {
      rec.dispatch(h.pipeline('l2norm.wgsl'), [xBuf, y, inv], [T * heads, heads, n, offset, stride, f32(eps)], groups1d(T * heads));
      rec.dispatch(h.pipeline('l2norm_backward.wgsl'), [xBuf, inv, h.buffer(dy), dx], [T * heads, heads, n, offset, stride, group], groups1d(T * heads));
    }, [[y, T * heads * n], [dx, x.length]]);
    expect(maxAbsDiff(gotY!, refL2(x, T, heads, n, offset, stride, eps))).toBeLessThan(1e-6);
    // The group's rows of dy summed = dy of the key head.
    const dyKey = Float64Array.from({ length: T * heads * n }, (_, i) => {
      const row = Math.floor(i / n);
      let s = 0;
      for (let r = 0; r < group; r++) s += dy[(row * group + r) * n + (i % n)]!;
      return s;
    });
    const want = numericGrad((v) => refL2(v, T, heads, n, offset, stride, eps), x, dyKey);
    expect(maxAbsDiff(gotDx!, want)).toBeLessThan(1e-5);
  });

  it('delta_gates and its backward (dA_log, ddt_bias accumulated) equal float64', async () => {
    const T = 6, hv = 3;
    const a = wave(T * hv, 8, 3);
    a[4] = 25; // above softplus' threshold
    a[5] = -30; // where log(1 + eˣ) would round to 0
    const b = wave(T * hv, 9, 3);
    const aLog = wave(hv, 10), dt = wave(hv, 11);
    const dgb = wave(T * hv * 2, 12);
    const gbBuf = h.buffer(T * hv * 8);
    const da = h.buffer(T * hv * 4), db = h.buffer(T * hv * 4);
    const dAlog = h.buffer(new Float64Array(hv).fill(1)), ddt = h.buffer(new Float64Array(hv).fill(1));
    const aBuf = h.buffer(a), aLogBuf = h.buffer(aLog), dtBuf = h.buffer(dt);
    const [gotGb, gotDa, gotDb, gotDalog, gotDdt] = await h.run((rec) => {
      rec.dispatch(h.pipeline('delta_gates.wgsl'), [aBuf, h.buffer(b), aLogBuf, dtBuf, gbBuf], [T * hv, hv, 0, 0], groups1d(T * hv));
      const storage = [aBuf, aLogBuf, dtBuf, gbBuf, h.buffer(dgb), da, db, dAlog, ddt];
      rec.dispatch(h.pipeline('delta_gates_backward.wgsl', { PASS: 0 }), storage, [T * hv, hv, 0, 0], groups1d(T * hv));
      rec.dispatch(h.pipeline('delta_gates_backward.wgsl', { PASS: 1 }), storage, [T * hv, hv, 0, 0], groups1d(hv));
    }, [[gbBuf, T * hv * 2], [da, T * hv], [db, T * hv], [dAlog, hv], [ddt, hv]]);
    const want = refGates(a, b, aLog, dt);
    for (let i = 0; i < want.length; i++) expect(Math.abs(gotGb![i]! - want[i]!), `gb ${i}`).toBeLessThanOrEqual(2e-6 * Math.max(1, Math.abs(want[i]!)));
    expect(Math.abs(gotGb![10]! - want[10]!) / Math.abs(want[10]!)).toBeLessThan(1e-5); // g of a = −30: tiny, but with its digits
    expect(maxAbsDiff(gotDa!, numericGrad((v) => refGates(v, b, aLog, dt), a, dgb))).toBeLessThan(1e-5);
    expect(maxAbsDiff(gotDb!, numericGrad((v) => refGates(a, v, aLog, dt), b, dgb))).toBeLessThan(1e-5);
    expect(maxAbsDiff(gotDalog!.map((v) => v - 1), numericGrad((v) => refGates(a, b, v, dt), aLog, dgb))).toBeLessThan(1e-4);
    expect(maxAbsDiff(gotDdt!.map((v) => v - 1), numericGrad((v) => refGates(a, b, aLog, v), dt, dgb))).toBeLessThan(1e-4);
  });

  const dims: DeltaDims = { hk: 2, hv: 4, dk: 8, dv: 4 };
  /**
   * Delta-rule inputs for T tokens: q/k rows of unit norm (as after l2norm), g < 0, β in (0, 1).
   * `wide` spreads g over what −exp(A_log)·softplus(a + dt_bias) gives a trained model (about −8 to
   * −0.002: whole chunks of decay underflow next to almost no decay) and β over (0.02, 0.98).
   */
  function deltaInputs(T: number, salt: number, wide = false) {
    const { hk, hv, dk, dv } = dims;
    const qk = wave(T * 2 * hk * dk, salt);
    for (let r = 0; r < T * 2 * hk; r++) {
      const row = qk.subarray(r * dk, (r + 1) * dk);
      const norm = Math.hypot(...row);
      row.forEach((x, i) => (row[i] = x / norm));
    }
    const v = wave(T * hv * dv, salt + 1);
    const u = (i: number) => 0.5 + 0.5 * Math.sin(i * 1.3 + salt);
    const w = (i: number) => 0.5 + 0.5 * Math.cos(i * 0.7 + salt);
    const gb = Float64Array.from({ length: T * hv * 2 }, (_, i) => (wide
      ? (i % 2 === 0 ? -0.002 - 8 * u(i) ** 3 : 0.02 + 0.96 * w(i))
      : (i % 2 === 0 ? -0.05 - 0.6 * u(i) : 0.1 + 0.8 * w(i))));
    return { qk, v, gb };
  }

  it('gated_delta: scoring equals the float64 recurrence (GQA); prefill then one-token decodes with the saved state equal the full sequences', async () => {
    const { hk, hv, dk, dv } = dims;
    const lengths = [7, 4];
    const { T, firsts } = pack(lengths);
    const { qk, v, gb } = deltaInputs(T, 20);
    const want = refDelta(qk, v, gb, lengths, dims);
    const gbBuf = h.buffer(gb);
    const out = h.buffer(T * hv * dv * 4);
    const run = (rec: Parameters<Parameters<KernelHarness['run']>[0]>[0], q: GPUBuffer, vv: GPUBuffer, g: GPUBuffer, seqs: Uint32Array, state: GPUBuffer, o: GPUBuffer, withState: boolean) => {
      const n = seqs.length / 4;
      const rows = seqs.reduce((a, v, i) => (i % 4 === 1 ? a + v : a), 0);
      rec.dispatch(h.pipeline('gated_delta.wgsl', { DK: dk, WITH_STATE: withState }), [q, vv, g, h.buffer(seqs), state, o],
        [n, rows, hk, hv, dv, 0, hv * dv, f32(1 / Math.sqrt(dk))], groups1d(n * hv * dv));
    };
    const [scored] = await h.run((rec) => run(rec, h.buffer(qk), h.buffer(v), gbBuf, sequenceTable(firsts, lengths), h.buffer(16), out, false), [[out, T * hv * dv]]);
    expect(maxAbsDiff(scored!, want)).toBeLessThan(2e-6);

    // Stateful calls: sequence 0 in state slot 1, sequence 1 in slot 0.
    const state = h.buffer(2 * hv * dk * dv * 4);
    const done = [0, 0];
    for (const rows of [[5, 2], [1, 1], [1, 1]]) {
      const pick = (src: Float64Array, width: number) => rows.flatMap((n, s) => Array.from(src.subarray((firsts[s]! + done[s]!) * width, (firsts[s]! + done[s]! + n) * width)));
      const Tc = rows[0]! + rows[1]!;
      const o = h.buffer(Tc * hv * dv * 4);
      const [got] = await h.run((rec) => run(rec, h.buffer(pick(qk, 2 * hk * dk)), h.buffer(pick(v, hv * dv)), h.buffer(pick(gb, hv * 2)),
        sequenceTable([0, rows[0]!], rows, [1, 0]), state, o, true), [[o, Tc * hv * dv]]);
      expect(maxAbsDiff(got!, pick(want, hv * dv)), `call ${JSON.stringify(rows)}`).toBeLessThan(2e-6);
      done[0]! += rows[0]!;
      done[1]! += rows[1]!;
    }
  });

  it('gated_delta_chunked equals float64 and the recurrent kernel on ragged packs (chunks of 4: 1, 9, 4, 6 tokens; wide gates), scoring and prefill from saved states', async () => {
    const { hk, hv, dk, dv } = dims;
    const chunk = 4;
    const lengths = [1, 9, 4, 6];
    const { T, firsts } = pack(lengths);
    const { qk, v, gb } = deltaInputs(T, 50, true);
    type Rec = Parameters<Parameters<KernelHarness['run']>[0]>[0];
    const run = (rec: Rec, chunked: boolean, q: Float64Array, vv: Float64Array, g: Float64Array, seqs: Uint32Array, state: GPUBuffer, o: GPUBuffer, withState: boolean) => {
      const n = seqs.length / 4;
      const rows = seqs.reduce((a, x, i) => (i % 4 === 1 ? a + x : a), 0);
      const params = [n, rows, hk, hv, dv, 0, hv * dv, f32(1 / Math.sqrt(dk))];
      const io = [h.buffer(q), h.buffer(vv), h.buffer(g), h.buffer(seqs), state, o];
      if (chunked) rec.dispatch(h.pipeline('gated_delta_chunked.wgsl', { DK: dk, DV: dv, CHUNK: chunk, WITH_STATE: withState }), io, params, [n * hv, 1, 1]);
      else rec.dispatch(h.pipeline('gated_delta.wgsl', { DK: dk, WITH_STATE: withState }), io, params, groups1d(n * hv * dv));
    };
    // Scoring (zero states).
    const want = refDelta(qk, v, gb, lengths, dims);
    const outs = [h.buffer(T * hv * dv * 4), h.buffer(T * hv * dv * 4)];
    const [chunkedOut, recurrentOut] = await h.run((rec) => {
      run(rec, true, qk, v, gb, sequenceTable(firsts, lengths), h.buffer(16), outs[0]!, false);
      run(rec, false, qk, v, gb, sequenceTable(firsts, lengths), h.buffer(16), outs[1]!, false);
    }, [[outs[0]!, T * hv * dv], [outs[1]!, T * hv * dv]]);
    expect(maxAbsDiff(chunkedOut!, want)).toBeLessThan(2e-6);
    expect(maxAbsDiff(chunkedOut!, recurrentOut!)).toBeLessThan(2e-6);

    // Prefill from saved states (sequence s in slot 3 − s), in two calls; the second leaves out sequence 0.
    const init = lengths.map((_, s) => wave(hv * dk * dv, 60 + s, 0.5));
    const refStates = init.map((x) => Float64Array.from(x));
    const wantStateful = refDelta(qk, v, gb, lengths, dims, refStates);
    const slotsInit = new Float64Array(lengths.length * hv * dk * dv);
    init.forEach((x, s) => slotsInit.set(x, (lengths.length - 1 - s) * hv * dk * dv));
    const states = [h.buffer(slotsInit), h.buffer(slotsInit)];
    const done = [0, 0, 0, 0];
    for (const rows of [[1, 6, 3, 2], [0, 3, 1, 4]]) {
      const seqIdx = rows.flatMap((n, s) => (n > 0 ? [s] : []));
      const pick = (src: Float64Array, width: number) => seqIdx.flatMap((s) => Array.from(src.subarray((firsts[s]! + done[s]!) * width, (firsts[s]! + done[s]! + rows[s]!) * width)));
      const callRows = seqIdx.map((s) => rows[s]!);
      const starts = callRows.map((_, i) => callRows.slice(0, i).reduce((a, x) => a + x, 0));
      const table = sequenceTable(starts, callRows, seqIdx.map((s) => lengths.length - 1 - s));
      const Tc = callRows.reduce((a, x) => a + x, 0);
      const o = [h.buffer(Tc * hv * dv * 4), h.buffer(Tc * hv * dv * 4)];
      const [gotChunked, gotRecurrent] = await h.run((rec) => {
        run(rec, true, Float64Array.from(pick(qk, 2 * hk * dk)), Float64Array.from(pick(v, hv * dv)), Float64Array.from(pick(gb, hv * 2)), table, states[0]!, o[0]!, true);
        run(rec, false, Float64Array.from(pick(qk, 2 * hk * dk)), Float64Array.from(pick(v, hv * dv)), Float64Array.from(pick(gb, hv * 2)), table, states[1]!, o[1]!, true);
      }, [[o[0]!, Tc * hv * dv], [o[1]!, Tc * hv * dv]]);
      const wantCall = Float64Array.from(pick(wantStateful, hv * dv));
      expect(maxAbsDiff(gotChunked!, wantCall), `call ${JSON.stringify(rows)}`).toBeLessThan(5e-6);
      expect(maxAbsDiff(gotChunked!, gotRecurrent!), `call ${JSON.stringify(rows)}`).toBeLessThan(5e-6);
      rows.forEach((n, s) => (done[s]! += n));
    }
    const wantSlots = new Float64Array(slotsInit.length);
    refStates.forEach((x, s) => wantSlots.set(x, (lengths.length - 1 - s) * hv * dk * dv));
    const [finalChunked, finalRecurrent] = await h.run(() => {}, [[states[0]!, slotsInit.length], [states[1]!, slotsInit.length]]);
    expect(maxAbsDiff(finalChunked!, wantSlots)).toBeLessThan(5e-6);
    expect(maxAbsDiff(finalChunked!, finalRecurrent!)).toBeLessThan(5e-6);
  });

  it.each([
    { name: 'chunks of 2, sequences of 5 and 3', lengths: [5, 3], chunk: 2, wide: false },
    { name: 'chunks of 4, ragged sequences of 1, 9, 4, 6, gates over a trained model\'s range', lengths: [1, 9, 4, 6], chunk: 4, wide: true },
    { name: 'chunks of 16 (more tokens than invocations), sequences of 19 and 6', lengths: [19, 6], chunk: 16, wide: true },
    // 19 chunks: states saved every 4 chunks (segments replayed, the last one short), 8 states instead of 19.
    { name: 'chunks of 2, sequences of 37 and 11: segments of 4 chunks replayed', lengths: [37, 11], chunk: 2, wide: false, seg: 4 },
  ])('gated_delta_backward: dq, dk, dv, dg, dβ equal float64 central differences ($name)', async ({ lengths, chunk, wide, seg }) => {
    const { hk, hv, dk, dv } = dims;
    const { T, firsts } = pack(lengths);
    const { qk, v, gb } = deltaInputs(T, 30, wide);
    const dout = wave(T * hv * dv, 31);
    const work = deltaBackwardWork(lengths, hv, dk, dv, chunk);
    expect(work.seg).toBe(seg ?? 1);
    const threads = deltaBackwardThreads(dk, dv, gpu.limits.maxComputeInvocationsPerWorkgroup);
    expect(threads).toBe(8); // dk > dv: the row invocations outnumber the column ones
    // v lives in a wider strided buffer (the conv output), and dv is written into one like it.
    const vStride = hv * dv + 5, vOffset = 2;
    const vWide = new Float64Array(T * vStride + vOffset);
    for (let t = 0; t < T; t++) vWide.set(v.subarray(t * hv * dv, (t + 1) * hv * dv), vOffset + t * vStride);
    const dqk = h.buffer(T * 2 * hv * dk * 4);
    const dvWide = h.buffer(vWide.length * 4);
    const dgb = h.buffer(T * hv * 8);
    const [gotDqk, gotDv, gotDgb] = await h.run((rec) => {
      rec.dispatch(h.pipeline('gated_delta_backward.wgsl', { DK: dk, DV: dv, CHUNK: chunk, NT: threads }),
        [h.buffer(qk), h.buffer(vWide), h.buffer(gb), h.buffer(dout), h.buffer(sequenceTable(firsts, lengths, undefined, chunk)), h.buffer(work.floats * 4), dqk, dvWide, dgb],
        [lengths.length, T, hk, hv, work.scratchOffset, vOffset, vStride, vOffset, vStride, f32(1 / Math.sqrt(dk)), work.seg], [lengths.length * hv, 1, 1]);
    }, [[dqk, T * 2 * hv * dk], [dvWide, vWide.length], [dgb, T * hv * 2]]);
    // Per-value-head dq/dk summed over each key head's group = the gradient of qk.
    const group = hv / hk;
    const gotQk = Float64Array.from({ length: qk.length }, (_, idx) => {
      const i = idx % dk;
      const hh = Math.floor(idx / dk) % (2 * hk);
      const t = Math.floor(idx / (2 * hk * dk));
      let s = 0;
      for (let r = 0; r < group; r++) s += gotDqk![(t * 2 * hv + hh * group + r) * dk + i]!;
      return s;
    });
    expect(maxAbsDiff(gotQk, numericGrad((x) => refDelta(x, v, gb, lengths, dims), qk, dout))).toBeLessThan(2e-5);
    const gotDvRows = Float64Array.from({ length: v.length }, (_, i) => gotDv![vOffset + Math.floor(i / (hv * dv)) * vStride + (i % (hv * dv))]!);
    expect(maxAbsDiff(gotDvRows, numericGrad((x) => refDelta(qk, x, gb, lengths, dims), v, dout))).toBeLessThan(2e-5);
    expect(maxAbsDiff(gotDgb!, numericGrad((x) => refDelta(qk, v, x, lengths, dims), gb, dout))).toBeLessThan(2e-5);
  });
  it('rmsnorm_gated: forward equals float64; its backward + rmsnorm_backward give dx, dz, dw equal to central differences', async () => {
    const rows = 6, n = 8, eps = 1e-6;
    const x = wave(rows * n, 40), z = wave(rows * n, 41, 3), w = wave(n, 42).map((v) => 1 + 0.3 * v), dy = wave(rows * n, 43);
    const xBuf = h.buffer(x), zBuf = h.buffer(z), wBuf = h.buffer(w), dyBuf = h.buffer(dy);
    const y = h.buffer(rows * n * 4), rstd = h.buffer(rows * 4), dn = h.buffer(rows * n * 4), dz = h.buffer(rows * n * 4), dx = h.buffer(rows * n * 4);
    const dw = h.buffer(n * 4);
    const [gotY, gotDx, gotDz, gotDw] = await h.run((rec) => {
      rec.dispatch(h.pipeline('rmsnorm_gated.wgsl'), [xBuf, zBuf, wBuf, y, rstd], [rows, n, 0, 0, f32(eps)], groups1d(rows));
      rec.dispatch(h.pipeline('rmsnorm_gated_backward.wgsl'), [xBuf, zBuf, wBuf, rstd, dyBuf, dn, dz], [rows * n, n, 0, 0], groups1d(rows * n));
      const storage = [xBuf, dn, wBuf, dx, h.buffer(rows * 4), dw];
      rec.dispatch(h.pipeline('rmsnorm_backward.wgsl', { PASS: 0 }), storage, [rows, n, f32(eps), 0, 0], [rows, 1, 1]);
      rec.dispatch(h.pipeline('rmsnorm_backward.wgsl', { PASS: 1 }), storage, [rows, n, f32(eps), 0, 0], groups1d(n));
    }, [[y, rows * n], [dx, rows * n], [dz, rows * n], [dw, n]]);
    expect(maxAbsDiff(gotY!, refGatedNorm(x, z, w, eps))).toBeLessThan(2e-6);
    expect(maxAbsDiff(gotDx!, numericGrad((v) => refGatedNorm(v, z, w, eps), x, dy))).toBeLessThan(2e-5);
    expect(maxAbsDiff(gotDz!, numericGrad((v) => refGatedNorm(x, v, w, eps), z, dy))).toBeLessThan(2e-5);
    expect(maxAbsDiff(gotDw!, numericGrad((v) => refGatedNorm(x, z, v, eps), w, dy))).toBeLessThan(2e-5);
  });

  it('rmsnorm with unit_offset scales by (1 + w), forward and backward (Qwen3.5 norms)', async () => {
    const rows = 5, n = 8, eps = 1e-6;
    const x = wave(rows * n, 50), w = wave(n, 51, 0.2), dy = wave(rows * n, 52);
    const xBuf = h.buffer(x), wBuf = h.buffer(w);
    const y = h.buffer(rows * n * 4), dx = h.buffer(rows * n * 4), dw = h.buffer(n * 4);
    const [gotY, gotDx, gotDw] = await h.run((rec) => {
      rec.dispatch(h.pipeline('rmsnorm.wgsl'), [xBuf, wBuf, y, h.buffer(rows * 4)], [rows, n, 1, 0, f32(eps)], groups1d(rows));
      const storage = [xBuf, h.buffer(dy), wBuf, dx, h.buffer(rows * 4), dw];
      rec.dispatch(h.pipeline('rmsnorm_backward.wgsl', { PASS: 0 }), storage, [rows, n, f32(eps), 0, 1], [rows, 1, 1]);
      rec.dispatch(h.pipeline('rmsnorm_backward.wgsl', { PASS: 1 }), storage, [rows, n, f32(eps), 0, 1], groups1d(n));
    }, [[y, rows * n], [dx, rows * n], [dw, n]]);
    expect(maxAbsDiff(gotY!, refNorm1p(x, w, eps))).toBeLessThan(2e-6);
    expect(maxAbsDiff(gotDx!, numericGrad((v) => refNorm1p(v, w, eps), x, dy))).toBeLessThan(2e-5);
    expect(maxAbsDiff(gotDw!, numericGrad((v) => refNorm1p(x, v, eps), w, dy))).toBeLessThan(2e-5);
  });

  it('gated attention: rows_copy splits q from (query, gate) halves and back; sigmoid_gate and its backward equal float64', async () => {
    const T = 3, H = 2, d = 4, rows = T * H;
    const qg = wave(rows * 2 * d, 60, 2), attn = wave(rows * d, 61), dy = wave(rows * d, 62);
    const qgBuf = h.buffer(qg);
    const q = h.buffer(rows * d * 4), y = h.buffer(rows * d * 4), dattn = h.buffer(rows * d * 4), dqg = h.buffer(rows * 2 * d * 4);
    const dq = wave(rows * d, 63);
    const [gotQ, gotY, gotDattn, gotDqg] = await h.run((rec) => {
      rec.dispatch(h.pipeline('rows_copy.wgsl'), [qgBuf, q], [rows, d, 0, 2 * d, 0, d], groups1d(rows * d));
      const attnBuf = h.buffer(attn);
      rec.dispatch(h.pipeline('sigmoid_gate.wgsl'), [attnBuf, qgBuf, y], [rows, d, d, 2 * d], groups1d(rows * d));
      rec.dispatch(h.pipeline('sigmoid_gate_backward.wgsl'), [attnBuf, qgBuf, h.buffer(dy), dattn, dqg], [rows, d, d, 2 * d], groups1d(rows * d));
      rec.dispatch(h.pipeline('rows_copy.wgsl'), [h.buffer(dq), dqg], [rows, d, 0, d, 0, 2 * d], groups1d(rows * d));
    }, [[q, rows * d], [y, rows * d], [dattn, rows * d], [dqg, rows * 2 * d]]);
    const gate = (r: number, i: number) => qg[r * 2 * d + d + i]!;
    const f = (a: Float64Array, g: Float64Array) => a.map((v, idx) => v * sigmoid(g[Math.floor(idx / d) * 2 * d + d + (idx % d)]!));
    expect([...gotQ!]).toEqual([...Float32Array.from({ length: rows * d }, (_, idx) => qg[Math.floor(idx / d) * 2 * d + (idx % d)]!)]);
    expect(maxAbsDiff(gotY!, Float64Array.from({ length: rows * d }, (_, idx) => attn[idx]! * sigmoid(gate(Math.floor(idx / d), idx % d))))).toBeLessThan(1e-6);
    expect(maxAbsDiff(gotDattn!, numericGrad((v) => f(v, qg), attn, dy))).toBeLessThan(1e-5);
    const wantDqg = numericGrad((v) => f(attn, v), qg, dy); // the gate halves; the query halves are dq
    for (let idx = 0; idx < rows * d; idx++) wantDqg[Math.floor(idx / d) * 2 * d + (idx % d)] = Math.fround(dq[idx]!);
    expect(maxAbsDiff(gotDqg!, wantDqg)).toBeLessThan(1e-5);
  });

  it('rope and rope_backward rotate only the first rotary dims (partial_rotary_factor 0.25)', async () => {
    const T = 3, heads = 2, d = 16, half = 2; // rotary dim 4 of 16
    const x = wave(T * heads * d, 70), dy = wave(T * heads * d, 71);
    const table = Float64Array.from({ length: T * half * 2 }, (_, i) => {
      const angle = Math.floor(i / 2) * 0.7 + 0.3;
      return Math.fround(i % 2 === 0 ? Math.cos(angle) : Math.sin(angle));
    });
    const xBuf = h.buffer(x), g = h.buffer(dy);
    const tBuf = h.buffer(table);
    const [gotY, gotDx] = await h.run((rec) => {
      rec.dispatch(h.pipeline('rope.wgsl'), [tBuf, xBuf], [T, heads, half, d], groups1d(T * heads * half));
      rec.dispatch(h.pipeline('rope_backward.wgsl'), [g, tBuf], [T, heads, d, half], groups1d(T * heads * half));
    }, [[xBuf, x.length], [g, dy.length]]);
    expect(maxAbsDiff(gotY!, refRope(x, table, T, heads, d, half))).toBeLessThan(1e-6);
    expect(maxAbsDiff(gotDx!, numericGrad((v) => refRope(v, table, T, heads, d, half), x, dy))).toBeLessThan(1e-5);
  });
});
