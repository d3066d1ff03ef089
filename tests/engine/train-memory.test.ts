// The training memory plan against the Qwen3-0.6B numbers of specs/qwen3.md §4.
import { describe, expect, it } from 'vitest';
import { modelParams, trainMemory } from '../../src/engine/train/memory.ts';
import type { LoraTarget } from '../../src/engine/types.ts';
import { tinyConfig } from './helpers.ts';

const QWEN3_06B = tinyConfig({
  vocabSize: 151936, hiddenSize: 1024, intermediateSize: 3072, numLayers: 28, numHeads: 16, numKvHeads: 8, headDim: 128,
});
const ALL: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

describe('training memory plan', () => {
  it('counts Qwen3-0.6B parameters and LoRA adapters as the spec tables do', () => {
    expect(modelParams(QWEN3_06B)).toBe(596_049_920);
    const lora = (r: number, targetModules: LoraTarget[]) => trainMemory(QWEN3_06B, { kind: 'lora', lora: { r, alpha: 2 * r, targetModules, seed: 0 } }, 1024, 512);
    expect(lora(8, ['q_proj', 'k_proj', 'v_proj', 'o_proj']).trainableParams).toBe(2_293_760);
    expect(lora(32, ['q_proj', 'k_proj', 'v_proj', 'o_proj']).trainableParams).toBe(9_175_040);
    const r16 = lora(16, ALL);
    expect(r16.trainableParams).toBe(10_092_544);
    // weight + grad + m + v in f32 = 16 B/param ≈ 154 MiB
    expect(r16.persistentBytes).toBe(16 * 10_092_544);
    expect(Math.round(r16.persistentBytes / 2 ** 20)).toBe(154);
  });

  it('keeps only layer inputs across layers: activation memory is linear in tokens', () => {
    const mode = { kind: 'lora' as const, lora: { r: 16, alpha: 32, targetModules: ALL, seed: 0 } };
    const a = trainMemory(QWEN3_06B, mode, 8 * 1024, 8 * 512);
    const b = trainMemory(QWEN3_06B, mode, 16 * 1024, 16 * 512);
    // x_l per layer and token: 28 · 1024 · 4 B = 112 KiB
    expect(a.checkpointBytes).toBe(8 * 1024 * 112 * 1024);
    expect(b.checkpointBytes).toBe(2 * a.checkpointBytes);
    expect(b.layerActsBytes).toBe(2 * a.layerActsBytes);
    // Full fine-tuning keeps grads + moments of every parameter (the weights are the engine's own).
    expect(trainMemory(QWEN3_06B, { kind: 'full' }, 1024, 512).persistentBytes).toBe(12 * 596_049_920);
  });
});
