// Train-step benchmark: the time of one training step (backward over a fixed batch + AdamW) and the
// GFLOP/s it achieves, against the best GFLOP/s of the engine's own matmul kernels on the same
// adapter and at the step's dominant shape (target: ≥ 40%).
//
// FLOPs counted (attention score/value products and elementwise kernels are left out, so the
// figure is a lower bound):
//   matmulFlops  every GEMM the step actually runs: the forward, the per-layer recompute, dX for
//                every linear, dW (full) or the LoRA factor products, and the chunked LM head
//                (two logits passes + dh, + dE in full mode) over the scored rows only;
//   modelFlops   the textbook 6·params·tokens of full fine-tuning (2 forward + 4 backward).
//
// Options (strings, from `webgrpo bench train --KEY VALUE`):
//   model        checkpoint folder/repo; default: a generated random Qwen3 of the shape below
//   hidden, layers, heads, kvHeads, headDim, intermediate, vocab   generated model shape
//   mode         lora|full (default lora)
//   r, alpha     LoRA rank and alpha (default 16, 32), on every linear (Qwen3: 7; Qwen3.5: 12 names)
//   shape        qwen3-0.6b | qwen3.5-0.8b | qwen3.5-2b: a real model's shapes (common.ts SHAPES); arch qwen3|qwen3_5
//   batch        sequences per step (default 4)
//   seqLen       tokens per sequence (default 64); the second half is scored (completions)
//   steps        timed steps (default 3), after one untimed warm-up step
//   weights      auto|f16|f32 (default auto, f32 in full mode; full mode promotes f16 weights to f32 master weights)
//   (`--vision on` runs vision-train-step.ts instead: a Qwen3.5 vision-language step with images)
//
// stoppableBackwardMs: the backward with a stop check that never fires (a training run's), which submits
// layer by layer: its cost over backwardMs is what a stop within two layers costs.
//
// Memory: the bytes the engine creates when it loads, when training is set up and in the first step,
// against the memory plan's items for exactly this workload (B sequences of seqLen tokens).

import { getGpu } from '../../src/engine/gpu.ts';
import { benchCheckpoint, benchTrainBatch, matmulPeak, peakName, median, num, timedTrainStep } from './common.ts';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import { planMemory, type TrainingMode } from '../../src/engine/memory-plan.ts';
import { recordBufferBytes } from './gpu-counter.ts';
import type { ModelConfig } from '../../src/model/types.ts';
import { layerLinears, linearShape, modelLinears } from '../../src/model/qwen3-tensors.ts';

/** [in, out] of each linear of each layer (Qwen3: the 7 linears everywhere; Qwen3.5: its layer type's mixer + the MLP). */
function layerLinearShapes(cfg: ModelConfig): [number, number][][] {
  return Array.from({ length: cfg.numLayers }, (_, l) => layerLinears(cfg, l).map((t): [number, number] => {
    const [out, inp] = linearShape(cfg, t);
    return [inp, out];
  }));
}

/** FLOPs of one training step over T packed tokens with Ts scored rows, LoRA on every linear (see the header). */
export function trainStepFlops(cfg: ModelConfig, T: number, Ts: number, mode: 'lora' | 'full', r: number): { matmulFlops: number; modelFlops: number } {
  const layers = layerLinearShapes(cfg);
  const P = layers.flat().reduce((a, [i, o]) => a + i * o, 0);
  const head = 2 * Ts * cfg.vocabSize * cfg.hiddenSize; // one (Ts, D)·(D, V) product
  let matmul = 2 * (2 * P * T) + 2 * P * T + 3 * head; // forward + recompute, dX, logits ×2 + dh
  if (mode === 'full') matmul += 2 * P * T + head; // dW, dE
  else {
    for (const [inp, out] of layers.flat()) {
      const forward = 2 * T * r * (inp + out); // A·x, B·u
      const backward = 2 * T * r * (3 * inp + 2 * out); // u, dB, du, dA, dX
      matmul += 2 * forward + backward;
    }
  }
  return { matmulFlops: matmul, modelFlops: 6 * (P * T + cfg.vocabSize * cfg.hiddenSize * Ts) };
}

