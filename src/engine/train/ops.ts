// Typed recorders for the training kernels: one method per WGSL file (or pass), taking buffers and
// shapes by name so the backward pass reads like the math. Every method only records into a
// Recorder; nothing here submits or allocates beyond the pipelines.

import { gemmBLoads } from '../weight-loads.ts';
import type { EngineInternals, ParamEntry } from '../internals.ts';
import { f32, groups1d, type Recorder } from '../recorder.ts';

/** Largest workgroup count in one grid dimension. */
const MAX_GROUPS = 65535;

/** C (+)= alpha · op(A) · op(B); op(A) is (M, K), op(B) is (K, N), C is (M, N) with row stride ldc. */
export interface GemmArgs {
  M: number;
  N: number;
  K: number;
  a: GPUBuffer;
  /** Element offset of op(A)[0, 0]; row stride of A as stored; A stored (K, M) when transposed. */
  aOffset?: number;
  lda: number;
  aTransposed?: boolean;
  b: GPUBuffer;
  bOffset?: number;
  ldb: number;
  bTransposed?: boolean;
  /** B holds IEEE halves (the engine's f16 weights), read as the engine's kernelVariants.halfLoads says. */
  bHalf?: boolean;
  c: GPUBuffer;
  cOffset?: number;
  ldc: number;
  accumulate: boolean;
  alpha?: number;
}

/** Rows of a grid for kernels that use one workgroup per row: (x, y) with x·y ≥ rows. */
function rowGroups(rows: number): [number, number, number] {
  if (rows <= MAX_GROUPS) return [rows, 1, 1];
  return [MAX_GROUPS, Math.ceil(rows / MAX_GROUPS), 1];
}

/** 'blocked': register-blocked, no workgroup memory (software adapters); 'tiled': workgroup-memory tiles (real GPUs). */
export type GemmVariant = 'blocked' | 'tiled';

export class TrainOps {
  readonly gemmVariant: GemmVariant;

  constructor(private readonly internals: EngineInternals, gemmVariant?: GemmVariant) {
    this.gemmVariant = gemmVariant ?? (internals.gpu.software ? 'blocked' : 'tiled');
  }

  gemm(rec: Recorder, g: GemmArgs): void {
    if (g.M === 0 || g.N === 0) return;
    if (g.K === 0) {
      if (!g.accumulate) throw new Error('train gemm: K = 0 with accumulate=false would leave C unwritten');
      return;
    }
    const tiled = this.gemmVariant === 'tiled';
    // The forward's switch: native `array<f16>` loads where the engine chose them, else u32 unpacking.
    const pipeline = this.internals.getPipeline(tiled ? 'matmul_backward_tiled.wgsl' : 'matmul_backward.wgsl', {
      A_TRANSPOSED: Boolean(g.aTransposed),
      B_TRANSPOSED: Boolean(g.bTransposed),
      ...gemmBLoads(Boolean(g.bHalf), this.internals.kernelVariants.halfLoads),
    });
    // blocked: 8×8 invocations × 4×4 outputs = 32×32 per workgroup; tiled: 64×64.
    const block = tiled ? 64 : 32;
    const gx = Math.ceil(g.N / block);
    const gy = Math.ceil(g.M / block);
    if (gx > MAX_GROUPS || gy > MAX_GROUPS) throw new Error(`train gemm: ${g.M}×${g.N} output exceeds the dispatch grid`);
    rec.dispatch(
      pipeline,
      [g.a, g.b, g.c],
      [g.M, g.N, g.K, g.aOffset ?? 0, g.lda, g.bOffset ?? 0, g.ldb, g.cOffset ?? 0, g.ldc, g.accumulate ? 1 : 0, f32(g.alpha ?? 1), 0],
      [gx, gy, 1],
      'gemm',
    );
  }

