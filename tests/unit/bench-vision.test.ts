// The pure parts of `webgrpo bench train --vision on` (bench/engine/vision-train-step.ts): the tower's
// GEMM FLOPs against a count by hand at a tiny shape, the phase a profiled dispatch is charged to, the
// image grid of a pixel size and the sequences' layout (image spans, M-RoPE positions, scored tokens).
// That the FLOP count equals what the engine runs is tests/engine/gpu-bench-counts.test.ts's job.
import { describe, expect, it } from 'vitest';
import { benchVisionTrainStep, fastestDispatches, imageGrid, phaseOf, phaseShares, towerStepFlops, visionTrainBatch } from '../../bench/engine/vision-train-step.ts';
import { benchCheckpoint } from '../../bench/engine/common.ts';
import type { DispatchTiming } from '../../src/engine/recorder.ts';
import type { VisionConfig } from '../../src/model/types.ts';

/** D = 8, F = 16, 2 heads of 4, 2 blocks, 16-px patches of 2 frames (1536 values), 2×2 merge (M = 32) into 12. */
const V: VisionConfig = {
  depth: 2, hiddenSize: 8, intermediateSize: 16, numHeads: 2, headDim: 4, inChannels: 3, patchSize: 16, temporalPatchSize: 2,
  spatialMergeSize: 2, outHiddenSize: 12, numPositionEmbeddings: 16, positionGridSide: 4, hiddenAct: 'gelu_pytorch_tanh', ropeTheta: 10000,
  layerNormEps: 1e-6, imageTokenId: 400, videoTokenId: 401, visionStartTokenId: 402, visionEndTokenId: 403, mropeSection: [2, 1, 1],
};

