// What the benchmarks report must match what the engine runs: trainStepFlops (bench/engine/
// train-step.ts) against the FLOPs of every GEMM a real training step records, and the decode
// step's dispatch count against its breakdown in BENCHMARKS.md (16 per layer + 5; Qwen3.5: 17 / 18 per layer type + 5);
// a vision-language step (bench/engine/vision-train-step.ts): the tower's FLOPs (towerStepFlops) and the
// bytes its frozen forward allocates against the memory plan's 'vision activations'.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { Qwen3Forward } from '../../src/engine/forward.ts';
import { TrainOps, type GemmArgs } from '../../src/engine/train/ops.ts';
import { trainStepFlops } from '../../bench/engine/train-step.ts';
import type { LoraTarget } from '../../src/engine/types.ts';
import { onAdapter, someIds, tinyConfig, tinyEngine } from './helpers.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import type { LayerType } from '../../src/model/types.ts';
import { modelLinears } from '../../src/model/qwen3-tensors.ts';
import { towerStepFlops, visionTrainBatch } from '../../bench/engine/vision-train-step.ts';
import { VISION_LORA_TARGETS } from '../../src/model/qwen3_5-vision-tensors.ts';

/** Counts 2·M·N·K of every GEMM the forward and the train ops encode, until restore(). */
function countGemmFlops(): { readonly flops: number; restore(): void } {
  let flops = 0;
  const fwdMatmul = Qwen3Forward.prototype.encodeMatmul;
  const gemm = TrainOps.prototype.gemm;
  Qwen3Forward.prototype.encodeMatmul = function (this: Qwen3Forward, rec, a) {
    flops += 2 * a.M * a.N * a.K;
    return fwdMatmul.call(this, rec, a);
  };
  TrainOps.prototype.gemm = function (this: TrainOps, rec, a: GemmArgs) {
    flops += 2 * a.M * a.N * a.K;
    return gemm.call(this, rec, a);
  };
  return {
    get flops() { return flops; },
    restore() {
      Qwen3Forward.prototype.encodeMatmul = fwdMatmul;
      TrainOps.prototype.gemm = gemm;
    },
  };
}

const ALL: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

