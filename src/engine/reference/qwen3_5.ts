// Qwen3.5's Gated DeltaNet block (transformers' Qwen3_5GatedDeltaNet) in float64, forward and backward
// side by side; the rest of the model is qwen3.ts, which calls these for linear_attention layers. The
// layer math and its per-token formulas are in qwen3_5-layers.ts.

import type { ModelConfig } from '../../model/types.ts';
import type { ModelLinear } from '../../model/qwen3-tensors.ts';
import {
  conv1d_silu_backward,
  conv1d_silu_forward,
  deltanet_gates_backward,
  deltanet_gates_forward,
  gated_delta_backward,
  gated_delta_forward,
  gated_rmsnorm_backward,
  gated_rmsnorm_forward,
  l2norm_backward,
  l2norm_forward,
} from './qwen3_5-layers.ts';
import type { MropePositions } from './layers.ts';

/** What a block needs from the model: its weights and the (LoRA-aware) linears of layer l. */
export interface ForwardContext {
  cfg: ModelConfig;
  T: number;
  get(name: string): Float64Array;
  lin(out: Float64Array, inp: Float64Array, l: number, t: ModelLinear, I: number, O: number): void;
  /** The M-RoPE position ids of a sequence with images; undefined: plain rope by token index. */
  mrope?: MropePositions;
}

export interface BackwardContext extends ForwardContext {
  /** The gradient buffer of a base weight, or null when base grads are not wanted. */
  grad(name: string): Float64Array | null;
  /** linear_backward of layer l's linear t (base and LoRA grads), accumulating into dinp. */
  linBack(dinp: Float64Array, dout: Float64Array, inp: Float64Array, l: number, t: ModelLinear, I: number, O: number): void;
}

export interface DeltaNetActs {
  kind: 'deltanet';
  qkvProj: Float64Array; // (T, C) in_proj_qkv output, C = 2·Hk·dk + Hv·dv
  convPre: Float64Array; // (T, C) conv output before SiLU
  qkv: Float64Array; // (T, C) after SiLU: [q (Hk·dk) | k (Hk·dk) | v (Hv·dv)] per token
  qn: Float64Array; // (T·Hk, dk) l2-normalized q
  qRnorm: Float64Array; // (T·Hk)
  kn: Float64Array; // (T·Hk, dk)
  kRnorm: Float64Array; // (T·Hk)
  qRep: Float64Array; // (T, Hv·dk) qn repeated to the value heads
  kRep: Float64Array; // (T, Hv·dk)
  v: Float64Array; // (T, Hv·dv)
  z: Float64Array; // (T, Hv·dv) in_proj_z output (the norm's gate)
  b: Float64Array; // (T, Hv)
  a: Float64Array; // (T, Hv)
  beta: Float64Array; // (T, Hv)
  g: Float64Array; // (T, Hv)
  states: Float64Array; // (T+1, Hv, dk, dv)
  o: Float64Array; // (T, Hv·dv) delta-rule output
  normRstd: Float64Array; // (T·Hv)
  y: Float64Array; // (T, Hv·dv) gated norm output, out_proj input
}

function dims(cfg: ModelConfig) {
  const la = cfg.linearAttention;
  if (!la) throw new Error(`reference model: layer type linear_attention needs linearAttention dimensions (a ${cfg.architecture} config has none)`);
  const { numKeyHeads: Hk, numValueHeads: Hv, keyHeadDim: dk, valueHeadDim: dv, convKernelDim: W } = la;
  return { Hk, Hv, dk, dv, W, C: 2 * Hk * dk + Hv * dv, rep: Hv / Hk };
}

