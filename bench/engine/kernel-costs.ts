// The work of one dispatch, from the shape params it was recorded with (the uniform words the
// kernel itself reads, DispatchTiming.params) and its template constants, plus what no param holds:
// how many keys attention visits (AttentionWork, known to whoever packed the batch).
//
// flops: the arithmetic the kernel's math needs (a multiply-add is 2; exp/sqrt/div count 1; the
//        workgroup reductions' bookkeeping is not counted). Matmuls count 2·M·N·K.
// bytes: compulsory traffic: every input read once and every output written once, in the dtype it
//        is stored in (f16 weights 2 bytes). Re-reads a kernel makes (the sampler's bitwise search,
//        attention re-reading K/V per query head) are not counted, so achieved GB/s is a lower bound.
// Families group a kernel's variants (matmul = matmul / matmul_vec4 / matmul_tiled; attention = the
// per-thread and per-workgroup kernels), split by weight dtype for the GEMMs (f16 weights are
// compared with the f16 matmul peak).
import type { DispatchTiming } from '../../src/engine/recorder.ts';

/** Per batch: Σ over query tokens of the keys each attends to, and the distinct K/V rows read. */
export interface AttentionWork {
  attendedKeys: number;
  kvRows: number;
}

export interface CostContext {
  attention: AttentionWork;
  /** Rows of the embedding (a split embedding's chunk dispatches each own rows/vocab of the tokens). */
  vocab: number;
}

export interface DispatchCost {
  family: string;
  /** Which kernel of the family: the file and, for GEMMs, how the weights were read. */
  kernel: string;
  flops: number;
  bytes: number;
  /** The precision the compute peak is taken in: f16 for GEMMs on f16 weights. */
  precision: 'f32' | 'f16';
}

type Dispatch = Pick<DispatchTiming, 'file' | 'constants' | 'params' | 'groups'>;

const F = 4; // f32 bytes

/** How a forward matmul read W, from the constants forward.ts compiled it with: 'f32', 'f16 native' (array<f16>) or 'f16 u32' (unpacked halves). */
function forwardWeights(c: Dispatch['constants']): 'f32' | 'f16 native' | 'f16 u32' {
  if (c.W_VEC !== undefined) return c.W_VEC === 'vec4u' ? 'f32' : c.W_VEC === 'vec2u' ? 'f16 u32' : 'f16 native';
  return halfElem(c);
}

/** W_ELEM / LOAD_W of a scalar-load kernel (matmul, matmul_tiled, embedding). */
function halfElem(c: Dispatch['constants']): 'f32' | 'f16 native' | 'f16 u32' {
  if (c.W_ELEM === 'f16') return 'f16 native';
  return /unpack/.test(String(c.LOAD_W)) ? 'f16 u32' : 'f32';
}

