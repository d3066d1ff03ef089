// Reference optimizer step in float64, with the semantics the engine must reproduce:
// torch.nn.utils.clip_grad_norm_ then torch.optim.AdamW, and transformers' learning-rate schedules.

import type { OptimizerConfig } from '../types.ts';

export type ParamMap = Map<string, Float64Array>;

export interface RefAdamWState {
  /** Optimizer steps taken so far (bias correction uses step + 1 on the next step). */
  step: number;
  m: ParamMap; // first moments, created on first use
  v: ParamMap; // second moments, created on first use
}

export function newRefAdamWState(): RefAdamWState {
  return { step: 0, m: new Map(), v: new Map() };
}

/** L2 norm over all gradients together (clip_grad_norm_'s total_norm with norm_type 2). */
export function globalGradNorm(grads: ParamMap): number {
  let ss = 0;
  for (const g of grads.values()) for (let i = 0; i < g.length; i++) ss += g[i] * g[i];
  return Math.sqrt(ss);
}

/**
 * clip_grad_norm_: scales every gradient in place by clip_coef = maxNorm / (norm + 1e-6) when that
 * is < 1. maxNorm 0 or Infinity turns clipping off. Returns the norm BEFORE clipping.
 */
export function clipGradNorm(grads: ParamMap, maxNorm: number): number {
  if (!(maxNorm >= 0)) throw new Error(`clipGradNorm: max_grad_norm must be ≥ 0, got ${maxNorm}`);
  const norm = globalGradNorm(grads);
  if (maxNorm === 0 || maxNorm === Infinity) return norm;
  const clipCoef = maxNorm / (norm + 1e-6);
  if (clipCoef < 1) for (const g of grads.values()) for (let i = 0; i < g.length; i++) g[i] *= clipCoef;
  return norm;
}

// transformers' Trainer exempts biases and norm weights from weight decay by these name patterns, and
// every parameter of an nn.LayerNorm module by its type: the vision tower's blocks.N.norm1/norm2 (the
// last pattern; its merger.norm matches by name).
const NO_DECAY_PATTERNS = [/bias/, /layernorm/, /rmsnorm/, /(?:^|\.)norm(?:$|\.)/, /_norm(?:$|\.)/, /^model\.visual\.blocks\.\d+\.norm[12]\./];

/** Whether transformers' Trainer applies weight decay to a parameter of this (HF) name. */
export function transformersDecays(name: string): boolean {
  const lower = name.toLowerCase();
  return !NO_DECAY_PATTERNS.some((re) => re.test(lower));
}

/**
 * One torch.optim.AdamW step (amsgrad off, maximize off), in place on `params`:
 *   p ← p − lr·wd·p                      (decoupled decay, before the moment update)
 *   m ← β1·m + (1−β1)·g,   v ← β2·v + (1−β2)·g²
 *   p ← p − lr/(1−β1ᵗ) · m / (√v/√(1−β2ᵗ) + eps)      (eps outside the square root)
 * Weight decay applies to the parameters for which `decays(name)` is true.
 */
export function adamwStep(
  params: ParamMap,
  grads: ParamMap,
  state: RefAdamWState,
  opt: Pick<OptimizerConfig, 'learningRate' | 'beta1' | 'beta2' | 'eps' | 'weightDecay'>,
  decays: (name: string) => boolean = transformersDecays,
): void {
  const { learningRate: lr, beta1, beta2, eps, weightDecay } = opt;
  state.step += 1;
  const t = state.step;
  const biasCorrection1 = 1 - Math.pow(beta1, t);
  const biasCorrection2Sqrt = Math.sqrt(1 - Math.pow(beta2, t));
  const stepSize = lr / biasCorrection1;
  for (const [name, p] of params) {
    const g = grads.get(name);
    if (!g) throw new Error(`adamwStep: no gradient for parameter "${name}"`);
    if (g.length !== p.length) throw new Error(`adamwStep: gradient of "${name}" has ${g.length} values, parameter has ${p.length}`);
    const m = getOrZeros(state.m, name, p.length);
    const v = getOrZeros(state.v, name, p.length);
    const wd = decays(name) ? weightDecay : 0;
    for (let i = 0; i < p.length; i++) {
      p[i] *= 1 - lr * wd;
      m[i] = beta1 * m[i] + (1 - beta1) * g[i];
      v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
      p[i] -= (stepSize * m[i]) / (Math.sqrt(v[i]) / biasCorrection2Sqrt + eps);
    }
  }
}