  /**
   * dX (+)= dY · W for a (possibly row-chunked) weight W (out, in): x (rows, in), dY (rows, out).
   * Each chunk holds rows [rowStart, rowStart + rows) of W, i.e. columns of dY.
   */
  linearDx(rec: Recorder, w: ParamEntry, dy: GPUBuffer, dx: GPUBuffer, rows: number, accumulate: boolean, alpha = 1): void {
    const [out, inp] = w.shape as [number, number];
    w.chunks.forEach((chunk, i) => {
      this.gemm(rec, {
        M: rows, N: inp, K: chunk.rows,
        a: dy, aOffset: chunk.rowStart, lda: out,
        b: chunk.buffer, ldb: inp, bHalf: w.dtype === 'f16',
        c: dx, ldc: inp, accumulate: accumulate || i > 0, alpha,
      });
    });
  }

  /** dW += dYᵀ · X into gradient buffers shaped like W's chunks (f32). */
  linearDw(rec: Recorder, w: ParamEntry, gradChunks: GPUBuffer[], dy: GPUBuffer, x: GPUBuffer, rows: number): void {
    const [out, inp] = w.shape as [number, number];
    w.chunks.forEach((chunk, i) => {
      this.gemm(rec, {
        M: chunk.rows, N: inp, K: rows,
        a: dy, aOffset: chunk.rowStart, lda: out, aTransposed: true,
        b: x, ldb: inp,
        c: gradChunks[i]!, ldc: inp, accumulate: true,
      });
    });
  }

  /**
   * PASS 0 of log_softmax_backward: folds a logits chunk (rows, chunk) into the running
   * (max, Σexp, Σexp·z) of `lseState` (rows, 3).
   */
  lseUpdate(rec: Recorder, logits: GPUBuffer, lseState: GPUBuffer, targets: GPUBuffer, gradLogp: GPUBuffer, gradEntropy: GPUBuffer, rows: number, chunkStart: number, chunk: number, temperature: number): void {
    rec.dispatch(
      this.internals.getPipeline('log_softmax_backward.wgsl', { PASS: 0 }),
      [logits, lseState, targets, gradLogp, gradEntropy],
      [rows, chunkStart, chunk, f32(1 / temperature)],
      rowGroups(rows),
      'lse_update',
    );
  }

  /** PASS 1 of log_softmax_backward: logits chunk → dL/dlogits in place (dL/dlogp and dL/dentropy terms). */
  dlogits(rec: Recorder, logits: GPUBuffer, lseState: GPUBuffer, targets: GPUBuffer, gradLogp: GPUBuffer, gradEntropy: GPUBuffer, rows: number, chunkStart: number, chunk: number, temperature: number): void {
    rec.dispatch(
      this.internals.getPipeline('log_softmax_backward.wgsl', { PASS: 1 }),
      [logits, lseState, targets, gradLogp, gradEntropy],
      [rows, chunkStart, chunk, f32(1 / temperature)],
      groups1d(rows * chunk),
      'dlogits',
    );
  }

  /**
   * rmsnorm backward over `rows` rows of n: dx (+)= …, and, when `dw` is given, dw += Σ dy⊙x·rstd.
   * `rstd` is (rows) scratch written by the dx pass.
   */
  rmsnormBackward(rec: Recorder, a: {
    x: GPUBuffer; dy: GPUBuffer; w: GPUBuffer; dx: GPUBuffer; rstd: GPUBuffer; dw: GPUBuffer | null; scratchDw: GPUBuffer;
    rows: number; n: number; eps: number; accumulate: boolean;
    /** Qwen3.5's norms scale by (1 + w). */
    unitOffset: boolean;
  }): void {
    const params = [a.rows, a.n, f32(a.eps), a.accumulate ? 1 : 0, a.unitOffset ? 1 : 0];
    const storage = [a.x, a.dy, a.w, a.dx, a.rstd, a.dw ?? a.scratchDw];
    rec.dispatch(this.internals.getPipeline('rmsnorm_backward.wgsl', { PASS: 0 }), storage, params, rowGroups(a.rows), 'rmsnorm dx');
    if (a.dw) rec.dispatch(this.internals.getPipeline('rmsnorm_backward.wgsl', { PASS: 1 }), storage, params, groups1d(a.n), 'rmsnorm dw');
  }