export function dispatchCost(d: Dispatch, ctx: CostContext): DispatchCost {
  const p = d.params;
  const base = d.file.replace(/\.wgsl$/, '');
  const pass = Number(d.constants.PASS ?? 0);
  const one = (family: string, flops: number, bytes: number): DispatchCost => ({ family, kernel: base, flops, bytes, precision: 'f32' });
  switch (d.file) {
    case 'matmul.wgsl':
    case 'matmul_vec4.wgsl':
    case 'matmul_tiled.wgsl': {
      // y (M, N) [+]= scale·x (M, K)·W (N, K)ᵀ; MODE 1 (accumulate) and 2 (residual) also read an (M, N).
      const [M, N, K] = [p[0]!, p[1]!, p[2]!];
      const w = forwardWeights(d.constants);
      const ws = w === 'f32' ? 4 : 2;
      const extra = Number(d.constants.MODE) === 0 ? 0 : M * N * F;
      return {
        family: `matmul ${w === 'f32' ? 'f32' : 'f16'} W`, kernel: `${base} (${w})`, flops: 2 * M * N * K,
        bytes: M * K * F + N * K * ws + M * N * F + extra, precision: w === 'f32' ? 'f32' : 'f16',
      };
    }
    case 'matmul_backward.wgsl':
    case 'matmul_backward_tiled.wgsl': {
      // C (M, N) (+)= alpha·op(A) (M, K)·op(B) (K, N); B f32, native halves or halves unpacked from u32.
      const [M, N, K, accumulate] = [p[0]!, p[1]!, p[2]!, p[9]!];
      const b = halfElem({ W_ELEM: d.constants.B_ELEM, LOAD_W: d.constants.LOAD_B });
      const half = b !== 'f32';
      return {
        family: `matmul_backward ${half ? 'f16' : 'f32'} B`, kernel: `${base} (${b})`, flops: 2 * M * N * K,
        bytes: M * K * F + K * N * (half ? 2 : 4) + M * N * F * (accumulate ? 2 : 1), precision: half ? 'f16' : 'f32',
      };
    }
    case 'attention.wgsl':
    case 'attention_wg.wgsl': {
      // per (token, head) and visited key: q·k (2d) + softmax weight (exp, ~3) + p·v (2d).
      const [T, H, KV] = [p[0]!, p[1]!, p[2]!];
      const dh = Number(d.constants.HEAD_DIM);
      const { attendedKeys, kvRows } = ctx.attention;
      const kvBytes = d.constants.KV_ELEM === 'f16' ? 2 : F; // an f16 KV cache's rows
      return one('attention', H * attendedKeys * (4 * dh + 3), (2 * T * H * dh + T * H) * F + 2 * kvRows * KV * dh * kvBytes);
    }
    case 'attention_backward.wgsl': {
      // PASS 0 per (token, head, key): s (2d), dP = dO·v (2d), dq += dS·k (2d) + ~4; reads q, o, dO, K, V; writes dq, stats.
      // PASS 1 per pair: s (2d), dP (2d), dk (2d), dv (2d) + ~4; reads q, dO, K, V, stats; writes dk, dv.
      const [T, H, KV] = [p[0]!, p[1]!, p[2]!];
      const dh = Number(d.constants.HEAD_DIM);
      const pairs = H * ctx.attention.attendedKeys;
      return pass === 0
        ? one('attention_backward', pairs * (6 * dh + 4), (3 * T * H * dh + 2 * T * KV * dh + T * H * dh + 2 * T * H) * F)
        : one('attention_backward', pairs * (8 * dh + 4), (2 * T * H * dh + 2 * T * KV * dh + 2 * T * H + 2 * T * KV * dh) * F);
    }
    case 'rmsnorm.wgsl': {
      // per element: x² + sum (2), x·rstd·w (2); per row: mean, sqrt, div (3). Reads x, w; writes y, rstd.
      const [rows, n] = [p[0]!, p[1]!];
      return one('rmsnorm', 4 * rows * n + 3 * rows, (2 * rows * n + n + rows) * F);
    }
    case 'rmsnorm_backward.wgsl': {
      const [rows, n, , accumulate] = [p[0]!, p[1]!, p[2]!, p[3]!];
      // PASS 0: sum of squares (2), Σ w·dy·x (3), dx = rstd·w·dy − x·c (4) per element; reads x, dy, w (and dx when accumulating), writes dx, rstd.
      // PASS 1: dw += dy·x·rstd (3 per element); reads dy, x, rstd and dw, writes dw.
      return pass === 0
        ? one('rmsnorm_backward', 9 * rows * n + 4 * rows, ((accumulate ? 4 : 3) * rows * n + n + rows) * F)
        : one('rmsnorm_backward', 3 * rows * n, (2 * rows * n + rows + 2 * n) * F);
    }
    case 'rope.wgsl':
    case 'rope_backward.wgsl': {
      // per rotated pair: 4 multiplies + 2 adds; the pair is read and written, cos/sin read per (token, pair index).
      const [T, heads, half] = d.file === 'rope.wgsl' ? [p[0]!, p[1]!, p[2]!] : [p[0]!, p[1]!, p[3]!];
      return one(base, 6 * T * heads * half, (4 * T * heads * half + 2 * T * half) * F);
    }
    case 'swiglu.wgsl':
      // silu(g)·u: exp, add, div, 2 multiplies; reads gate, up; writes hidden.
      return one('swiglu', 5 * p[0]!, 3 * p[0]! * F);
    case 'swiglu_backward.wgsl':
      // σ (3), silu (1), dg (5), du (1); reads gate, up, dh; writes dgate, dup.
      return one('swiglu_backward', 10 * p[0]!, 5 * p[0]! * F);
    case 'embedding.wgsl': {
      // Each token's row is gathered by the chunk holding its id: this chunk's expected share rows/vocab.
      const [T, D, , rows] = [p[0]!, p[1]!, p[2]!, p[3]!];
      const ws = halfElem(d.constants) === 'f32' ? 4 : 2;
      return one('embedding', 0, T * 4 + (T * D * (ws + F) * rows) / ctx.vocab);
    }
    case 'embedding_backward.wgsl': {
      // dE[id] += dx: every column walks all tokens (ids, dx read); the tokens in this chunk add into dE.
      const [T, D, , rows] = [p[0]!, p[1]!, p[2]!, p[3]!];
      const share = rows / ctx.vocab;
      return one('embedding_backward', T * D * share, T * 4 + T * D * F + 2 * T * D * F * share);
    }
    case 'gather_rows.wgsl':
      return one('gather_rows', 0, (2 * p[0]! * p[1]! + p[0]!) * F);
    case 'gather_rows_backward.wgsl':
      // dx[index[i]] += dout[i]: dout read, dx read and written.
      return one('gather_rows_backward', p[0]! * p[1]!, (3 * p[0]! * p[1]! + p[0]!) * F);
    case 'kv_write.wgsl':
      // k and v rows (T, width) read in f32, written into the cache in its element type; the meta words.
      return one('kv_write', 0, (2 * p[0]! * p[1]! + 4 * p[0]!) * F + 2 * p[0]! * p[1]! * (d.constants.KV_ELEM === 'f16' ? 2 : F));
    case 'logits_stats.wgsl': {
      // per logit: running max, exp, Σexp, Σexp·z (5); reads the (rows, cols) chunk, reads + writes (rows, 4) stats.
      const [rows, cols] = [p[0]!, p[1]!];
      return one('logits_stats', 5 * rows * cols, (rows * cols + 8 * rows + rows) * F);
    }
    case 'logprob_finalize.wgsl':
      // per row: log, add, div, sub (~6); reads (m, s, u, zt), writes (logprob, entropy, logZ).
      return one('logprob_finalize', 6 * p[0]!, 7 * p[0]! * F);
    case 'log_softmax_backward.wgsl': {
      const [rows, , chunk] = [p[0]!, p[1]!, p[2]!];
      // PASS 0 per logit: scale, max, exp, Σexp, Σexp·z (6); PASS 1 per logit: z, p = exp(z − lse), the dL/dlogit formula (~9), in place.
      return pass === 0
        ? one('log_softmax_backward', 6 * rows * chunk, (rows * chunk + 6 * rows + 3 * rows) * F)
        : one('log_softmax_backward', 9 * rows * chunk, (2 * rows * chunk + 6 * rows) * F);
    }
    case 'sample.wgsl': {
      // One workgroup per row over V logits; compulsory traffic is one read of the row (the
      // top-k/top-p threshold searches re-read it, not counted). Per logit: scale, key, Gumbel noise (~8).
      const [V] = [p[0]!];
      const rows = d.groups[0];
      return one('sample', 8 * rows * V, (rows * V + 2 * rows + 3 * rows) * F);
    }
    case 'adamw.wgsl':
      // decay (2), clip·g (1), m (3), v (4), sqrt/div/add/mul/sub (5); reads w, g, m, v (+ the clip scalar), writes w, m, v.
      return one('adamw', 15 * p[0]!, 7 * p[0]! * F);
    case 'grad_norm.wgsl':
      // PASS 0: Σ g² over the tensor (2 per element); PASS 1: Σ partials, sqrt, clip coefficient.
      return pass === 0 ? one('grad_norm', 2 * p[0]!, (p[0]! + 1) * F) : one('grad_norm', p[0]! + 4, (p[0]! + 2) * F);
    case 'half_to_float.wgsl':
      // count halves read, count floats written.
      return one('half_to_float', 0, p[0]! * (2 + F));
    // Qwen3.5's linear-attention layers and gated attention.
    case 'conv1d_silu.wgsl': {
      // PASS 0 per (token, channel): K multiply-adds + silu (4); reads x, w, writes out. PASS 1: the state shift, copies only.
      const [T, C, seqs] = [p[0]!, p[1]!, p[2]!];
      const K = Number(d.constants.KSIZE);
      return pass === 0 ? one('conv1d', T * C * (2 * K + 4), (2 * T * C + C * K + T) * F) : one('conv1d', 0, 2 * seqs * C * (K - 1) * F);
    }
    case 'conv1d_silu_backward.wgsl': {
      // PASS 0: pre (2K) and silu' (8) per element; PASS 1: dx = Σ_k w·dpre (2K); PASS 2: dw = Σ_t dpre·x (2 per token and tap).
      const [T, C] = [p[0]!, p[1]!];
      const K = Number(d.constants.KSIZE);
      if (pass === 0) return one('conv1d_backward', T * C * (2 * K + 8), (3 * T * C + C * K + 2 * T) * F);
      if (pass === 1) return one('conv1d_backward', 2 * T * C * K, (2 * T * C + C * K + 2 * T) * F);
      return one('conv1d_backward', 2 * T * C * K, (2 * T * C + 2 * C * K + 2 * T) * F);
    }
    case 'l2norm.wgsl': {
      // per element: x² + sum (2), x·inv (1); per row: sqrt, div. Reads x, writes y, inv.
      const [rows, , n] = [p[0]!, p[1]!, p[2]!];
      return one('l2norm', 3 * rows * n + 2 * rows, (2 * rows * n + rows) * F);
    }
    case 'l2norm_backward.wgsl': {
      // per element: the group's dy sum (twice), dot, dx (6); reads x, the group's dy rows, inv; writes dx.
      const [rows, , n, , , group] = [p[0]!, p[1]!, p[2]!, p[3]!, p[4]!, p[5]!];
      return one('l2norm_backward', rows * n * (2 * group + 6), (rows * n * (2 + group) + rows) * F);
    }
    case 'delta_gates.wgsl':
      // per (token, head): exp, softplus (~5), σ (3), products; reads a, b, writes (g, β).
      return one('delta_gates', 12 * p[0]!, 4 * p[0]! * F);
    case 'delta_gates_backward.wgsl':
      // PASS 0 per (token, head): σ, exp, products (~12); reads a, (g, β), (dg, dβ), writes da, db. PASS 1: Σ_t per head.
      return pass === 0 ? one('delta_gates_backward', 12 * p[0]!, 7 * p[0]! * F) : one('delta_gates_backward', 3 * p[0]!, 5 * p[0]! * F);
    case 'gated_delta.wgsl': {
      // per (token, value head, column): decay + Sᵀk (3·dk), update + Sᵀq (4·dk); reads q, k (per key head) and v, (g, β), writes o;
      // generating (WITH_STATE), it also reads and writes each sequence's recurrent state S (hv·dk·dv): in decode that is most of the traffic.
      const [seqs, T, hk, hv, dv] = [p[0]!, p[1]!, p[2]!, p[3]!, p[4]!];
      const dk = Number(d.constants.DK);
      const state = d.constants.WITH_STATE === true || d.constants.WITH_STATE === 'true' ? 2 * seqs * hv * dk * dv : 0;
      return one('gated_delta', T * hv * dv * 7 * dk, (T * 2 * hk * dk + 2 * T * hv * dv + 2 * T * hv + state) * F);
    }
    case 'gated_delta_chunked.wgsl': {
      // per (token, value head): the chunk's k·k and q·k pairs (s ≤ t: 2·C·dk); per column: Sᵀk, Sᵀq (4·dk), the
      // substitution and the output sums (≈ 2·C), the state update (2·dk). Bytes as the recurrent kernel's.
      const [seqs, T, hk, hv, dv] = [p[0]!, p[1]!, p[2]!, p[3]!, p[4]!];
      const dk = Number(d.constants.DK);
      const C = Number(d.constants.CHUNK);
      const state = d.constants.WITH_STATE === true || d.constants.WITH_STATE === 'true' ? 2 * seqs * hv * dk * dv : 0;
      return one('gated_delta_chunked', T * hv * (2 * C * dk + dv * (6 * dk + 2 * C)), (T * 2 * hk * dk + 2 * T * hv * dv + 2 * T * hv + state) * F);
    }
    case 'gated_delta_backward.wgsl': {
      // Chunked: per (token, value head) the k·k and q·k pairs of both walks (8·C·dk), per column the checkpoint walk
      // (4·dk) and the backward (14·dk + ≈ 6·C), the column sums R1, R2 (4·C·dv) and per row dq, dk (4·dv + 8·C per dk);
      // reads q, k, v, (g, β), dO, writes dq/dk per value head, dv, (dg, dβ); per chunk the saved state (written once,
      // read twice), dS (written and read) and six (C, dv) tiles (written and read).
      const [, T, hk, hv] = [p[0]!, p[1]!, p[2]!, p[3]!];
      const dk = Number(d.constants.DK);
      const dv = Number(d.constants.DV);
      const C = Number(d.constants.CHUNK);
      const chunks = Math.ceil(T / C);
      return one('gated_delta_backward', T * hv * (8 * C * dk + 18 * dk * dv + 10 * C * dv + 8 * C * dk),
        (T * 2 * hk * dk + 3 * T * hv * dv + 4 * T * hv + 2 * T * hv * dk + chunks * hv * (5 * dk * dv + 12 * C * dv)) * F);
    }
    case 'rmsnorm_gated.wgsl': {
      // per element: x² + sum (2), w·x·rstd (2), silu (4); reads x, z, w; writes y, rstd.
      const [rows, n] = [p[0]!, p[1]!];
      return one('rmsnorm_gated', 8 * rows * n + 3 * rows, (3 * rows * n + n + rows) * F);
    }
    case 'rmsnorm_gated_backward.wgsl':
      // per element: σ (3), dn (2), dz (~9); reads x, z, dy (w, rstd per row/column), writes dn, dz.
      return one('rmsnorm_gated_backward', 14 * p[0]!, 5 * p[0]! * F);
    case 'rows_copy.wgsl':
      return one('rows_copy', 0, 2 * p[0]! * p[1]! * F);
    case 'sigmoid_gate.wgsl':
      // σ (3) and the product; reads x, gate, writes y.
      return one('sigmoid_gate', 4 * p[0]! * p[1]!, 3 * p[0]! * p[1]! * F);
    case 'sigmoid_gate_backward.wgsl':
      // σ (3), dx (1), dgate (3); reads x, gate, dy, writes dx, dgate.
      return one('sigmoid_gate_backward', 7 * p[0]! * p[1]!, 5 * p[0]! * p[1]! * F);
    case 'layernorm.wgsl': {
      // per element: sum (1), centred square + sum (3), (x − mean)·rstd·w + b (4); per row: 2 divides, sqrt. Reads x twice + once, w, b; writes y.
      const [rows, n] = [p[0]!, p[1]!];
      return one('layernorm', 8 * rows * n + 3 * rows, (4 * rows * n + 2 * n) * F);
    }
    case 'bias_act.wgsl': {
      // bias add (1) and GELU (~12 with tanh or erf: exp, polynomial); y read and written, b per column.
      const [rows, n] = [p[0]!, p[1]!];
      const act = Number(d.constants.ACT);
      return one('bias_act', rows * n * (act === 0 ? 1 : 13), (2 * rows * n + n) * F);
    }
    case 'layernorm_backward.wgsl': {
      const [rows, n, accumulate] = [p[0]!, p[1]!, p[2]!];
      // PASS 0, per element: sum (1), centred square (3), g = dy·w and its two sums (4), dx (6); reads x three times + once, dy twice, w; writes dx and (mean, rstd) per row.
      // PASS 1: dw += dy·(x − mean)·rstd (4 per element); reads dy, x, the row stats and dw, writes dw.
      return pass === 0
        ? one('layernorm_backward', 14 * rows * n + 5 * rows, ((6 + (accumulate ? 1 : 0)) * rows * n + n + 2 * rows) * F)
        : one('layernorm_backward', 4 * rows * n, (2 * rows * n + 2 * rows + 2 * n) * F);
    }
    case 'bias_backward.wgsl': {
      // db += Σ_rows dy: one add per element; reads dy and db, writes db.
      const [rows, n] = [p[0]!, p[1]!];
      return one('bias_backward', rows * n, (rows * n + 2 * n) * F);
    }
    case 'pos_embed_backward.wgsl': {
      // 2 per (tap, channel); reads each tap's dx row, its (patch, weight) and the row offsets, dtable read and written.
      const [rows, n, taps] = [p[0]!, p[1]!, p[2]!];
      return one('pos_embed_backward', 2 * taps * n, (taps * n + 2 * taps + rows + 1 + 2 * rows * n) * F);
    }
    case 'gelu_backward.wgsl': {
      // act' (~16 with tanh or erf: exp, polynomial) times dy; reads pre and dy, writes dy.
      const count = p[0]!;
      return one('gelu_backward', 17 * count, 3 * count * F);
    }
    case 'pos_embed.wgsl': {
      // 4 bilinear taps per element (2 each); reads 4 table values + 4 (index, weight) per row, x read and written.
      const [rows, n] = [p[0]!, p[1]!];
      return one('pos_embed', 8 * rows * n, (6 * rows * n + 8 * rows) * F);
    }
    case 'rows_scatter.wgsl':
      return one('rows_scatter', 0, (2 * p[0]! * p[1]! + p[0]!) * F);
    default:
      throw new Error(`kernel-costs: no cost model for ${d.file} (add one to bench/engine/kernel-costs.ts)`);
  }
}