/**
 * Engine.step() semantics: clip the gradients (in place) to opt.maxGradNorm, then one AdamW step.
 * Returns the gradient norm before clipping and the new step count.
 */
export function refOptimizerStep(
  params: ParamMap,
  grads: ParamMap,
  state: RefAdamWState,
  opt: OptimizerConfig,
  decays: (name: string) => boolean = transformersDecays,
): { gradNorm: number; step: number } {
  const gradNorm = clipGradNorm(grads, opt.maxGradNorm);
  adamwStep(params, grads, state, opt, decays);
  return { gradNorm, step: state.step };
}

function getOrZeros(m: ParamMap, name: string, n: number): Float64Array {
  let a = m.get(name);
  if (!a) {
    a = new Float64Array(n);
    m.set(name, a);
  }
  return a;
}

// ---------------------------------------------------------------------------------------------
// Learning-rate schedules (transformers' get_scheduler, as TRL uses them).

export type LrSchedulerType = 'constant' | 'linear' | 'constant_with_warmup';

export interface LrSchedule {
  lrSchedulerType: LrSchedulerType;
  learningRate: number;
  /** Optimizer steps of the whole run (num_training_steps). */
  totalSteps: number;
  /** warmup_steps; a value in (0, 1) is a ratio of totalSteps (transformers ≥ 5). Wins over warmupRatio when > 0. */
  warmupSteps?: number;
  /** warmup_ratio: warmup = ceil(totalSteps · ratio) when warmupSteps is 0. */
  warmupRatio?: number;
}

/** transformers' TrainingArguments.get_warmup_steps. */
export function warmupStepsOf(s: LrSchedule): number {
  const steps = s.warmupSteps ?? 0;
  const ratio = s.warmupRatio ?? 0;
  if (!(steps >= 0) || !(ratio >= 0) || ratio > 1) throw new Error(`lr schedule: warmup_steps (${steps}) must be ≥ 0 and warmup_ratio (${ratio}) in [0, 1]`);
  if (steps >= 1) return Math.floor(steps);
  if (steps > 0) return Math.ceil(s.totalSteps * steps);
  return Math.ceil(s.totalSteps * ratio);
}

/**
 * Learning rate of the optimizer step that follows `completed` steps (LambdaLR: the first step
 * uses λ(0)). linear: warm up from 0, then decay linearly to 0 at totalSteps.
 */
export function lrAt(s: LrSchedule, completed: number): number {
  if (!Number.isInteger(s.totalSteps) || s.totalSteps < 1) throw new Error(`lr schedule: totalSteps must be a positive integer, got ${s.totalSteps}`);
  if (!Number.isInteger(completed) || completed < 0) throw new Error(`lr schedule: step must be a non-negative integer, got ${completed}`);
  const warmup = warmupStepsOf(s);
  const inWarmup = completed < warmup;
  const warmupFactor = completed / Math.max(1, warmup);
  switch (s.lrSchedulerType) {
    case 'constant':
      return s.learningRate;
    case 'constant_with_warmup':
      return s.learningRate * (inWarmup ? warmupFactor : 1);
    case 'linear':
      return s.learningRate * (inWarmup ? warmupFactor : Math.max(0, (s.totalSteps - completed) / Math.max(1, s.totalSteps - warmup)));
    default:
      throw new Error(`lr schedule: unknown lr_scheduler_type "${String(s.lrSchedulerType)}" (expected constant, linear or constant_with_warmup)`);
  }
}