  /** In-place inverse RoPE rotation of a (T, heads, d) gradient over the first rotaryDim dims of each head. */
  ropeBackward(rec: Recorder, grad: GPUBuffer, rope: GPUBuffer, tokens: number, heads: number, headDim: number, rotaryDim: number): void {
    const half = rotaryDim / 2;
    rec.dispatch(this.internals.getPipeline('rope_backward.wgsl'), [grad, rope], [tokens, heads, headDim, half], groups1d(tokens * heads * half), 'rope backward');
  }

  attentionBackward(rec: Recorder, a: {
    q: GPUBuffer; k: GPUBuffer; v: GPUBuffer; o: GPUBuffer; dout: GPUBuffer; bounds: GPUBuffer; stats: GPUBuffer;
    dq: GPUBuffer; dk: GPUBuffer; dv: GPUBuffer; tokens: number; heads: number; kvHeads: number; headDim: number;
    /** false: each token attends to its whole sequence (the vision tower's frames); default causal. */
    causal?: boolean;
  }): void {
    const hd = a.headDim;
    const params = [a.tokens, a.heads, a.kvHeads, f32(1 / Math.sqrt(hd)), 0, a.heads * hd, 0, a.kvHeads * hd, 0, a.kvHeads * hd, 0, a.heads * hd];
    const storage = [a.q, a.k, a.v, a.o, a.dout, a.bounds, a.stats, a.dq, a.dk, a.dv];
    const causal = a.causal ?? true;
    rec.dispatch(this.internals.getPipeline('attention_backward.wgsl', { HEAD_DIM: hd, PASS: 0, CAUSAL: causal }), storage, params, groups1d(a.tokens * a.heads), 'attention dq');
    rec.dispatch(this.internals.getPipeline('attention_backward.wgsl', { HEAD_DIM: hd, PASS: 1, CAUSAL: causal }), storage, params, groups1d(a.tokens * a.kvHeads), 'attention dk dv');
  }

  /**
   * LayerNorm (with bias) over rows of n: dx (+)= its input gradient, each row's (mean, rstd) into
   * `stats` (rows, 2); with `dw` (full fine-tuning of the tower) also dw += Σ dy ⊙ x̂ (layernorm_backward.wgsl).
   * `scratchDw` is bound where w is frozen (never written). db is biasBackward over the same dy.
   */
  layernormBackward(rec: Recorder, a: { x: GPUBuffer; w: GPUBuffer; dy: GPUBuffer; dx: GPUBuffer; stats: GPUBuffer; dw: GPUBuffer | null; scratchDw: GPUBuffer; rows: number; n: number; eps: number; accumulate: boolean }): void {
    const storage = [a.x, a.w, a.dy, a.dx, a.stats, a.dw ?? a.scratchDw];
    const params = [a.rows, a.n, a.accumulate ? 1 : 0, 0, f32(a.eps)];
    rec.dispatch(this.internals.getPipeline('layernorm_backward.wgsl', { PASS: 0 }), storage, params, groups1d(a.rows), 'layernorm backward');
    if (a.dw) rec.dispatch(this.internals.getPipeline('layernorm_backward.wgsl', { PASS: 1 }), storage, params, groups1d(a.n), 'layernorm dw');
  }

  /** db += Σ_rows dy over (rows, n): a bias's (or LayerNorm β's) gradient (bias_backward.wgsl). */
  biasBackward(rec: Recorder, dy: GPUBuffer, db: GPUBuffer, rows: number, n: number): void {
    rec.dispatch(this.internals.getPipeline('bias_backward.wgsl'), [dy, db], [rows, n, 0, 0], groups1d(n), 'bias backward');
  }

