// `webgrpo bench train --vision on`: one LoRA training step of a Qwen3.5 vision-language model, with
// images in every sequence, and what its vision tower costs inside it. Two arms on the same model and
// the same images (each on a freshly loaded engine, so each arm's allocations are its own):
//   frozen  LoRA on every linear of the language model; the tower runs its forward once per step and
//           its output enters the packed batch as constants;
//   lora    the same + LoRA on every tower linear (VISION_LORA_TARGETS): the tower's training forward
//           keeps each block's input, and after the language model's backward its own backward runs
//           from the image tokens' rows of dL/dx_0, block by block with recompute (vision-backward.ts).
// Per arm: the step's wall time (median of `steps`, after a compiling warm-up), then `reps` profiled steps
// (per dispatch the fastest) whose dispatches are split by phase (phaseOf) into tower forward / tower backward / language model /
// optimizer shares of GPU time (timestamp-query per dispatch where the adapter has it, else each
// dispatch submitted alone and CPU-timed: the same method for every phase, so the shares are ratios
// within one run); the GEMM FLOPs of each part (towerStepFlops + the text bench's trainStepFlops); the
// bytes allocated against the memory plan's tower items.
//
// Sequence layout (visionTrainBatch): one text token, then `images` images each as <|vision_start|>,
// its (h/32)·(w/32) <|image_pad|> tokens, <|vision_end|>, then the rest of seqLen text tokens, whose
// second half is scored (the completion). M-RoPE positions as transformers' get_rope_index.
//
// Options beside the train bench's own (model shape, r, alpha, batch, seqLen, steps, weights):
//   vision         on (this bench); the generated model is a Qwen3.5 VL (--arch qwen3_5)
//   visionDepth, visionHidden, visionIntermediate, visionHeads, visionPositions   the tower (default Qwen3.5-0.8B's)
//   images         images per sequence (default 1)
//   imageSize      WxH pixels of every image, multiples of patch·merge = 32 (default 256x256)
//   tower          frozen | lora | both (default both)
//   reps           profiled steps per arm (default 2): per dispatch the fastest counts

import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import { planMemory, type TrainingMode } from '../../src/engine/memory-plan.ts';
import type { DispatchTiming } from '../../src/engine/recorder.ts';
import type { ScoreSequence } from '../../src/engine/types.ts';
import { patchValues } from '../../src/engine/vision/config.ts';
import type { GridThw } from '../../src/engine/vision/inputs.ts';
import type { Checkpoint, VisionConfig } from '../../src/model/types.ts';
import { modelLinears } from '../../src/model/qwen3-tensors.ts';
import { VISION_LORA_TARGETS, visionAdaptedLinears } from '../../src/model/qwen3_5-vision-tensors.ts';
import { mropePositionIds } from '../../src/vision/image-prompt.ts';
import { benchCheckpoint, matmulPeak, median, num, peakName, timedTrainStep } from './common.ts';
import { recordBufferBytes } from './gpu-counter.ts';
import { profileRun } from './profile.ts';
import { trainStepFlops } from './train-step.ts';

/** GEMM FLOPs of the tower in one training step (FLOPs of 2·M·N·K per product, as trainStepFlops). */
export interface TowerFlops {
  /** The forward: patch embedding, every block's 4 linears, the merger's 2 (+ the LoRA factor products when trained). */
  forward: number;
  /** LoRA on every tower linear: per block the recomputed forward, dX and the LoRA products; the merger's; 0 when frozen. */
  backward: number;
  /** Attention score and value products of one forward (4·n²·D per block and frame of n patches): not in forward, like the text bench leaves attention out. */
  attentionForward: number;
}

/**
 * The tower's GEMM FLOPs for images of `grids` in one step: frozen (`trained` false) it runs its
 * forward once; with LoRA of rank r on every tower linear (VISION_LORA_TARGETS) the forward adds the
 * factor products, and the backward recomputes each block, then runs dX for every linear but the
 * lowest block's qkv (nothing below it is trained) and the LoRA products (u, dB, du, dA, + du·A where
 * dX is needed). Patch embedding and positions are frozen and below every adapter: no backward.
 */
