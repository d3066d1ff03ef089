// One optimizer step on the GPU, with PyTorch/TRL semantics: clip_grad_norm_ (global L2 norm over
// every trainable gradient, computed on the GPU; one scalar pair comes back) then torch.optim.AdamW
// with bias correction and decoupled weight decay (not applied to norm weights, as transformers'
// Trainer groups them). Gradients are zeroed afterwards, ready to accumulate the next step.

import { sumsqGroups } from '../memory-plan.ts';
import type { EngineInternals } from '../internals.ts';
import type { Recorder } from '../recorder.ts';
import type { OptimizerConfig, StepResult } from '../types.ts';
import type { TrainOps } from './ops.ts';
import type { TrainableSet } from './trainable.ts';

/** Workgroups reducing one gradient tensor (each covers a strided slice). */

export function checkOptimizerConfig(opt: OptimizerConfig): void {
  const nonNeg = (k: keyof OptimizerConfig) => {
    if (!(opt[k] >= 0)) throw new Error(`optimizer: ${k} must be ≥ 0, got ${opt[k]}`);
  };
  nonNeg('learningRate');
  nonNeg('weightDecay');
  nonNeg('maxGradNorm');
  for (const k of ['beta1', 'beta2'] as const) {
    if (!(opt[k] >= 0 && opt[k] < 1)) throw new Error(`optimizer: ${k} must be in [0, 1), got ${opt[k]}`);
  }
  if (!(opt.eps > 0)) throw new Error(`optimizer: eps must be > 0, got ${opt.eps}`);
}

export class Optimizer {
  step = 0;
  private readonly partials: GPUBuffer; // (slots) per-workgroup Σg²
  private readonly result: GPUBuffer; //   [norm, clip coefficient]
  private readonly slots: { groups: number; slot: number }[][]; // per tensor, per chunk
  private readonly totalSlots: number;

  constructor(private readonly internals: EngineInternals, private readonly ops: TrainOps, private readonly trainable: TrainableSet) {
    let slot = 0;
    this.slots = trainable.tensors.map((t) =>
      t.chunks.map((c) => {
        const groups = sumsqGroups(c.count);
        const s = { groups, slot };
        slot += groups;
        return s;
      }),
    );
    this.totalSlots = slot;
    this.partials = internals.createBuffer('grad norm partials', slot * 4); // planned by memory-plan.ts (gradient norm scratch)
    this.result = internals.createBuffer('grad norm result', 16);
  }

  /** Records the global gradient norm into this.result. */
  private encodeGradNorm(rec: Recorder, maxGradNorm: number): void {
    this.trainable.tensors.forEach((t, ti) =>
      t.chunks.forEach((c, ci) => {
        const s = this.slots[ti]![ci]!;
        this.ops.gradSumSquares(rec, c.grad, this.partials, this.result, c.count, s.slot, s.groups);
      }),
    );
    const anyGrad = this.trainable.tensors[0]!.chunks[0]!.grad;
    // clip_grad_norm_ with max_norm 0 or inf leaves the gradients as they are.
    const maxNorm = maxGradNorm > 0 && Number.isFinite(maxGradNorm) ? maxGradNorm : 0;
    this.ops.gradNormFinalize(rec, anyGrad, this.partials, this.result, this.totalSlots, maxNorm);
  }

  async apply(opt: OptimizerConfig): Promise<StepResult> {
    checkOptimizerConfig(opt);
    const t = this.step + 1;
    const bc1 = 1 - Math.pow(opt.beta1, t);
    const bc2 = 1 - Math.pow(opt.beta2, t);
    const rec = this.internals.recorder(`optimizer step ${t}`);
    this.encodeGradNorm(rec, opt.maxGradNorm);
    for (const tensor of this.trainable.tensors) {
      for (const c of tensor.chunks) {
        this.ops.adamw(rec, {
          w: c.weight, grad: c.grad, m: c.m, v: c.v, normResult: this.result, count: c.count,
          lr: opt.learningRate, beta1: opt.beta1, beta2: opt.beta2, eps: opt.eps,
          weightDecay: tensor.decays ? opt.weightDecay : 0,
          stepSize: opt.learningRate / bc1, sqrtBc2: Math.sqrt(bc2),
        });
      }
    }
    this.encodeZeroGrad(rec);
    rec.read(this.result, 0, 8);
    const [buf] = await rec.submit();
    const gradNorm = new Float32Array(buf!)[0]!;
    this.step = t;
    return { gradNorm, step: t };
  }

  encodeZeroGrad(rec: Recorder): void {
    for (const tensor of this.trainable.tensors) for (const c of tensor.chunks) rec.clear(c.grad);
  }

  destroy(): void {
    this.partials.destroy();
    this.result.destroy();
  }
}