  /**
   * dtable (rows, n) += the position table's gradient from dx (patches, n), over the forward's taps
   * inverted per table row (pos_embed_backward.wgsl: offsets (rows + 1), patch and weight per tap).
   */
  posEmbedBackward(rec: Recorder, a: { dx: GPUBuffer; offsets: GPUBuffer; patch: GPUBuffer; weight: GPUBuffer; dtable: GPUBuffer; rows: number; n: number; taps: number }): void {
    rec.dispatch(this.internals.getPipeline('pos_embed_backward.wgsl'), [a.dx, a.offsets, a.patch, a.weight, a.dtable], [a.rows, a.n, a.taps, 0], groups1d(a.rows * a.n), 'pos_embed backward');
  }

  /** dy ⊙= act'(pre) in place, act 1 = tanh GELU, 2 = exact GELU (bias_act.wgsl's ACT). */
  geluBackward(rec: Recorder, pre: GPUBuffer, dy: GPUBuffer, count: number, act: number): void {
    rec.dispatch(this.internals.getPipeline('gelu_backward.wgsl', { ACT: act }), [pre, dy], [count, 0, 0, 0], groups1d(count), 'gelu backward');
  }

  swigluBackward(rec: Recorder, gate: GPUBuffer, up: GPUBuffer, dh: GPUBuffer, dgate: GPUBuffer, dup: GPUBuffer, count: number): void {
    rec.dispatch(this.internals.getPipeline('swiglu_backward.wgsl'), [gate, up, dh, dgate, dup], [count, 0, 0, 0], groups1d(count), 'swiglu backward');
  }

  /** dE[ids[t]] += dx[t] for one row chunk of the embedding gradient holding rows [rowStart, rowStart+rows). */
  embeddingBackward(rec: Recorder, ids: GPUBuffer, dx: GPUBuffer, de: GPUBuffer, tokens: number, dim: number, rowStart: number, rows: number): void {
    rec.dispatch(this.internals.getPipeline('embedding_backward.wgsl'), [ids, dx, de], [tokens, dim, rowStart, rows], groups1d(dim), 'embedding backward');
  }

  /** out (rows, width) = x[index[i]] (the forward side's gather_rows.wgsl). */
  gatherRows(rec: Recorder, x: GPUBuffer, index: GPUBuffer, out: GPUBuffer, rows: number, width: number): void {
    rec.dispatch(this.internals.getPipeline('gather_rows.wgsl'), [x, index, out], [rows, width, 0, 0], groups1d(rows * width), 'gather rows');
  }

  /** dx[index[i]] += dout[i]. */
  gatherRowsBackward(rec: Recorder, dout: GPUBuffer, index: GPUBuffer, dx: GPUBuffer, rows: number, width: number): void {
    rec.dispatch(this.internals.getPipeline('gather_rows_backward.wgsl'), [dout, index, dx], [rows, width, 0, 0], groups1d(rows * width), 'gather rows backward');
  }

  /** y = w ⊙ rmsnorm(x) (or (1 + w) ⊙ … with unitOffset; the forward side's rmsnorm.wgsl), rstd kept. */
  rmsnormForward(rec: Recorder, x: GPUBuffer, w: GPUBuffer, y: GPUBuffer, rstd: GPUBuffer, rows: number, n: number, eps: number, unitOffset: boolean): void {
    rec.dispatch(this.internals.getPipeline('rmsnorm.wgsl'), [x, w, y, rstd], [rows, n, unitOffset ? 1 : 0, 0, f32(eps)], groups1d(rows), 'final norm');
  }

  // ---- Qwen3.5: gated attention and the Gated DeltaNet (kernels/*.wgsl name each formula) ----

  /** dst[dstOffset + r·dstStride + i] = src[srcOffset + r·srcStride + i] for `rows` rows of n. */
  rowsCopy(rec: Recorder, src: GPUBuffer, dst: GPUBuffer, a: { rows: number; n: number; srcOffset: number; srcStride: number; dstOffset: number; dstStride: number }): void {
    rec.dispatch(this.internals.getPipeline('rows_copy.wgsl'), [src, dst], [a.rows, a.n, a.srcOffset, a.srcStride, a.dstOffset, a.dstStride], groups1d(a.rows * a.n), 'rows copy');
  }