export function towerStepFlops(v: VisionConfig, grids: readonly GridThw[], r: number, trained: boolean): TowerFlops {
  const D = v.hiddenSize;
  const F = v.intermediateSize;
  const M = D * v.spatialMergeSize ** 2;
  const O = v.outHiddenSize;
  const S = grids.reduce((a, [t, h, w]) => a + t * h * w, 0);
  const G = S / v.spatialMergeSize ** 2;
  const gemm = (rows: number, inp: number, out: number) => 2 * rows * inp * out;
  const loraForward = (rows: number, inp: number, out: number) => (trained ? 2 * rows * r * (inp + out) : 0);
  // LoRA backward of one linear: u = x·Aᵀ, dB, du, dA (2·rows·r·(2·in + 2·out)), and du·A into dX when it is needed.
  const loraBackward = (rows: number, inp: number, out: number, dx: boolean) => 2 * rows * r * (2 * inp + 2 * out + (dx ? inp : 0));
  const blockLinears: [number, number][] = [[D, 3 * D], [D, D], [D, F], [F, D]]; // qkv, proj, fc1, fc2 as [in, out]
  const blockForward = blockLinears.reduce((a, [i, o]) => a + gemm(S, i, o) + loraForward(S, i, o), 0);
  const mergerLinears: [number, number][] = [[M, M], [M, O]];
  const forward = gemm(S, patchValues(v), D) + v.depth * blockForward + mergerLinears.reduce((a, [i, o]) => a + gemm(G, i, o) + loraForward(G, i, o), 0);
  let backward = 0;
  if (trained) {
    backward += mergerLinears.reduce((a, [i, o]) => a + gemm(G, o, i) + loraBackward(G, i, o, true), 0);
    for (let b = 0; b < v.depth; b++) {
      backward += blockForward; // the block's forward, recomputed from its kept input
      blockLinears.forEach(([i, o], k) => {
        const dx = !(b === 0 && k === 0); // block 0's qkv: nothing below it is trained
        backward += (dx ? gemm(S, o, i) : 0) + loraBackward(S, i, o, dx);
      });
    }
  }
  const attentionForward = v.depth * grids.reduce((a, [t, h, w]) => a + t * 4 * (h * w) ** 2 * D, 0);
  return { forward, backward, attentionForward };
}

/** Where a profiled dispatch of a training step belongs (by its recorder and, in the forward's recorder, its label). */
export type Phase = 'tower forward' | 'tower backward' | 'language model' | 'optimizer';

/**
 * The backward call's dispatches by phase: the tower's forward is recorded inside the language model's
 * forward ('train forward + LM head backward') with `visual …` labels (tower.ts); its backward, recompute
 * included, in the `train vision …` recorders (vision-backward.ts). Everything else of engine.backward
 * is the language model's (its forward, LM head, layer backwards, the image splice and gather).
 */
export function phaseOf(d: Pick<DispatchTiming, 'recorder' | 'label'>): Exclude<Phase, 'optimizer'> {
  if (d.recorder.startsWith('train vision ')) return 'tower backward';
  if (d.recorder === 'train forward + LM head backward' && d.label.startsWith('visual ')) return 'tower forward';
  return 'language model';
}

export interface PhaseTime {
  ms: number;
  share: number;
  dispatches: number;
  /** GPU ms per WGSL file within the phase, the largest first. */
  kernels: Record<string, number>;
}

/** Each phase's GPU ms and share of the step's GPU time (dispatches of engine.backward, then of engine.step). */
export function phaseShares(backward: readonly DispatchTiming[], optimizer: readonly DispatchTiming[]): Record<Phase, PhaseTime> {
  const phases: Phase[] = ['tower forward', 'tower backward', 'language model', 'optimizer'];
  const acc = Object.fromEntries(phases.map((p) => [p, { ms: 0, share: 0, dispatches: 0, kernels: new Map<string, number>() }]));
  const add = (p: Phase, d: DispatchTiming) => {
    const a = acc[p]!;
    a.ms += d.ms;
    a.dispatches++;
    a.kernels.set(d.file, (a.kernels.get(d.file) ?? 0) + d.ms);
  };
  for (const d of backward) add(phaseOf(d), d);
  for (const d of optimizer) add('optimizer', d);
  const total = phases.reduce((a, p) => a + acc[p]!.ms, 0);
  return Object.fromEntries(phases.map((p) => {
    const a = acc[p]!;
    return [p, { ms: a.ms, share: total > 0 ? a.ms / total : 0, dispatches: a.dispatches, kernels: Object.fromEntries([...a.kernels].sort((x, y) => y[1] - x[1])) }];
  })) as Record<Phase, PhaseTime>;
}