export async function benchTrainStep(opts: Record<string, string> = {}) {
  const mode = (opts.mode ?? 'lora') as 'lora' | 'full';
  if (mode !== 'lora' && mode !== 'full') throw new Error(`bench train: --mode must be lora or full, got '${opts.mode}'`);
  const r = num(opts, 'r', 16);
  const alpha = num(opts, 'alpha', 32);
  const B = num(opts, 'batch', 4);
  const seqLen = num(opts, 'seqLen', 64);
  const steps = num(opts, 'steps', 3);
  const gpu = await getGpu();
  const { ckpt, source } = await benchCheckpoint(opts, 'f32');
  const weightDtype = (opts.weights ?? (mode === 'full' ? 'f32' : 'auto')) as 'auto' | 'f16' | 'f32';
  // Bytes created per phase (load, training state, the first step) against the plan's items for this workload.
  const bytes = recordBufferBytes(gpu.device);
  let engine: WebGpuEngine;
  try {
    engine = await loadEngine(ckpt, { gpu, weightDtype, plan: { numSequences: B, maxTokensPerSequence: seqLen } });
  } catch (err) {
    bytes.restore();
    gpu.device.destroy();
    throw err;
  }
  try {
    const cfg = engine.config;
    const allocated = { load: bytes.take(), trainingState: 0, firstStep: 0 };
    const targets = modelLinears(cfg);
    const trainMode: TrainingMode = mode === 'full' ? { kind: 'full' } : { kind: 'lora', r, targets };
    engine.setTrainable(mode === 'full' ? { kind: 'full' } : { kind: 'lora', lora: { r, alpha, targetModules: targets, seed: 1 } });
    allocated.trainingState = bytes.take();
    const batch = benchTrainBatch(cfg.vocabSize, B, seqLen);
    const Ts = batch.scoredTokens;
    const trainStep = timedTrainStep(engine, batch);
    await trainStep(); // compiles every pipeline
    allocated.firstStep = bytes.take();
    bytes.restore();
    // The plan of exactly this step (the engine's own plan was made before the training mode was known).
    const plan = planMemory({
      config: cfg, weightDtype: engine.weightDtype === 'f16' ? 'f16' : 'f32', mode: trainMode, numSequences: B, maxTokensPerSequence: seqLen,
      limits: { maxStorageBufferBindingSize: gpu.limits.maxStorageBufferBindingSize, maxBufferSize: gpu.limits.maxBufferSize },
    });
    const item = (name: string) => plan.items.find((i) => i.name === name)?.bytes ?? 0;
    const memory = {
      plan: plan.items.map(({ name, bytes: b }) => ({ name, bytes: b })),
      planTotalBytes: plan.totalBytes,
      // Loading allocates the weights; setTrainable the trainable state; the first step its activations and backward buffers.
      weights: { planned: item('weights'), allocated: allocated.load },
      trainingState: {
        planned: (mode === 'lora' ? item('LoRA params + grads') : item('gradients')) + item('AdamW moments') + item('gradient norm scratch'),
        allocated: allocated.trainingState,
      },
      backward: { planned: item('activation checkpoints') + item('backward working set'), allocated: allocated.firstStep },
    };
    const timed = [];
    for (let i = 0; i < steps; i++) timed.push(await trainStep());
    // The same steps with a stop check that never fires, as a run's stoppable engine passes one
    // (src/engine/stoppable.ts): the backward then submits layer by layer, one queued ahead of the one awaited.
    const stoppableStep = timedTrainStep({ backward: (req) => engine.backward({ ...req, stopped: () => false }), step: (o) => engine.step(o) }, batch);
    const stoppable = [];
    for (let i = 0; i < steps; i++) stoppable.push(await stoppableStep());
    const stepMs = median(timed.map((t) => t.stepMs));
    const T = B * seqLen;
    const flops = trainStepFlops(cfg, T, Ts, mode, r);
    const achieved = flops.matmulFlops / (stepMs / 1000) / 1e9;
    // The step's dominant GEMM shape: T rows through the MLP's (D → F) linear.
    const [M, N, K] = [T, cfg.intermediateSize, cfg.hiddenSize];
    // As in the engine bench: software adapters never pick the tiled kernel, and it is 5–10× slower there.
    const peak = await matmulPeak(engine.internals, M, N, K, gpu.software ? ['blocked'] : ['blocked', 'tiled']);
    const best = peak.reduce((a, b) => (b.gflops > a.gflops ? b : a));
    return {
      adapter: { ...gpu.adapterInfo, software: gpu.software, f16: gpu.f16 },
      model: source,
      weightDtype: engine.weightDtype,
      mode,
      lora: mode === 'lora' ? { r, alpha, targets } : null,
      batch: B,
      seqLen,
      tokens: T,
      scoredTokens: Ts,
      stepMs,
      backwardMs: median(timed.map((t) => t.backwardMs)),
      stoppableBackwardMs: median(stoppable.map((t) => t.backwardMs)),
      matmulGflop: flops.matmulFlops / 1e9,
      modelGflop: flops.modelFlops / 1e9,
      achievedGflops: achieved,
      matmulPeak: { M, N, K, results: peak, bestGflops: best.gflops, best: peakName(best) },
      fractionOfPeak: achieved / best.gflops,
      memory,
    };
  } finally {
    engine.destroy();
    gpu.device.destroy();
  }
}
