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
//   r, alpha     LoRA rank and alpha (default 16, 32), on all 7 linears
//   batch        sequences per step (default 4)
//   seqLen       tokens per sequence (default 64); the second half is scored (completions)
//   steps        timed steps (default 3), after one untimed warm-up step
//   weights      auto|f16|f32 (default auto, f32 in full mode; full mode promotes f16 weights to f32 master weights)

import { getGpu } from '../../src/engine/gpu.ts';
import { benchCheckpoint, benchTrainBatch, matmulPeak, peakName, median, now, num } from './common.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import type { ModelConfig } from '../../src/model/types.ts';
import type { Qwen3Linear } from '../../src/model/qwen3-tensors.ts';

const ALL_TARGETS: Qwen3Linear[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

/** [in, out] of each linear of one layer. */
function linearShapes(cfg: ModelConfig): Record<Qwen3Linear, [number, number]> {
  const D = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  const F = cfg.intermediateSize;
  return { q_proj: [D, q], k_proj: [D, kv], v_proj: [D, kv], o_proj: [q, D], gate_proj: [D, F], up_proj: [D, F], down_proj: [F, D] };
}

/** FLOPs of one training step over T packed tokens with Ts scored rows (see the header). */
export function trainStepFlops(cfg: ModelConfig, T: number, Ts: number, mode: 'lora' | 'full', r: number): { matmulFlops: number; modelFlops: number } {
  const shapes = Object.values(linearShapes(cfg));
  const layerParams = shapes.reduce((a, [i, o]) => a + i * o, 0);
  const P = cfg.numLayers * layerParams;
  const head = 2 * Ts * cfg.vocabSize * cfg.hiddenSize; // one (Ts, D)·(D, V) product
  let matmul = 2 * (2 * P * T) + 2 * P * T + 3 * head; // forward + recompute, dX, logits ×2 + dh
  if (mode === 'full') matmul += 2 * P * T + head; // dW, dE
  else {
    for (const [inp, out] of shapes) {
      const forward = 2 * T * r * (inp + out); // A·x, B·u
      const backward = 2 * T * r * (3 * inp + 2 * out); // u, dB, du, dA, dX
      matmul += cfg.numLayers * (2 * forward + backward);
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
  const engine = await loadEngine(ckpt, { gpu, weightDtype });
  try {
    const cfg = engine.config;
    engine.setTrainable(mode === 'full' ? { kind: 'full' } : { kind: 'lora', lora: { r, alpha, targetModules: ALL_TARGETS, seed: 1 } });
    const { sequences, dLdLogp, opt, scoredTokens: Ts } = benchTrainBatch(cfg.vocabSize, B, seqLen);
    const trainStep = async () => {
      const t0 = now();
      await engine.backward({ sequences, temperature: 1, dLdLogp });
      const t1 = now();
      await engine.step(opt);
      return { backwardMs: t1 - t0, stepMs: now() - t0 };
    };
    await trainStep(); // compiles every pipeline
    const timed = [];
    for (let i = 0; i < steps; i++) timed.push(await trainStep());
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
      lora: mode === 'lora' ? { r, alpha, targets: ALL_TARGETS } : null,
      batch: B,
      seqLen,
      tokens: T,
      scoredTokens: Ts,
      stepMs,
      backwardMs: median(timed.map((t) => t.backwardMs)),
      matmulGflop: flops.matmulFlops / 1e9,
      modelGflop: flops.modelFlops / 1e9,
      achievedGflops: achieved,
      matmulPeak: { M, N, K, results: peak, bestGflops: best.gflops, best: peakName(best) },
      fractionOfPeak: achieved / best.gflops,
    };
  } finally {
    engine.destroy();
    gpu.device.destroy();
  }
}