/** Repeats of the same recorded work (same dispatch list): per dispatch the fastest. */
export function fastestDispatches(runs: readonly DispatchTiming[][]): DispatchTiming[] {
  const n = runs[0]!.length;
  for (const r of runs) if (r.length !== n) throw new Error(`bench train --vision: profiled repeats recorded ${r.length} and ${n} dispatches`);
  return runs[0]!.map((_, i) => runs.reduce((best, r) => (r[i]!.ms < best.ms ? r[i]! : best), runs[0]![i]!));
}

/** `WxH` pixels → the image's (t, h, w) patch grid: one image is one temporal patch (the processor repeats it over temporal_patch_size frames). */
export function imageGrid(v: VisionConfig, size: string): GridThw {
  const m = /^(\d+)x(\d+)$/.exec(size);
  const unit = v.patchSize * v.spatialMergeSize;
  if (!m || Number(m[1]) % unit !== 0 || Number(m[2]) % unit !== 0 || Number(m[1]) === 0 || Number(m[2]) === 0) {
    throw new Error(`bench train: --imageSize must be WxH with W and H positive multiples of patch × merge = ${unit}, got '${size}'`);
  }
  return [1, Number(m[2]) / v.patchSize, Number(m[1]) / v.patchSize];
}

/**
 * B sequences of seqLen text tokens with `images` images of `grid` after the first token (layout in
 * the header), the last ⌊seqLen/2⌋ text tokens scored with a mean-loss gradient -1/Ts, and a small
 * AdamW step. Pixel values are deterministic numbers in [-1, 1] (the processor's normalized range).
 */
export function visionTrainBatch(v: VisionConfig, B: number, seqLen: number, images: number, grid: GridThw) {
  const [t, h, w] = grid;
  const perImage = (t * h * w) / v.spatialMergeSize ** 2;
  const P = patchValues(v);
  if (seqLen < 2) throw new Error(`bench train: --seqLen must be at least 2 with images (a prompt token and a completion), got ${seqLen}`);
  const completion = Math.floor(seqLen / 2);
  const sequences: ScoreSequence[] = Array.from({ length: B }, (_, b) => {
    // Byte-level ids below every special token: a text token never reads as an image placeholder.
    const text = Array.from({ length: seqLen }, (_, i) => (i * 31 + b * 17 + 3) % 256);
    const ids: number[] = [text[0]!];
    const types: number[] = [0];
    const offsets: number[] = [];
    for (let k = 0; k < images; k++) {
      ids.push(v.visionStartTokenId);
      types.push(0);
      offsets.push(ids.length);
      for (let j = 0; j < perImage; j++) {
        ids.push(v.imageTokenId);
        types.push(1);
      }
      ids.push(v.visionEndTokenId);
      types.push(0);
    }
    for (const id of text.slice(1)) {
      ids.push(id);
      types.push(0);
    }
    const { positions } = mropePositionIds(types, offsets.map(() => ({ gridThw: [t, h, w] as [number, number, number] })), v.spatialMergeSize);
    const pixelValues = Float32Array.from({ length: images * t * h * w * P }, (_, i) => Math.sin(i * 0.37 + b));
    return { ids, scoreFrom: ids.length - completion, images: { pixelValues, grids: offsets.map(() => [t, h, w] as [number, number, number]), offsets, positions } };
  });
  const Ts = B * completion;
  const dLdLogp = sequences.map(() => new Float32Array(completion).fill(-1 / Ts));
  const opt = { learningRate: 1e-5, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 };
  return { sequences, dLdLogp, opt, scoredTokens: Ts, imageTokensPerSequence: images * perImage, tokensPerSequence: sequences[0]!.ids.length };
}

const sum = (each: { bytes: number }[]) => each.reduce((a, e) => a + e.bytes, 0);

/** Tower bytes among one phase's allocations, by buffer label: weights and LoRA state are `model.visual.…`; activations are tower.ts's scratch; the backward its planned roles + the forward's LoRA scratch. */
function towerBytes(each: { label: string; bytes: number }[]) {
  const backward = /^backward vision |^scratch visual\.(lora\.u|zeroBias)$/;
  return {
    params: sum(each.filter((e) => /^model\.visual\./.test(e.label))),
    activations: sum(each.filter((e) => /^scratch visual\./.test(e.label) && !backward.test(e.label))),
    backward: sum(each.filter((e) => backward.test(e.label))),
  };
}

type Arm = 'frozen' | 'lora';

