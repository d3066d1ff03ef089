// Every trainable gradient of the WGSL backward pass against the float64 reference (refBackward),
// within 1e-3 relative norm-wise: full fine-tuning (every tensor) and LoRA (A and B on all 7
// targets), on shapes that exercise GQA, head_dim ≠ hidden/heads, untied heads, odd lengths,
// several sequences of different lengths in one pack, and temperature ≠ 1.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { randomRefLora } from '../../src/engine/reference/weights.ts';
import { createTrainState } from '../../src/engine/train/index.ts';
import type { LoraTarget } from '../../src/engine/types.ts';
import { someIds, tinyConfig, tinyEngine, onAdapter } from './helpers.ts';
import { loraStateTensors, refBatchGrads, relNormError, someGrads } from './train-helpers.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const ALL_TARGETS: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

describe(onAdapter('training gradients vs the float64 reference'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  const shapes = [
    { label: 'GQA 4q/2kv, tied, B=3 odd lengths, T=0.7', cfg: tinyConfig(), temperature: 0.7, lengths: [13, 5, 9], scoreFrom: [1, 3, 4] },
    {
      label: 'head_dim 12 ≠ 24/4, 1 kv head, untied head, B=2, T=1',
      cfg: tinyConfig({ hiddenSize: 24, numHeads: 4, numKvHeads: 1, headDim: 12, intermediateSize: 40, vocabSize: 53, tieWordEmbeddings: false }),
      temperature: 1, lengths: [7, 11], scoreFrom: [2, 1],
    },
  ];

  // The register-blocked GEMM (software adapters) on every shape; the tiled one (GPUs), slow here
  // (workgroup barriers are expensive on SwiftShader), in the LoRA case of the first shape, which
  // runs every transposition variant the backward pass uses.
  const cases = [...shapes.map((shape) => ({ shape, gemm: 'blocked' as const })), { shape: shapes[0]!, gemm: 'tiled' as const }];
  for (const { shape, gemm } of cases) {
    if (gemm === 'blocked') it(`full fine-tuning: every tensor (${shape.label}, ${gemm} GEMM)`, async () => {
      const { cfg } = shape;
      const { engine, weights } = await tinyEngine(gpu, cfg, 3);
      const train = createTrainState(engine.internals, { gemm });
      train.setTrainable({ kind: 'full' });
      const sequences = shape.lengths.map((n, i) => ({ ids: someIds(n, cfg.vocabSize, i + 1), scoreFrom: shape.scoreFrom[i]! }));
      const dLdLogp = someGrads(sequences, 1);
      // Two backward calls accumulate: the gradient of the sum.
      await train.backward({ sequences: sequences.slice(0, 1), temperature: shape.temperature, dLdLogp: dLdLogp.slice(0, 1) });
      await train.backward({ sequences: sequences.slice(1), temperature: shape.temperature, dLdLogp: dLdLogp.slice(1) });
      const got = await train.readGrads();
      const ref = refBatchGrads(cfg, weights, sequences, shape.temperature, dLdLogp);
      expect(new Set(got.map((t) => t.name))).toEqual(new Set(ref.keys()));
      for (const t of got) {
        const err = relNormError(t.data, ref.get(t.name)!);
        expect(err, t.name).toBeLessThan(1e-3);
      }
      train.destroy();
      engine.destroy();
    });

    it(`LoRA on all 7 targets: every A and B (${shape.label}, ${gemm} GEMM)`, async () => {
      const { cfg } = shape;
      const { engine, weights } = await tinyEngine(gpu, cfg, 5);
      const train = createTrainState(engine.internals, { gemm });
      const lora = randomRefLora(cfg, { r: 3, alpha: 6, targets: ALL_TARGETS, seed: 9 });
      train.setTrainable({ kind: 'lora', lora: { r: 3, alpha: 6, targetModules: ALL_TARGETS, seed: 1 } });
      // PEFT's init has B = 0 (dA would vanish): load an adapter with both factors non-zero.
      await train.loadState({ tensors: loraStateTensors(lora), step: 0 });
      const sequences = shape.lengths.map((n, i) => ({ ids: someIds(n, cfg.vocabSize, i + 4), scoreFrom: shape.scoreFrom[i]! }));
      const dLdLogp = someGrads(sequences, 2);
      await train.backward({ sequences, temperature: shape.temperature, dLdLogp });
      const got = await train.readGrads();
      const ref = refBatchGrads(cfg, weights, sequences, shape.temperature, dLdLogp, lora);
      expect(got.length).toBe(2 * ALL_TARGETS.length * cfg.numLayers);
      expect(new Set(got.map((t) => t.name))).toEqual(new Set(ref.keys()));
      for (const t of got) {
        const err = relNormError(t.data, ref.get(t.name)!);
        expect(err, t.name).toBeLessThan(1e-3);
      }
      train.destroy();
      engine.destroy();
    });
  }
});