describe('bench train --vision: pure parts', () => {
  it('towerStepFlops: one 64×64 image (16 patches, 4 merged rows) by hand, frozen and with LoRA r = 2', () => {
    // Forward, 2·rows·in·out each: patch embedding 2·16·1536·8 = 393216; per block qkv 2·16·8·24 = 6144,
    // proj 2·16·8·8 = 2048, fc1 and fc2 2·16·8·16 = 4096 each (16384, ×2 blocks = 32768); merger fc1
    // 2·4·32·32 = 8192, fc2 2·4·32·12 = 3072.
    const frozen = towerStepFlops(V, [[1, 4, 4]], 2, false);
    expect(frozen.forward).toBe(393216 + 32768 + 8192 + 3072);
    expect(frozen.backward).toBe(0);
    // Bidirectional attention within the frame: QKᵀ and PV, 2·16²·8 each, per block.
    expect(frozen.attentionForward).toBe(2 * (2 * 2 * 16 * 16 * 8));

    const lora = towerStepFlops(V, [[1, 4, 4]], 2, true);
    // + A·x and B·u, 2·rows·r·(in + out): per block 2·16·2·(32 + 16 + 24 + 24) = 6144 (×2); merger 2·4·2·(64 + 44) = 1728.
    expect(lora.forward).toBe(393216 + 32768 + 8192 + 3072 + 2 * 6144 + 1728);
    // Backward. Merger fc2 (in 32, out 12): dX 2·4·12·32 = 3072; LoRA u 2·4·2·32 = 512, dB 2·12·2·4 = 192,
    // du 2·4·2·12 = 192, dA 2·2·32·4 = 512, du·A 2·4·32·2 = 512 (1920). Merger fc1 (32, 32): dX 8192, LoRA 5·512 = 2560.
    const merger = 3072 + 1920 + 8192 + 2560;
    // Each block recomputed with its adapters: 16384 + 6144.
    const recompute = 2 * (16384 + 6144);
    // dX: fc2 4096, fc1 4096, proj 2048, qkv 6144 — but not block 0's qkv. LoRA per linear (in, out) with
    // dX = 2·16·2·(3·in + 2·out): qkv (8, 24) 4608, proj (8, 8) 2560, fc1 (8, 16) 3584, fc2 (16, 8) 4096;
    // block 0's qkv without du·A: 2·16·2·(2·8 + 2·24) = 4096.
    const block1 = (4096 + 4096 + 2048 + 6144) + (4608 + 2560 + 3584 + 4096);
    const block0 = (4096 + 4096 + 2048) + (4096 + 2560 + 3584 + 4096);
    expect(lora.backward).toBe(merger + recompute + block1 + block0);
    // Two images: twice the rows, attention per frame (not over both).
    const two = towerStepFlops(V, [[1, 4, 4], [1, 4, 4]], 2, true);
    expect(two.forward).toBe(2 * lora.forward);
    expect(two.backward).toBe(2 * lora.backward);
    expect(two.attentionForward).toBe(2 * lora.attentionForward);
  });

  it('phaseOf: the tower forward inside the language model\'s forward recorder, its backward in the train vision recorders', () => {
    const fwd = 'train forward + LM head backward';
    expect(phaseOf({ recorder: fwd, label: 'visual blocks.0.attn.qkv' })).toBe('tower forward');
    expect(phaseOf({ recorder: fwd, label: 'visual merger.linear_fc2 lora B' })).toBe('tower forward');
    expect(phaseOf({ recorder: fwd, label: 'image embeddings splice' })).toBe('language model');
    expect(phaseOf({ recorder: fwd, label: 'lm head chunk' })).toBe('language model');
    expect(phaseOf({ recorder: 'train vision block 1 backward', label: 'visual blocks.1.attn.qkv' })).toBe('tower backward');
    expect(phaseOf({ recorder: 'train vision merger backward', label: 'layernorm backward' })).toBe('tower backward');
    expect(phaseOf({ recorder: 'train layer 0 backward', label: 'gather rows' })).toBe('language model');
    const d = (recorder: string, label: string, ms: number): DispatchTiming => ({ file: 'x.wgsl', constants: {}, label, recorder, params: new Uint32Array(0), groups: [1, 1, 1], ms });
    const s = phaseShares([d(fwd, 'visual pos_embed', 1), d(fwd, 'lm head', 2), d('train vision block 0 backward', 'attention dq', 3)], [d('adamw', 'adamw', 4)]);
    const k = (file: string, ms: number): DispatchTiming => ({ ...d('train vision merger backward', '', ms), file });
    expect(Object.entries(phaseShares([k('a.wgsl', 1), k('b.wgsl', 3), k('a.wgsl', 1)], [])['tower backward'].kernels)).toEqual([['b.wgsl', 3], ['a.wgsl', 2]]);
    expect(s['tower forward']).toEqual({ ms: 1, share: 0.1, dispatches: 1, kernels: { 'x.wgsl': 1 } });
    expect(s['tower backward'].share).toBeCloseTo(0.3, 12);
    expect(s['language model'].share).toBeCloseTo(0.2, 12);
    expect(s.optimizer.share).toBeCloseTo(0.4, 12);
  });

  it('fastestDispatches keeps each dispatch\'s fastest repeat; repeats of different work are refused', () => {
    const d = (ms: number, label = 'a'): DispatchTiming => ({ file: 'x.wgsl', constants: {}, label, recorder: 'r', params: new Uint32Array(0), groups: [1, 1, 1], ms });
    expect(fastestDispatches([[d(3), d(1, 'b')], [d(2), d(4, 'b')]]).map((x) => [x.label, x.ms])).toEqual([['a', 2], ['b', 1]]);
    expect(() => fastestDispatches([[d(1)], [d(1), d(2)]])).toThrow(/profiled repeats recorded 2 and 1 dispatches/);
  });

  it('bad options are clear errors before any model is built', async () => {
    await expect(benchVisionTrainStep({ vision: 'on', mode: 'full' })).rejects.toThrow(/LoRA only \(the tower frozen or adapted\), got --mode 'full'/);
    await expect(benchVisionTrainStep({ vision: 'on', tower: 'half' })).rejects.toThrow(/--tower must be frozen, lora or both, got 'half'/);
    await expect(benchCheckpoint({ vision: 'on', arch: 'qwen3' }, 'f32')).rejects.toThrow(/--vision on needs --arch qwen3_5/);
    await expect(benchCheckpoint({ vision: 'yes' }, 'f32')).rejects.toThrow(/--vision must be on or off, got 'yes'/);
  });

  it('imageGrid: WxH pixels in multiples of 32 → (1, H/16, W/16); anything else is a clear error', () => {
    expect(imageGrid(V, '512x256')).toEqual([1, 16, 32]);
    expect(() => imageGrid(V, '250x256')).toThrow(/--imageSize must be WxH with W and H positive multiples of patch × merge = 32, got '250x256'/);
    expect(() => imageGrid(V, '256')).toThrow(/--imageSize/);
    expect(() => imageGrid(V, '0x32')).toThrow(/--imageSize/);
  });

  it('visionTrainBatch: each image\'s placeholders between vision start / end, get_rope_index positions, the text\'s second half scored', () => {
    const { sequences, dLdLogp, scoredTokens, imageTokensPerSequence, tokensPerSequence } = visionTrainBatch(V, 2, 8, 2, [1, 4, 4]);
    // 8 text tokens + 2 × (start + 4 placeholders + end).
    expect(tokensPerSequence).toBe(20);
    expect(imageTokensPerSequence).toBe(8);
    expect(scoredTokens).toBe(8);
    const s = sequences[1]!;
    expect(s.ids).toHaveLength(20);
    expect(s.ids.slice(1, 13)).toEqual([402, 400, 400, 400, 400, 403, 402, 400, 400, 400, 400, 403]);
    expect(s.ids.filter((id) => id >= 256 && id !== 400 && id !== 402 && id !== 403)).toEqual([]);
    expect(s.scoreFrom).toBe(16);
    expect(s.images!.offsets).toEqual([2, 8]);
    expect(s.images!.grids).toEqual([[1, 4, 4], [1, 4, 4]]);
    expect(s.images!.pixelValues).toHaveLength(2 * 16 * 1536);
    // Text at 0, 1; image 1's 2×2 merged grid from 2: (t, h, w) = 2 + (0, row, col); the text after it
    // resumes at 2 + max(h, w)/merge = 4.
    expect(s.images!.positions.map((row) => row.slice(0, 7))).toEqual([[0, 1, 2, 2, 2, 2, 4], [0, 1, 2, 2, 3, 3, 4], [0, 1, 2, 3, 2, 3, 4]]);
    expect(dLdLogp.map((g) => [...g])).toEqual([Array(4).fill(Math.fround(-1 / 8)), Array(4).fill(Math.fround(-1 / 8))]);
    expect(() => visionTrainBatch(V, 1, 1, 1, [1, 4, 4])).toThrow(/--seqLen must be at least 2/);
  });
});