export function deltanet_block_forward(
  ctx: ForwardContext,
  l: number,
  ln1: Float64Array, // (T, D)
  out: Float64Array, // (T, D)
): DeltaNetActs {
  const { cfg, T, get, lin } = ctx;
  const D = cfg.hiddenSize;
  const { Hk, Hv, dk, dv, W, C, rep } = dims(cfg);
  const p = `model.layers.${l}.linear_attn`;
  const a: DeltaNetActs = {
    kind: 'deltanet',
    qkvProj: new Float64Array(T * C),
    convPre: new Float64Array(T * C),
    qkv: new Float64Array(T * C),
    qn: new Float64Array(T * Hk * dk),
    qRnorm: new Float64Array(T * Hk),
    kn: new Float64Array(T * Hk * dk),
    kRnorm: new Float64Array(T * Hk),
    qRep: new Float64Array(T * Hv * dk),
    kRep: new Float64Array(T * Hv * dk),
    v: new Float64Array(T * Hv * dv),
    z: new Float64Array(T * Hv * dv),
    b: new Float64Array(T * Hv),
    a: new Float64Array(T * Hv),
    beta: new Float64Array(T * Hv),
    g: new Float64Array(T * Hv),
    states: new Float64Array((T + 1) * Hv * dk * dv),
    o: new Float64Array(T * Hv * dv),
    normRstd: new Float64Array(T * Hv),
    y: new Float64Array(T * Hv * dv),
  };
  lin(a.qkvProj, ln1, l, 'in_proj_qkv', D, C);
  lin(a.z, ln1, l, 'in_proj_z', D, Hv * dv);
  lin(a.b, ln1, l, 'in_proj_b', D, Hv);
  lin(a.a, ln1, l, 'in_proj_a', D, Hv);
  conv1d_silu_forward(a.qkv, a.convPre, a.qkvProj, get(`${p}.conv1d.weight`), T, C, W);
  const qc = new Float64Array(T * Hk * dk); // (T, Hk·dk)
  const kc = new Float64Array(T * Hk * dk); // (T, Hk·dk)
  split_qkv(qc, kc, a.v, a.qkv, T, Hk * dk, Hv * dv);
  l2norm_forward(a.qn, a.qRnorm, qc, T * Hk, dk);
  l2norm_forward(a.kn, a.kRnorm, kc, T * Hk, dk);
  repeat_heads(a.qRep, a.qn, T, Hk, rep, dk);
  repeat_heads(a.kRep, a.kn, T, Hk, rep, dk);
  deltanet_gates_forward(a.beta, a.g, a.b, a.a, get(`${p}.A_log`), get(`${p}.dt_bias`), T, Hv);
  gated_delta_forward(a.o, a.states, a.qRep, a.kRep, a.v, a.g, a.beta, T, Hv, dk, dv);
  gated_rmsnorm_forward(a.y, a.normRstd, a.o, a.z, get(`${p}.norm.weight`), T * Hv, dv, cfg.rmsNormEps);
  lin(out, a.y, l, 'out_proj', Hv * dv, D);
  return a;
}