async function runArm(gpu: Gpu, ckpt: Checkpoint, arm: Arm, o: {
  r: number; alpha: number; B: number; seqLen: number; steps: number; images: number; grid: GridThw; weightDtype: 'auto' | 'f16' | 'f32'; method: 'timestamp' | 'serial';
  /** Profiled steps: per dispatch the fastest is kept (on a shared machine the least disturbed run is the best estimate). */
  reps: number;
}) {
  const v = ckpt.config.vision!;
  const batch = visionTrainBatch(v, o.B, o.seqLen, o.images, o.grid);
  const patches = o.B * o.images * o.grid[0] * o.grid[1] * o.grid[2];
  const bytes = recordBufferBytes(gpu.device);
  let engine: WebGpuEngine;
  try {
    engine = await loadEngine(ckpt, { gpu, weightDtype: o.weightDtype, vision: true, plan: { numSequences: o.B, maxTokensPerSequence: batch.tokensPerSequence, maxImagePatches: patches } });
  } catch (err) {
    bytes.restore();
    throw err;
  }
  try {
    const cfg = engine.config;
    const load = bytes.takeEach();
    const targets = modelLinears(cfg);
    const visionTargets = arm === 'lora' ? [...VISION_LORA_TARGETS] : [];
    engine.setTrainable({ kind: 'lora', lora: { r: o.r, alpha: o.alpha, targetModules: targets, seed: 1, ...(arm === 'lora' ? { visionTargetModules: visionTargets } : {}) } });
    const trainingState = bytes.takeEach();
    const { sequences, dLdLogp, opt } = batch;
    const trainStep = timedTrainStep(engine, batch);
    // Progress on stderr (the result is stdout's JSON): at real shapes a step on a CPU adapter takes minutes.
    const warm = await trainStep(); // compiles every pipeline
    console.error(`bench train --vision: ${arm} tower, warm-up step ${(warm.stepMs / 1000).toFixed(1)} s`);
    const firstStep = bytes.takeEach();
    bytes.restore();
    const timed = [];
    for (let i = 0; i < o.steps; i++) timed.push(await trainStep());
    const backwardRuns: DispatchTiming[][] = [];
    const stepRuns: DispatchTiming[][] = [];
    for (let i = 0; i < o.reps; i++) {
      backwardRuns.push((await profileRun(engine, o.method, () => engine.backward({ sequences, temperature: 1, dLdLogp }))).dispatches);
      stepRuns.push((await profileRun(engine, o.method, () => engine.step(opt))).dispatches);
    }
    const shares = phaseShares(fastestDispatches(backwardRuns), fastestDispatches(stepRuns));
    console.error(`bench train --vision: ${arm} tower, ${o.steps} timed + ${o.reps} profiled steps done`);

    const mode: TrainingMode = { kind: 'lora', r: o.r, targets, ...(arm === 'lora' ? { visionTargets } : {}) };
    const plan = planMemory({
      config: cfg, weightDtype: engine.weightDtype === 'f16' ? 'f16' : 'f32', mode, numSequences: o.B, maxTokensPerSequence: batch.tokensPerSequence,
      limits: { maxStorageBufferBindingSize: gpu.limits.maxStorageBufferBindingSize, maxBufferSize: gpu.limits.maxBufferSize },
      vision: { config: v, maxPatches: patches },
    });
    const item = (name: string) => plan.items.find((i) => i.name === name)?.bytes ?? 0;
    const towerLoraParams = visionAdaptedLinears(v, visionTargets).reduce((a, { shape: [out, inp] }) => a + o.r * (inp + out), 0);
    const [atLoad, atState, atStep] = [towerBytes(load), towerBytes(trainingState), towerBytes(firstStep)];
    const grids = sequences.flatMap((s) => s.images!.grids);
    const T = sequences.reduce((a, s) => a + s.ids.length, 0);
    const lm = trainStepFlops(cfg, T, batch.scoredTokens, 'lora', o.r).matmulFlops;
    const tower = towerStepFlops(v, grids, o.r, arm === 'lora');
    const stepMs = median(timed.map((t) => t.stepMs));
    const matmulFlops = lm + tower.forward + tower.backward;
    // As in the text bench, on this arm's engine right after its steps: the engine's best matmul at the
    // step's T × intermediate × hidden (software adapters never pick the tiled kernel).
    const [M, N, K] = [T, cfg.intermediateSize, cfg.hiddenSize];
    const peak = await matmulPeak(engine.internals, M, N, K, gpu.software ? ['blocked'] : ['blocked', 'tiled']);
    const best = peak.reduce((a, b) => (b.gflops > a.gflops ? b : a));
    return {
      arm,
      weightDtype: engine.weightDtype,
      kernels: engine.internals.kernelVariants,
      lora: { r: o.r, alpha: o.alpha, targets, visionTargets },
      stepMs,
      backwardMs: median(timed.map((t) => t.backwardMs)),
      matmulGflop: matmulFlops / 1e9,
      achievedGflops: matmulFlops / (stepMs / 1000) / 1e9,
      matmulPeak: { M, N, K, results: peak, bestGflops: best.gflops, best: peakName(best) },
      fractionOfPeak: matmulFlops / (stepMs / 1000) / 1e9 / best.gflops,
      gflop: { languageModel: lm / 1e9, towerForward: tower.forward / 1e9, towerBackward: tower.backward / 1e9, towerAttentionForward: tower.attentionForward / 1e9 },
      // Shares of the profiled step's GPU time, and of its GEMM FLOPs, per part.
      shares: {
        method: o.method === 'timestamp' ? 'timestamp-query (one compute pass per dispatch)' : 'serial submits (each dispatch awaited, CPU-timed)',
        gpuMs: Object.values(shares).reduce((a, p) => a + p.ms, 0),
        phases: shares,
        flops: { towerForward: tower.forward / matmulFlops, towerBackward: tower.backward / matmulFlops, languageModel: lm / matmulFlops },
      },
      memory: {
        planTotalBytes: plan.totalBytes,
        tower: {
          weights: { planned: item('vision tower weights'), allocated: atLoad.params },
          loraState: { planned: towerLoraParams * 4 * 4, allocated: atState.params }, // A, B, their gradients and 2 AdamW moments, f32
          activations: { planned: item('vision activations'), allocated: atStep.activations },
          backward: { planned: item('vision tower backward'), allocated: atStep.backward },
        },
        allocated: { load: sum(load), trainingState: sum(trainingState), firstStep: sum(firstStep) },
      },
    };
  } finally {
    engine.destroy();
  }
}

