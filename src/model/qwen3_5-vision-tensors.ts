// The tensor names and shapes of Qwen3.5's vision tower (`model.visual.*` of a
// Qwen3_5ForConditionalGeneration checkpoint, docs/qwen3_5.md §Vision), derived from its vision config.

import type { ExpectedTensor, VisionConfig } from './types.ts';

export const VISION_PREFIX = 'model.visual.';

/** The linears of one vision block ([out, in] weights, each with a bias). */
export const VISION_BLOCK_LINEARS = ['attn.qkv', 'attn.proj', 'mlp.linear_fc1', 'mlp.linear_fc2'] as const;
export type VisionBlockLinear = (typeof VISION_BLOCK_LINEARS)[number];

/** Width of the merger's input: the m×m merged patches' features side by side. */
export function mergedWidth(v: VisionConfig): number {
  return v.hiddenSize * v.spatialMergeSize * v.spatialMergeSize;
}

/** Values in one flattened patch: channels × temporal frames × p × p (the patch embedding's Conv3d kernel). */
export function patchDim(v: VisionConfig): number {
  return v.inChannels * v.temporalPatchSize * v.patchSize * v.patchSize;
}

export function visionBlockLinearShape(v: VisionConfig, linear: VisionBlockLinear): [number, number] {
  const D = v.hiddenSize;
  switch (linear) {
    case 'attn.qkv': return [3 * D, D];
    case 'attn.proj': return [D, D];
    case 'mlp.linear_fc1': return [v.intermediateSize, D];
    case 'mlp.linear_fc2': return [D, v.intermediateSize];
  }
}

/** Every vision tensor in module order: patch embedding, position grid, blocks, merger. */
export function visionTensorLayout(v: VisionConfig): ExpectedTensor[] {
  const D = v.hiddenSize;
  const p = VISION_PREFIX;
  const out: ExpectedTensor[] = [
    { name: `${p}patch_embed.proj.weight`, shape: [D, v.inChannels, v.temporalPatchSize, v.patchSize, v.patchSize] },
    { name: `${p}patch_embed.proj.bias`, shape: [D] },
    { name: `${p}pos_embed.weight`, shape: [v.numPositionEmbeddings, D] },
  ];
  for (let b = 0; b < v.depth; b++) {
    const bp = `${p}blocks.${b}`;
    out.push({ name: `${bp}.norm1.weight`, shape: [D] }, { name: `${bp}.norm1.bias`, shape: [D] });
    out.push({ name: `${bp}.norm2.weight`, shape: [D] }, { name: `${bp}.norm2.bias`, shape: [D] });
    for (const linear of VISION_BLOCK_LINEARS) {
      const shape = visionBlockLinearShape(v, linear);
      out.push({ name: `${bp}.${linear}.weight`, shape }, { name: `${bp}.${linear}.bias`, shape: [shape[0]] });
    }
  }
  const M = mergedWidth(v);
  out.push({ name: `${p}merger.norm.weight`, shape: [D] }, { name: `${p}merger.norm.bias`, shape: [D] });
  out.push({ name: `${p}merger.linear_fc1.weight`, shape: [M, M] }, { name: `${p}merger.linear_fc1.bias`, shape: [M] });
  out.push({ name: `${p}merger.linear_fc2.weight`, shape: [v.outHiddenSize, M] }, { name: `${p}merger.linear_fc2.bias`, shape: [v.outHiddenSize] });
  return out;
}

export function visionParamCount(v: VisionConfig): number {
  return visionTensorLayout(v).reduce((s, t) => s + t.shape.reduce((a, b) => a * b, 1), 0);
}

/**
 * The tower's linears LoRA can adapt, named as PEFT target_modules entries: PEFT adapts a module when
 * its path equals an entry or ends with `.` + entry, so these dotted suffixes pick exactly the blocks'
 * attn.qkv / attn.proj / mlp.linear_fc1 / mlp.linear_fc2 or the merger's MLP (a bare `proj` would also
 * catch the Conv3d patch_embed.proj, a bare `linear_fc1` both MLPs). The text model has none of them.
 */
export const VISION_LORA_TARGETS = [...VISION_BLOCK_LINEARS, 'merger.linear_fc1', 'merger.linear_fc2'] as const;
export type VisionLoraTarget = (typeof VISION_LORA_TARGETS)[number];

/** [out, in] of a LoRA-adaptable tower linear. */
export function visionLinearShape(v: VisionConfig, target: VisionLoraTarget): [number, number] {
  if (target === 'merger.linear_fc1') return [mergedWidth(v), mergedWidth(v)];
  if (target === 'merger.linear_fc2') return [v.outHiddenSize, mergedWidth(v)];
  return visionBlockLinearShape(v, target);
}

/** The adapted tower linears' weights (`model.visual.…weight`) in module order: blocks, then the merger. */
export function visionAdaptedLinears(v: VisionConfig, targets: readonly VisionLoraTarget[]): { name: string; target: VisionLoraTarget; shape: [number, number] }[] {
  const out: { name: string; target: VisionLoraTarget; shape: [number, number] }[] = [];
  for (let b = 0; b < v.depth; b++) {
    for (const t of VISION_BLOCK_LINEARS) if (targets.includes(t)) out.push({ name: `${VISION_PREFIX}blocks.${b}.${t}.weight`, target: t, shape: visionLinearShape(v, t) });
  }
  for (const t of ['merger.linear_fc1', 'merger.linear_fc2'] as const) {
    if (targets.includes(t)) out.push({ name: `${VISION_PREFIX}${t}.weight`, target: t, shape: visionLinearShape(v, t) });
  }
  return out;
}
