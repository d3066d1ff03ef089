// The vision tower's hyper-parameters from config.json's vision_config (Qwen3_5VisionConfig), with
// transformers' defaults, and the text side's M-RoPE section. Only what the engine's vision forward
// implements is accepted; anything else is refused with the field named.

export interface VisionTowerConfig {
  depth: number;
  hiddenSize: number;
  numHeads: number;
  headDim: number;
  intermediateSize: number;
  /** Activation of the blocks' MLP (the merger's is always exact GELU). */
  hiddenAct: 'gelu_pytorch_tanh' | 'gelu';
  inChannels: number;
  patchSize: number;
  temporalPatchSize: number;
  spatialMergeSize: number;
  outHiddenSize: number;
  numPositionEmbeddings: number;
  ropeTheta: number;
  /** Token id of <|image_pad|> in the text (config.json's image_token_id). */
  imageTokenId: number;
  /** Frequencies per t/h/w axis of the text model's M-RoPE (text_config.rope_parameters.mrope_section). */
  mropeSection: [number, number, number];
}

type Json = Record<string, unknown>;

const DEFAULTS = {
  depth: 27, hidden_size: 1152, hidden_act: 'gelu_pytorch_tanh', intermediate_size: 4304, num_heads: 16, in_channels: 3,
  patch_size: 16, spatial_merge_size: 2, temporal_patch_size: 2, out_hidden_size: 3584, num_position_embeddings: 2304,
  image_token_id: 248056, mrope_section: [11, 11, 10],
} as const;

/** null when config.json has no vision tower (a text-only checkpoint). */
export function readVisionTowerConfig(raw: Json, rotaryDim: number): VisionTowerConfig | null {
  const v = raw.vision_config as Json | undefined;
  if (v === undefined || v === null) return null;
  const fail = (msg: string): never => { throw new Error(`config.json vision_config: ${msg}`); };
  if (typeof v !== 'object') fail('must be an object');
  const int = (key: keyof typeof DEFAULTS, from: Json = v): number => {
    const x = from[key] ?? DEFAULTS[key];
    if (!Number.isInteger(x) || (x as number) <= 0) fail(`${key} must be a positive integer, got ${JSON.stringify(x)}`);
    return x as number;
  };
  const act = v.hidden_act ?? DEFAULTS.hidden_act;
  if (act !== 'gelu_pytorch_tanh' && act !== 'gelu') fail(`hidden_act '${String(act)}' is not supported (gelu_pytorch_tanh or gelu)`);
  const rope = (v.rope_parameters ?? {}) as Json;
  if (rope.rope_type !== undefined && rope.rope_type !== 'axial') fail(`rope_parameters.rope_type '${String(rope.rope_type)}' is not supported (only 'axial')`);
  const ropeTheta = (rope.rope_theta ?? 10000) as number;
  if (typeof ropeTheta !== 'number' || !(ropeTheta > 0)) fail(`rope_parameters.rope_theta must be a positive number, got ${JSON.stringify(rope.rope_theta)}`);
  for (const key of ['patch_size', 'temporal_patch_size'] as const) if (Array.isArray(v[key])) fail(`${key} as a list is not supported`);
  const hiddenSize = int('hidden_size');
  const numHeads = int('num_heads');
  if (hiddenSize % numHeads !== 0) fail(`hidden_size ${hiddenSize} is not a multiple of num_heads ${numHeads}`);
  const headDim = hiddenSize / numHeads;
  if (headDim % 4 !== 0) fail(`head dim ${headDim} must be a multiple of 4 (2-D rotary: h and w each rotate a quarter)`);
  const positions = int('num_position_embeddings');
  if (Math.floor(Math.sqrt(positions)) ** 2 !== positions) fail(`num_position_embeddings ${positions} is not a square (the learned grid is square)`);
  const text = (raw.text_config ?? raw) as Json;
  const section = ((text.rope_parameters as Json | undefined)?.mrope_section ?? DEFAULTS.mrope_section) as unknown;
  if (!Array.isArray(section) || section.length !== 3 || !section.every((x) => Number.isInteger(x) && x >= 0)) {
    fail(`text_config.rope_parameters.mrope_section must be three non-negative integers, got ${JSON.stringify(section)}`);
  }
  const sectionSum = (section as number[]).reduce((a, b) => a + b, 0);
  if (sectionSum !== rotaryDim / 2) fail(`text_config.rope_parameters.mrope_section ${JSON.stringify(section)} sums to ${sectionSum}, not rotary dims / 2 = ${rotaryDim / 2}`);
  return {
    depth: int('depth'), hiddenSize, numHeads, headDim, intermediateSize: int('intermediate_size'), hiddenAct: act as VisionTowerConfig['hiddenAct'],
    inChannels: int('in_channels'), patchSize: int('patch_size'), temporalPatchSize: int('temporal_patch_size'),
    spatialMergeSize: int('spatial_merge_size'), outHiddenSize: int('out_hidden_size'), numPositionEmbeddings: positions, ropeTheta,
    imageTokenId: int('image_token_id', raw), mropeSection: section as [number, number, number],
  };
}

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
  // x, its ping-pong twin, the normed rows, qkv and q/k/v split, attention output, MLP hidden, lse
  const perPatch = 2 * D + D + 3 * D + 3 * D + D + Math.max(c.intermediateSize, D) + c.numHeads;
  const merged = patches / c.spatialMergeSize ** 2;
  const M = D * c.spatialMergeSize ** 2;
  return 4 * (patches * (perPatch + patchValues(c)) + merged * (M + c.outHiddenSize));
}