  /** y = x ⊙ σ(gate): dx = …, and dgate into the strided view the gate was read from. */
  sigmoidGateBackward(rec: Recorder, a: { x: GPUBuffer; gate: GPUBuffer; dy: GPUBuffer; dx: GPUBuffer; dgate: GPUBuffer; rows: number; n: number; gateOffset: number; gateStride: number }): void {
    rec.dispatch(this.internals.getPipeline('sigmoid_gate_backward.wgsl'), [a.x, a.gate, a.dy, a.dx, a.dgate], [a.rows, a.n, a.gateOffset, a.gateStride], groups1d(a.rows * a.n), 'sigmoid gate backward');
  }

  /** Gated norm y = w ⊙ rmsnorm(x) ⊙ silu(z): dn = dL/d(w ⊙ rmsnorm(x)) (for rmsnormBackward) and dz. */
  rmsnormGatedBackward(rec: Recorder, a: { x: GPUBuffer; z: GPUBuffer; w: GPUBuffer; rstd: GPUBuffer; dy: GPUBuffer; dn: GPUBuffer; dz: GPUBuffer; rows: number; n: number }): void {
    rec.dispatch(this.internals.getPipeline('rmsnorm_gated_backward.wgsl'), [a.x, a.z, a.w, a.rstd, a.dy, a.dn, a.dz], [a.rows * a.n, a.n, 0, 0], groups1d(a.rows * a.n), 'gated norm backward');
  }

  /**
   * The delta rule's backward over packed sequences in its chunked form (a saved state every CHUNK
   * tokens in `work`, then per-workgroup scratch): dqk (T, 2, Hv, dk) per value head, dv into the strided conv-gradient view, dgb (T, Hv, 2).
   */
  gatedDeltaBackward(rec: Recorder, a: {
    qk: GPUBuffer; v: GPUBuffer; gb: GPUBuffer; dout: GPUBuffer; seqTable: GPUBuffer; work: GPUBuffer; dqk: GPUBuffer; dv: GPUBuffer; dgb: GPUBuffer;
    seqs: number; tokens: number; hk: number; hv: number; dk: number; dvDim: number; chunk: number; threads: number; scratchOffset: number; vOffset: number; vStride: number;
    /** Chunks per saved segment state (deltaBackwardWork's seg). */
    seg: number;
  }): void {
    const groups = a.seqs * a.hv;
    rec.dispatch(
      this.internals.getPipeline('gated_delta_backward.wgsl', { DK: a.dk, DV: a.dvDim, CHUNK: a.chunk, NT: a.threads }),
      [a.qk, a.v, a.gb, a.dout, a.seqTable, a.work, a.dqk, a.dv, a.dgb],
      [a.seqs, a.tokens, a.hk, a.hv, a.scratchOffset, a.vOffset, a.vStride, a.vOffset, a.vStride, f32(1 / Math.sqrt(a.dk)), a.seg],
      [Math.min(groups, MAX_GROUPS), Math.ceil(groups / MAX_GROUPS), 1],
      'gated delta backward',
    );
  }

  /** l2norm over `heads` heads of n per token read at offset + t·stride: dx into the same strided view (dy summed over value-head groups). */
  l2normBackward(rec: Recorder, a: { x: GPUBuffer; inv: GPUBuffer; dy: GPUBuffer; dx: GPUBuffer; tokens: number; heads: number; n: number; offset: number; stride: number; group: number }): void {
    const rows = a.tokens * a.heads;
    rec.dispatch(this.internals.getPipeline('l2norm_backward.wgsl'), [a.x, a.inv, a.dy, a.dx], [rows, a.heads, a.n, a.offset, a.stride, a.group], groups1d(rows), 'l2norm backward');
  }