export function deltanet_block_backward(
  ctx: BackwardContext,
  l: number,
  ln1: Float64Array, // (T, D)
  a: DeltaNetActs,
  dout: Float64Array, // (T, D)
  dln1: Float64Array, // (T, D) accumulated
): void {
  const { cfg, T, get, grad, linBack } = ctx;
  const D = cfg.hiddenSize;
  const { Hk, Hv, dk, dv, W, C, rep } = dims(cfg);
  const p = `model.layers.${l}.linear_attn`;
  const dy = new Float64Array(T * Hv * dv);
  linBack(dy, dout, a.y, l, 'out_proj', Hv * dv, D);
  const dO = new Float64Array(T * Hv * dv);
  const dz = new Float64Array(T * Hv * dv);
  gated_rmsnorm_backward(dO, dz, grad(`${p}.norm.weight`), dy, a.o, a.z, get(`${p}.norm.weight`), a.normRstd, T * Hv, dv);
  const dqRep = new Float64Array(T * Hv * dk);
  const dkRep = new Float64Array(T * Hv * dk);
  const dv_ = new Float64Array(T * Hv * dv);
  const dg = new Float64Array(T * Hv);
  const dbeta = new Float64Array(T * Hv);
  gated_delta_backward(dqRep, dkRep, dv_, dg, dbeta, dO, a.states, a.qRep, a.kRep, a.v, a.g, a.beta, T, Hv, dk, dv);
  const db = new Float64Array(T * Hv);
  const da = new Float64Array(T * Hv);
  deltanet_gates_backward(db, da, grad(`${p}.A_log`), grad(`${p}.dt_bias`), dbeta, dg, a.beta, a.g, a.a, get(`${p}.A_log`), get(`${p}.dt_bias`), T, Hv);
  const dqn = new Float64Array(T * Hk * dk);
  const dkn = new Float64Array(T * Hk * dk);
  repeat_heads_backward(dqn, dqRep, T, Hk, rep, dk);
  repeat_heads_backward(dkn, dkRep, T, Hk, rep, dk);
  const qc = new Float64Array(T * Hk * dk);
  const kc = new Float64Array(T * Hk * dk);
  const vc = new Float64Array(T * Hv * dv);
  split_qkv(qc, kc, vc, a.qkv, T, Hk * dk, Hv * dv);
  const dqc = new Float64Array(T * Hk * dk);
  const dkc = new Float64Array(T * Hk * dk);
  l2norm_backward(dqc, dqn, qc, a.qRnorm, T * Hk, dk);
  l2norm_backward(dkc, dkn, kc, a.kRnorm, T * Hk, dk);
  const dqkv = new Float64Array(T * C);
  join_qkv(dqkv, dqc, dkc, dv_, T, Hk * dk, Hv * dv);
  const dqkvProj = new Float64Array(T * C);
  conv1d_silu_backward(dqkvProj, grad(`${p}.conv1d.weight`), dqkv, a.convPre, a.qkvProj, get(`${p}.conv1d.weight`), T, C, W);
  linBack(dln1, dqkvProj, ln1, l, 'in_proj_qkv', D, C);
  linBack(dln1, dz, ln1, l, 'in_proj_z', D, Hv * dv);
  linBack(dln1, db, ln1, l, 'in_proj_b', D, Hv);
  linBack(dln1, da, ln1, l, 'in_proj_a', D, Hv);
}

/** Rows of [q (Q) | k (Q) | v (Vw)] → q, k, v. */
function split_qkv(q: Float64Array, k: Float64Array, v: Float64Array, qkv: Float64Array, T: number, Q: number, Vw: number): void {
  const C = 2 * Q + Vw;
  for (let t = 0; t < T; t++) {
    q.set(qkv.subarray(t * C, t * C + Q), t * Q);
    k.set(qkv.subarray(t * C + Q, t * C + 2 * Q), t * Q);
    v.set(qkv.subarray(t * C + 2 * Q, (t + 1) * C), t * Vw);
  }
}

function join_qkv(qkv: Float64Array, q: Float64Array, k: Float64Array, v: Float64Array, T: number, Q: number, Vw: number): void {
  const C = 2 * Q + Vw;
  for (let t = 0; t < T; t++) {
    qkv.set(q.subarray(t * Q, (t + 1) * Q), t * C);
    qkv.set(k.subarray(t * Q, (t + 1) * Q), t * C + Q);
    qkv.set(v.subarray(t * Vw, (t + 1) * Vw), t * C + 2 * Q);
  }
}

/** repeat_interleave over heads: value head h reads key head ⌊h / rep⌋. (T, Hk·d) → (T, Hk·rep·d). */
function repeat_heads(out: Float64Array, inp: Float64Array, T: number, Hk: number, rep: number, d: number): void {
  const Hv = Hk * rep;
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < Hv; h++) out.set(inp.subarray((t * Hk + Math.floor(h / rep)) * d, (t * Hk + Math.floor(h / rep) + 1) * d), (t * Hv + h) * d);
  }
}

function repeat_heads_backward(dinp: Float64Array, dout: Float64Array, T: number, Hk: number, rep: number, d: number): void {
  const Hv = Hk * rep;
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < Hv; h++) {
      const src = (t * Hv + h) * d;
      const dst = (t * Hk + Math.floor(h / rep)) * d;
      for (let i = 0; i < d; i++) dinp[dst + i] += dout[src + i];
    }
  }
}
