// The memory plan against what the engine really allocates: every createBuffer size is recorded
// while a model loads, LoRA (or full fine-tuning) is set up and a backward call runs over exactly
// the planned workload, and each planned item must equal the bytes created for it. Also: backward's
// buffers are created once per shape and reused by the next call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { randomRefWeights } from '../../src/engine/reference/weights.ts';
import type { LoraTarget } from '../../src/engine/types.ts';
import { memoryCheckpoint, onAdapter, someIds, tinyConfig } from './helpers.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { QWEN3_5_LINEARS } from '../../src/model/qwen3-tensors.ts';

const QWEN3_5 = new URL('../fixtures/transformers-qwen3_5-f32/', import.meta.url).pathname;

const ALL: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

describe(onAdapter('memory plan vs bytes allocated'), () => {
  let gpu: Gpu;
  let created: { label: string; size: number }[] = [];
  beforeAll(async () => {
    gpu = await getGpu();
    const real = gpu.device.createBuffer.bind(gpu.device);
    gpu.device.createBuffer = (d: GPUBufferDescriptor) => {
      created.push({ label: d.label ?? '', size: d.size });
      return real(d);
    };
  });
  afterAll(() => gpu?.device.destroy());

  const take = () => {
    // Uniform arenas and read-back staging are transient transfer buffers, not GPU working memory;
    // Qwen3.5's 16-byte state placeholders are bindings a stateless forward never reads.
    const sum = created.filter((c) => !/uniform arena| readback$|^linear state placeholder$|^scratch linear\.nostate$/.test(c.label)).reduce((s, c) => s + c.size, 0);
    created = [];
    return sum;
  };

  // Qwen3.5 (transformers' tiny checkpoint): DeltaNet and gated attention layers, all twelve LoRA targets,
  // and sequences longer than the delta backward's 16-token checkpoint interval.
  const models = [
    { arch: 'qwen3', T: 9, targets: ALL, open: async () => memoryCheckpoint(tinyConfig(), randomRefWeights(tinyConfig(), 8)) },
    { arch: 'qwen3_5', T: 21, targets: [...QWEN3_5_LINEARS], open: () => openCheckpoint(QWEN3_5) },
  ];
  for (const { arch, T, targets, open } of models) for (const [mode, dtype] of [['lora', 'f16'], ['full', 'f32']] as const) {
    it(`${arch} ${mode} (${dtype} weights): weights, training state and one backward call equal the plan, item by item`, async () => {
      const ckpt = await open();
      const cfg = ckpt.config;
      const B = 2;
      const r = 4;
      const ALL = targets;
      take();
      const engine = await loadEngine(ckpt, {
        gpu, weightDtype: dtype,
        plan: { numSequences: B, maxTokensPerSequence: T, mode: mode === 'lora' ? { kind: 'lora', r, targets: ALL } : { kind: 'full' } },
      });
      const item = (name: string) => engine.memoryPlan.items.find((i) => i.name === name)?.bytes ?? 0;
      expect(take(), 'weights').toBe(item('weights'));
      engine.setTrainable(mode === 'lora' ? { kind: 'lora', lora: { r, alpha: 8, targetModules: ALL, seed: 1 } } : { kind: 'full' });
      const state = mode === 'lora' ? item('LoRA params + grads') + item('AdamW moments') : item('gradients') + item('AdamW moments');
      expect(take(), 'training state').toBe(state + item('gradient norm scratch'));
      // The planned backward: B sequences of T tokens, all but the first token of each scored.
      const sequences = Array.from({ length: B }, (_, i) => ({ ids: someIds(T, cfg.vocabSize, i), scoreFrom: 1 }));
      const dLdLogp = sequences.map(() => new Float32Array(T - 1).fill(0.1));
      await engine.backward({ sequences, temperature: 1, dLdLogp });
      expect(take(), 'backward').toBe(item('activation checkpoints') + item('backward working set'));
      // A second call of the same shape reuses every backward buffer.
      await engine.backward({ sequences, temperature: 1, dLdLogp });
      expect(take(), 'second backward').toBe(0);
      // A smaller call fits in the same buffers too.
      await engine.backward({ sequences: sequences.slice(1), temperature: 1, dLdLogp: dLdLogp.slice(1) });
      expect(take(), 'smaller backward').toBe(0);
      engine.destroy();
    });
  }
});
