// The engine's view of Qwen3.5's vision tower config (ModelConfig.vision, parsed by
// src/model/vision-config.ts): the tensors it uploads and the bytes its forward needs.

import type { VisionConfig } from '../../model/types.ts';

/** The tower's hyper-parameters as the engine uses them. */
export type VisionTowerConfig = VisionConfig;

/** Values per patch row of pixel_values: in_channels · temporal_patch_size · patch_size². */
export function patchValues(c: VisionTowerConfig): number {
  return c.inChannels * c.temporalPatchSize * c.patchSize * c.patchSize;
}

/** The tower's tensors (stored names, `model.visual.` prefix) and the shapes the engine expects. */
export function visionTensorLayout(c: VisionTowerConfig): { name: string; shape: number[] }[] {
  const D = c.hiddenSize;
  const F = c.intermediateSize;
  const M = D * c.spatialMergeSize ** 2;
  const out: { name: string; shape: number[] }[] = [
    { name: 'patch_embed.proj.weight', shape: [D, c.inChannels, c.temporalPatchSize, c.patchSize, c.patchSize] },
    { name: 'patch_embed.proj.bias', shape: [D] },
    { name: 'pos_embed.weight', shape: [c.numPositionEmbeddings, D] },
  ];
  for (let b = 0; b < c.depth; b++) {
    const p = `blocks.${b}.`;
    out.push(
      { name: `${p}norm1.weight`, shape: [D] }, { name: `${p}norm1.bias`, shape: [D] },
      { name: `${p}attn.qkv.weight`, shape: [3 * D, D] }, { name: `${p}attn.qkv.bias`, shape: [3 * D] },
      { name: `${p}attn.proj.weight`, shape: [D, D] }, { name: `${p}attn.proj.bias`, shape: [D] },
      { name: `${p}norm2.weight`, shape: [D] }, { name: `${p}norm2.bias`, shape: [D] },
      { name: `${p}mlp.linear_fc1.weight`, shape: [F, D] }, { name: `${p}mlp.linear_fc1.bias`, shape: [F] },
      { name: `${p}mlp.linear_fc2.weight`, shape: [D, F] }, { name: `${p}mlp.linear_fc2.bias`, shape: [D] },
    );
  }
  out.push(
    { name: 'merger.norm.weight', shape: [D] }, { name: 'merger.norm.bias', shape: [D] },
    { name: 'merger.linear_fc1.weight', shape: [M, M] }, { name: 'merger.linear_fc1.bias', shape: [M] },
    { name: 'merger.linear_fc2.weight', shape: [c.outHiddenSize, M] }, { name: 'merger.linear_fc2.bias', shape: [c.outHiddenSize] },
  );
  return out.map((t) => ({ ...t, name: `model.visual.${t.name}` }));
}

/** Float32 bytes of the tower's activations for `patches` patch rows (the memory plan's count). */
export function visionActivationBytes(c: VisionTowerConfig, patches: number): number {
  const D = c.hiddenSize;
  // x, its ping-pong twin, the normed rows, qkv and q/k/v split, attention output, MLP hidden, lse;
  // the host-made layout (tower.ts upload): 4 position taps + their weights, the 2-D rotary's cos/sin, the attention metadata
  const perPatch = 2 * D + D + 3 * D + 3 * D + D + Math.max(c.intermediateSize, D) + c.numHeads + (4 + 4 + c.headDim + 4);
  const merged = patches / c.spatialMergeSize ** 2;
  const M = D * c.spatialMergeSize ** 2;
  return 4 * (patches * (perPatch + patchValues(c)) + merged * (M + c.outHiddenSize));
}
