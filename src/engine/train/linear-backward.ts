// The backward of one linear y = x·Wᵀ (+ scale·B·(A·x)) over `rows` rows, shared by the language
// model's layers (backward.ts) and the vision tower's (vision-backward.ts):
//   dX (+)= dY·W (+ du·A),  du = scale·dY·B,  dB += scale·dYᵀ·(x·Aᵀ),  dA += duᵀ·x,  dW += dYᵀ·x (full),
//   db += Σ_rows dY (full, the tower's biased linears).

import type { ParamEntry } from '../internals.ts';
import type { Recorder } from '../recorder.ts';
import type { TrainOps } from './ops.ts';
import type { LoraParams } from './trainable.ts';

export interface LinearBackwardArgs {
  w: ParamEntry; //              (out, in) frozen or full-trained weight
  x: GPUBuffer; //               (rows, in) the linear's input
  dy: GPUBuffer; //              (rows, out)
  /** (rows, in) input gradient; null = not needed (nothing below it is trained). */
  dx: GPUBuffer | null;
  /** dx += … (true) or dx = … (false). */
  accumulate: boolean;
  rows: number;
  /** Full fine-tuning: W's gradient chunks. */
  dw: GPUBuffer[] | null;
  /** Full fine-tuning of a linear with a bias (the vision tower's): its (out) gradient. */
  db?: GPUBuffer | null;
  lora: LoraParams | undefined;
  /** (rows, r) scratch for x·Aᵀ and dL/d(x·Aᵀ) (unused without lora). */
  u: GPUBuffer | null;
  du: GPUBuffer | null;
}

export function linearBackward(ops: TrainOps, rec: Recorder, a: LinearBackwardArgs): void {
  const { rows: T, x, dy } = a;
  if (a.dx) ops.linearDx(rec, a.w, dy, a.dx, T, a.accumulate);
  if (a.dw) ops.linearDw(rec, a.w, a.dw, dy, x, T);
  if (a.db) ops.biasBackward(rec, dy, a.db, T, a.w.shape[0]!);
  const lora = a.lora;
  if (!lora) return;
  const { r, scale } = lora.adapter;
  const inp = lora.inFeatures;
  const out = lora.outFeatures;
  const u = a.u!;
  const du = a.du!;
  // u = x·Aᵀ (T, r)
  ops.gemm(rec, { M: T, N: r, K: inp, a: x, lda: inp, b: lora.adapter.a, ldb: inp, bTransposed: true, c: u, ldc: r, accumulate: false });
  // dB += scale · dYᵀ·u (out, r)
  ops.gemm(rec, { M: out, N: r, K: T, a: dy, lda: out, aTransposed: true, b: u, ldb: r, c: lora.b.chunks[0]!.grad, ldc: r, accumulate: true, alpha: scale });
  // du = scale · dY·B (T, r)
  ops.gemm(rec, { M: T, N: r, K: out, a: dy, lda: out, b: lora.adapter.b, ldb: r, c: du, ldc: r, accumulate: false, alpha: scale });
  // dA += duᵀ·x (r, in)
  ops.gemm(rec, { M: r, N: inp, K: T, a: du, lda: r, aTransposed: true, b: x, ldb: inp, c: lora.a.chunks[0]!.grad, ldc: inp, accumulate: true });
  // dX += du·A (T, in)
  if (a.dx) ops.gemm(rec, { M: T, N: inp, K: r, a: du, lda: r, b: lora.adapter.a, ldb: inp, c: a.dx, ldc: inp, accumulate: true });
}