export async function benchVisionTrainStep(opts: Record<string, string>) {
  if ((opts.mode ?? 'lora') !== 'lora') throw new Error(`bench train --vision on: LoRA only (the tower frozen or adapted), got --mode '${opts.mode}'`);
  const tower = opts.tower ?? 'both';
  if (!['frozen', 'lora', 'both'].includes(tower)) throw new Error(`bench train: --tower must be frozen, lora or both, got '${tower}'`);
  const arms: Arm[] = tower === 'both' ? ['frozen', 'lora'] : [tower as Arm];
  const r = num(opts, 'r', 16);
  const alpha = num(opts, 'alpha', 32);
  const B = num(opts, 'batch', 4);
  const seqLen = num(opts, 'seqLen', 64);
  const steps = num(opts, 'steps', 3);
  const images = num(opts, 'images', 1);
  const reps = num(opts, 'reps', 2);
  const weightDtype = (opts.weights ?? 'auto') as 'auto' | 'f16' | 'f32';
  const { ckpt, source } = await benchCheckpoint({ arch: 'qwen3_5', ...opts }, 'f32');
  const v = ckpt.config.vision;
  if (!v) throw new Error(`bench train --vision on: ${source} has no usable vision tower${ckpt.config.visionError ? ` (${ckpt.config.visionError})` : ''}`);
  const grid = imageGrid(v, opts.imageSize ?? '256x256');
  const gpu = await getGpu({ timestampQuery: true });
  const method = gpu.timestampQuery ? 'timestamp' : 'serial';
  try {
    const results = [];
    for (const arm of arms) results.push(await runArm(gpu, ckpt, arm, { r, alpha, B, seqLen, steps, images, grid, weightDtype, method, reps }));
    const batch = visionTrainBatch(v, B, seqLen, images, grid);
    const T = B * batch.tokensPerSequence;
    return {
      adapter: { ...gpu.adapterInfo, software: gpu.software, f16: gpu.f16 },
      model: source,
      vision: {
        depth: v.depth, hidden: v.hiddenSize, intermediate: v.intermediateSize, heads: v.numHeads, patch: v.patchSize, merge: v.spatialMergeSize,
        positions: v.numPositionEmbeddings, outHidden: v.outHiddenSize,
      },
      batch: B,
      seqLen,
      images: { perSequence: images, imageSize: opts.imageSize ?? '256x256', grid, patchesPerImage: grid[0] * grid[1] * grid[2], imageTokensPerSequence: batch.imageTokensPerSequence },
      tokensPerSequence: batch.tokensPerSequence,
      tokens: T,
      scoredTokens: batch.scoredTokens,
      arms: results,
    };
  } finally {
    gpu.device.destroy();
  }
}