describe(onAdapter('benchmark counts vs the engine'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  /** A Qwen3.5 hybrid with both layer types (3 DeltaNet : 1 gated attention), as the benches build at 0.8B. */
  const hybridEngine = async () => {
    const layerTypes: LayerType[] = ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention'];
    const { files } = await makeTinyModel({ arch: 'qwen3_5', layers: 4, layerTypes, hidden: 32, intermediate: 64, heads: 2, kvHeads: 1, headDim: 16, vocab: 512 });
    const engine = await loadEngine(await openCheckpoint(files), { gpu, weightDtype: 'f32' });
    return { engine, cfg: engine.config };
  };

  for (const [arch, mode] of [['qwen3', 'lora'], ['qwen3', 'full'], ['qwen3_5', 'lora'], ['qwen3_5', 'full']] as const) {
    it(`trainStepFlops equals the GEMM FLOPs a ${arch} ${mode} training step records`, async () => {
      const { engine, cfg } = arch === 'qwen3' ? { engine: (await tinyEngine(gpu, tinyConfig(), 2)).engine, cfg: tinyConfig() } : await hybridEngine();
      const r = 4;
      // LoRA on every linear of the model (Qwen3.5: the DeltaNet projections too), as the benches do.
      const targets = arch === 'qwen3' ? ALL : modelLinears(cfg);
      engine.setTrainable(mode === 'lora' ? { kind: 'lora', lora: { r, alpha: 8, targetModules: targets, seed: 1 } } : { kind: 'full' });
      const gemms = countGemmFlops();
      try {
        const B = 3;
        const seqLen = 10;
        const scoreFrom = 5;
        const sequences = Array.from({ length: B }, (_, i) => ({ ids: someIds(seqLen, cfg.vocabSize, i), scoreFrom }));
        await engine.backward({ sequences, temperature: 1, dLdLogp: sequences.map(() => new Float32Array(seqLen - scoreFrom).fill(0.1)) });
        await engine.step({ learningRate: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 });
        expect(gemms.flops).toBe(trainStepFlops(cfg, B * seqLen, B * (seqLen - scoreFrom), mode, r).matmulFlops);
      } finally {
        gemms.restore();
        engine.destroy();
      }
    });
  }

  for (const tower of ['frozen', 'lora'] as const) {
    it(`a Qwen3.5 VL LoRA step with the tower ${tower} records trainStepFlops + towerStepFlops GEMM FLOPs${tower === 'frozen' ? '; its tower forward allocates the planned vision activations' : ''}`, async () => {
      const layerTypes: LayerType[] = ['linear_attention', 'full_attention'];
      const { files } = await makeTinyModel({ arch: 'qwen3_5', vision: true, layers: 2, layerTypes, hidden: 32, intermediate: 64, heads: 2, kvHeads: 1, headDim: 16, vocab: 512 });
      const ckpt = await openCheckpoint(files);
      const v = ckpt.config.vision!;
      const grid = [1, 4, 8] as const; // a 128×64 image: 32 patches, 8 image tokens
      const B = 2;
      const batch = visionTrainBatch(v, B, 10, 2, grid);
      const patches = B * 2 * 32;
      const bytes: { label: string; size: number }[] = [];
      const create = gpu.device.createBuffer;
      gpu.device.createBuffer = function (desc: GPUBufferDescriptor) {
        bytes.push({ label: desc.label ?? '', size: desc.size });
        return create.call(gpu.device, desc);
      };
      const engine = await loadEngine(ckpt, { gpu, weightDtype: 'f32', vision: true, plan: { numSequences: B, maxTokensPerSequence: batch.tokensPerSequence, maxImagePatches: patches } });
      const r = 4;
      engine.setTrainable({ kind: 'lora', lora: { r, alpha: 8, targetModules: modelLinears(engine.config), seed: 1, ...(tower === 'lora' ? { visionTargetModules: [...VISION_LORA_TARGETS] } : {}) } });
      const gemms = countGemmFlops();
      try {
        bytes.length = 0;
        await engine.backward({ sequences: batch.sequences, temperature: 1, dLdLogp: batch.dLdLogp });
        await engine.step(batch.opt);
        const T = B * batch.tokensPerSequence;
        const t = towerStepFlops(v, batch.sequences.flatMap((s) => s.images!.grids), r, tower === 'lora');
        expect(t.backward > 0).toBe(tower === 'lora');
        expect(gemms.flops).toBe(trainStepFlops(engine.config, T, batch.scoredTokens, 'lora', r).matmulFlops + t.forward + t.backward);
        if (tower === 'frozen') {
          const activations = bytes.filter((b) => b.label.startsWith('scratch visual.')).reduce((a, b) => a + b.size, 0);
          expect(activations).toBe(engine.memoryPlan.items.find((i) => i.name === 'vision activations')!.bytes);
        }
      } finally {
        gemms.restore();
        gpu.device.createBuffer = create;
        engine.destroy();
      }
    });
  }

  it('a decode step records 16 dispatches per layer + 5 (embedding, row gather, final norm, LM head, sampling)', async () => {
    for (const numLayers of [2, 3]) {
      const cfg = tinyConfig({ numLayers });
      const { engine } = await tinyEngine(gpu, cfg, 3);
      const seq = engine.newSequence();
      await engine.generate({ items: [{ seq, append: someIds(4, cfg.vocabSize, 1), maxNewTokens: 2 }], sampling: { temperature: 1, topP: 1, topK: 0, seed: 1 }, stopIds: [] });
      expect(engine.stats.dispatchesPerDecodeStep).toBe(16 * numLayers + 5);
      engine.destroy();
    }
  });

  it('a Qwen3.5 decode step records 17 dispatches per Gated DeltaNet layer, 18 per gated-attention layer, + 5', async () => {
    // DeltaNet layer: input norm, in_proj_qkv/z/b/a, conv1d + conv-state update, q/k l2norm, delta gates, gated delta
    // rule, gated norm, out_proj (+ residual) = 12, then post norm + MLP (gate, up, SwiGLU, down) = 5.
    // Gated attention: Qwen3's 11 + the (query, gate) split and the output gate = 13, then the same 5.
    for (const layerTypes of [['linear_attention', 'full_attention'], ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention']] as LayerType[][]) {
      const { files } = await makeTinyModel({ arch: 'qwen3_5', layers: layerTypes.length, layerTypes, hidden: 32, intermediate: 64, heads: 2, kvHeads: 1, headDim: 16, vocab: 512 });
      const engine = await loadEngine(await openCheckpoint(files), { gpu, weightDtype: 'f32' });
      const seq = engine.newSequence();
      await engine.generate({ items: [{ seq, append: someIds(4, 512, 1), maxNewTokens: 2 }], sampling: { temperature: 1, topP: 1, topK: 0, seed: 1 }, stopIds: [] });
      const linear = layerTypes.filter((t) => t === 'linear_attention').length;
      expect(engine.stats.dispatchesPerDecodeStep).toBe(17 * linear + 18 * (layerTypes.length - linear) + 5);
      engine.destroy();
    }
  });
});