  /** g = −exp(A_log)·softplus(a + dt_bias), β = σ(b): da, db, and dA_log, ddt_bias accumulated. */
  deltaGatesBackward(rec: Recorder, a: { a: GPUBuffer; aLog: GPUBuffer; dtBias: GPUBuffer; gb: GPUBuffer; dgb: GPUBuffer; da: GPUBuffer; db: GPUBuffer; dALog: GPUBuffer; dDtBias: GPUBuffer; tokens: number; hv: number }): void {
    const storage = [a.a, a.aLog, a.dtBias, a.gb, a.dgb, a.da, a.db, a.dALog, a.dDtBias];
    const params = [a.tokens * a.hv, a.hv, 0, 0];
    rec.dispatch(this.internals.getPipeline('delta_gates_backward.wgsl', { PASS: 0 }), storage, params, groups1d(a.tokens * a.hv), 'delta gates backward');
    rec.dispatch(this.internals.getPipeline('delta_gates_backward.wgsl', { PASS: 1 }), storage, params, groups1d(a.hv), 'delta gates dA_log ddt_bias');
  }

  /** Causal depthwise conv + SiLU over packed sequences: dx (T, C) written, dw (C, K) accumulated; dpre is (T, C) scratch. */
  conv1dSiluBackward(rec: Recorder, a: { x: GPUBuffer; w: GPUBuffer; bounds: GPUBuffer; dy: GPUBuffer; dpre: GPUBuffer; dx: GPUBuffer; dw: GPUBuffer; tokens: number; channels: number; kernel: number }): void {
    const storage = [a.x, a.w, a.bounds, a.dy, a.dpre, a.dx, a.dw];
    const params = [a.tokens, a.channels, 0, 0];
    const n = a.tokens * a.channels;
    rec.dispatch(this.internals.getPipeline('conv1d_silu_backward.wgsl', { KSIZE: a.kernel, PASS: 0 }), storage, params, groups1d(n), 'conv1d dpre');
    rec.dispatch(this.internals.getPipeline('conv1d_silu_backward.wgsl', { KSIZE: a.kernel, PASS: 1 }), storage, params, groups1d(n), 'conv1d dx');
    rec.dispatch(this.internals.getPipeline('conv1d_silu_backward.wgsl', { KSIZE: a.kernel, PASS: 2 }), storage, params, groups1d(a.channels * a.kernel), 'conv1d dw');
  }

  /** Σ g² of one gradient tensor into partials[slot .. slot + groups). */
  gradSumSquares(rec: Recorder, grad: GPUBuffer, partials: GPUBuffer, result: GPUBuffer, count: number, slot: number, groups: number): void {
    rec.dispatch(this.internals.getPipeline('grad_norm.wgsl', { PASS: 0 }), [grad, partials, result], [count, slot, f32(0), 0], [groups, 1, 1], 'grad sumsq');
  }

  /** result = [global norm, clip coefficient]; maxNorm ≤ 0 disables clipping. */
  gradNormFinalize(rec: Recorder, grad: GPUBuffer, partials: GPUBuffer, result: GPUBuffer, slots: number, maxNorm: number): void {
    rec.dispatch(this.internals.getPipeline('grad_norm.wgsl', { PASS: 1 }), [grad, partials, result], [slots, 0, f32(maxNorm), 0], [1, 1, 1], 'grad norm');
  }

  adamw(rec: Recorder, a: {
    w: GPUBuffer; grad: GPUBuffer; m: GPUBuffer; v: GPUBuffer; normResult: GPUBuffer; count: number;
    lr: number; beta1: number; beta2: number; eps: number; weightDecay: number; stepSize: number; sqrtBc2: number;
  }): void {
    rec.dispatch(
      this.internals.getPipeline('adamw.wgsl'),
      [a.w, a.grad, a.m, a.v, a.normResult],
      [a.count, f32(a.lr), f32(a.beta1), f32(a.beta2), f32(a.eps), f32(a.weightDecay), f32(a.stepSize), f32(a.sqrtBc2)],
      groups1d(a.count),
      'adamw',
    );
  }
}
