// How much GPU memory a run needs, item by item, and whether each buffer fits the adapter's
// limits (shared/specs/qwen3.md §4). Computed from the config alone, before any allocation, so the
// UI and CLI can say clearly what does not fit. Tensors larger than one storage binding are not
// rejected: they are split by rows across several bindings (and buffers), and the split is reported.
//
// The ONE plan: the per-token activations (layerActsCounts) and every buffer of a backward call
// (backwardBufferPlan) are described here and nowhere else. forward.ts builds its LayerActs from
// layerActsCounts, and the backward pass refuses to allocate a buffer that is not in
// backwardBufferPlan with the same size, so the plan cannot drift from what is allocated
// (tests/engine/gpu-memory.test.ts compares it with the bytes createBuffer was asked for).

import { adaptedLinears, linearAttnConvDim, linearShape, modelLinears, qwen3ParamCount, qwen3TensorLayout, type ModelLinear } from '../model/qwen3-tensors.ts';
import { DELTA_CHUNK, deltaBackwardWork } from './linear-attention-plan.ts';
import type { ModelConfig } from '../model/types.ts';
import { visionActivationBytes, visionTensorLayout, type VisionTowerConfig } from './vision/config.ts';
import { visionAdaptedLinears, type VisionLoraTarget } from '../model/qwen3_5-vision-tensors.ts';

export type GpuDtype = 'f32' | 'f16';

export type TrainingMode =
  /** visionTargets: the vision tower's linears adapted too (needs MemoryPlanInput.vision). */
  | { kind: 'lora'; r: number; targets: readonly ModelLinear[]; visionTargets?: readonly VisionLoraTarget[] }
  /** Every weight, the vision tower's too when the plan has it (MemoryPlanInput.vision), unless freezeVisionTower. */
  | { kind: 'full'; freezeVisionTower?: boolean };

export interface MemoryLimits {
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  /** Total GPU memory the run may use, when known (WebGPU does not report it; the user may set it). */
  budgetBytes?: number;
}

export interface MemoryPlanInput {
  config: ModelConfig;
  /** How base weights are stored on the GPU. Full fine-tuning keeps f32 weights regardless. */
  weightDtype: GpuDtype;
  mode: TrainingMode;
  /** Sequences generated and trained together (GRPO: prompts per step × num_generations). */
  numSequences: number;
  /** Prompt + completion (+ tool turns) tokens of one sequence. */
  maxTokensPerSequence: number;
  limits: MemoryLimits;
  /** Qwen3.5's vision tower when loaded, and the most image patches one forward pass encodes. */
  vision?: { config: VisionTowerConfig; maxPatches: number };
  /** Element type of the KV cache (default f32; f16 needs shader-f16: chooseKvDtype). */
  kvDtype?: GpuDtype;
}

/**
 * The KV cache's element type. 'auto': f16 on GPUs with shader-f16 (what real-GPU engines keep; the
 * attention kernels accumulate in f32, log-probs move by ~KV_F16_LOGPROB_ERROR), f32 on software
 * adapters (their memory is the host's, and f32 keeps generation exact against scoring) unless only
 * f16 fits; f32 without shader-f16.
 */
export function chooseKvDtype(wanted: 'auto' | GpuDtype, adapter: { f16: boolean; software: boolean }, fits: (kv: GpuDtype) => boolean): GpuDtype {
  if (wanted === 'f16' && !adapter.f16) throw new Error("kvCache: 'f16' needs an adapter with shader-f16 (this one has none); use 'f32' or 'auto'");
  if (wanted !== 'auto') return wanted;
  if (!adapter.f16) return 'f32';
  return !adapter.software || (!fits('f32') && fits('f16')) ? 'f16' : 'f32';
}

/**
 * Bound on |Δ log-prob| of generation with an f16 KV cache against the exact forward: measured 5.7e-4 on
 * transformers' Qwen3.5 checkpoint and 4.6e-5 on a tiny Qwen3, on lavapipe with f32 weights
 * (tests/engine/gpu-kv-cache-f16.test.ts): k and v rounded to 11 significant bits.
 */
export const KV_F16_LOGPROB_ERROR = 1e-3;

/** Image patches per pass the memory plan assumes by default: one 512×512 image at patch 16. */
export const DEFAULT_IMAGE_PATCHES = 1024;

/**
 * planMemory's `vision` for a model that runs with its vision tower (a vision-language checkpoint: the
 * CLI's train and the app load the tower whenever config.vision is usable), at `maxPatches` per pass;
 * nothing for a text model.
 */
export function towerPlan(config: ModelConfig, maxPatches = DEFAULT_IMAGE_PATCHES): Pick<MemoryPlanInput, 'vision'> {
  return config.vision ? { vision: { config: config.vision, maxPatches } } : {};
}

export interface MemoryItem {
  name: string;
  bytes: number;
  detail: string;
}

export interface BufferPlan {
  name: string;
  bytes: number;
  /** Bytes of one row (the unit a split never cuts). */
  rowBytes: number;
  rows: number;
  /** Bindings (≤ maxStorageBufferBindingSize each) the rows are spread over; 1 = no split. */
  bindings: number;
  rowsPerBinding: number;
}

export interface MemoryPlan {
  params: number;
  trainableParams: number;
  items: MemoryItem[];
  /** The largest buffers, checked against the binding and buffer limits. */
  buffers: BufferPlan[];
  totalBytes: number;
  fits: boolean;
  /** One readable paragraph: the total, the splits, and what does not fit. */
  message: string;
  /** Element type of the KV cache the plan counts. */
  kvDtype: GpuDtype;
}

const F32 = 4;
const bytesOf = (dtype: GpuDtype) => (dtype === 'f32' ? 4 : 2);

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${bytes} B` : `${v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)} ${units[u]}`;
}

/**
 * Parameters LoRA adds: r·(in + out) per targeted linear of every layer that has it (Qwen3.5: the
 * DeltaNet linears in linear_attention layers, q/k/v/o_proj in full_attention ones; as PEFT skips them).
 */
export function loraParamCount(config: ModelConfig, r: number, targets: readonly ModelLinear[]): number {
  return adaptedLinears(config, targets).reduce((s, { target }) => {
    const [out, inp] = linearShape(config, target);
    return s + r * (inp + out);
  }, 0);
}

/**
 * KV cache bytes per token: full-attention layers × (K and V) × kv heads × head_dim × dtype size
 * (Qwen3.5's linear-attention layers keep a fixed-size state instead, linearStateBytesPerSequence).
 */
export function kvBytesPerToken(config: ModelConfig, dtype: GpuDtype): number {
  const layers = config.layerTypes.filter((t) => t === 'full_attention').length;
  return layers * 2 * config.numKvHeads * config.headDim * bytesOf(dtype);
}

/**
 * f32 bytes of one sequence's Gated DeltaNet state, over every linear-attention layer: the recurrent
 * state (Hv, dk, dv) and the conv state (the last K−1 conv inputs of the C = 2·Hk·dk + Hv·dv
 * channels). Independent of the sequence length; 0 for Qwen3.
 */
export function linearStateBytesPerSequence(config: ModelConfig): number {
  const la = config.linearAttention;
  if (!la) return 0;
  const layers = config.layerTypes.filter((t) => t === 'linear_attention').length;
  const C = 2 * la.numKeyHeads * la.keyHeadDim + la.numValueHeads * la.valueHeadDim;
  return layers * (la.numValueHeads * la.keyHeadDim * la.valueHeadDim + C * (la.convKernelDim - 1)) * F32;
}

/** Parameters the GPU keeps in f32 whatever the matrices are: every 1-D tensor (norms, A_log, dt_bias) and the 3-D conv weight (engine.ts). */
function f32ParamCount(c: ModelConfig): number {
  const D = c.hiddenSize;
  let n = D; // model.norm
  for (const type of c.layerTypes) {
    n += 2 * D;
    if (type === 'full_attention') n += 2 * c.headDim;
    else {
      const la = c.linearAttention!;
      const C = 2 * la.numKeyHeads * la.keyHeadDim + la.numValueHeads * la.valueHeadDim;
      n += 2 * la.numValueHeads + la.valueHeadDim + C * la.convKernelDim;
    }
  }
  return n;
}

/** Bytes a buffer of `bytes` really takes: the engine rounds to whole words, 16 bytes at least. */
export const bufferSize = (bytes: number): number => Math.max(16, Math.ceil(bytes / 4) * 4);

/** Bytes of one logits chunk (Ts, Vc) f32 in the backward LM head: bounds its working set. */
export const LOGITS_CHUNK_BYTES = 32 * 1024 * 1024;

/** f32 values per token of each LayerActs field (internals.ts), besides per-token scalars. */
export function layerActsCounts(c: ModelConfig): Record<string, number> {
  const { hiddenSize: D, intermediateSize: F, numHeads: H, numKvHeads: K, headDim: d } = c;
  const counts: Record<string, number> = {
    x: D, a: D, rstd1: 1, qRaw: H * d, kRaw: K * d, qRstd: H, kRstd: K, q: H * d, k: K * d, v: K * d,
    attn: H * d, lse: H, xMid: D, b: D, rstd2: 1, gate: F, up: F, hidden: F, xOut: D,
  };
  if (c.attnOutputGate) Object.assign(counts, { qGate: 2 * H * d, attnGated: H * d });
  const la = c.linearAttention;
  if (la && c.layerTypes.includes('linear_attention')) {
    const { numKeyHeads: hk, numValueHeads: hv, keyHeadDim: dk, valueHeadDim: dv } = la;
    const C = 2 * hk * dk + hv * dv;
    Object.assign(counts, {
      laQkv: C, laConv: C, laQk: 2 * hk * dk, laInv: 2 * hk, laZ: hv * dv, laA: hv, laB: hv, laGb: 2 * hv,
      laCore: hv * dv, laRstd: hv, laNormed: hv * dv,
    });
  }
  return counts;
}

/** Vocabulary rows per logits chunk of the backward LM head over Ts scored rows. */
export function logitsChunkRows(Ts: number, vocab: number, bindingBytes: number): number {
  return Math.min(vocab, Math.max(1, Math.floor(Math.min(LOGITS_CHUNK_BYTES, bindingBytes) / (Ts * F32))));
}

/** LayerActs fields only a gated/softmax attention layer uses (every other field serves both layer types). */
const ATTENTION_ACTS = new Set(['qRaw', 'kRaw', 'qRstd', 'kRstd', 'q', 'k', 'v', 'attn', 'lse', 'qGate', 'attnGated']);
/** Backward gradient roles only an attention layer uses. */
const ATTENTION_GRADS = new Set(['dattn', 'dq', 'dq raw', 'dk', 'dk raw', 'dv', 'attention stats', 'dattn gated', 'dq gate']);

/**
 * Every buffer of one backward call (backwardBufferPlan's), and the buffer each role is taken from.
 * Qwen3.5 recomputes and differentiates one layer at a time, a Gated DeltaNet or a gated-attention
 * one, so the roles only one layer type uses share buffers with the other type's: the largest
 * attention-only role with the largest DeltaNet-only one, and so on down, each buffer sized by the
 * larger of its two roles.
 */
export interface BackwardBuffers {
  /** Buffer name → bytes as allocated (a shared buffer is named `role a | role b`). */
  buffers: Map<string, number>;
  /** Role → the buffer it is taken from (roles not listed are their own buffer). */
  slotOf: Map<string, string>;
}

/**
 * Every buffer one backward call over packed sequences of `lengths` tokens (Ts of them scored)
 * allocates, in bytes as allocated. `loraR` is the largest LoRA rank (0: none).
 * backward.ts allocates exactly these.
 */
export function backwardBufferPlan(c: ModelConfig, lengths: readonly number[], Ts: number, loraR: number, bindingBytes: number,
  vision?: { config: VisionTowerConfig; patches: number; full?: boolean }): Map<string, number> {
  return backwardBuffers(c, lengths, Ts, loraR, bindingBytes, vision).buffers;
}

/** backwardBufferPlan's buffers with the role → shared buffer map (backward.ts takes its roles through it). */
export function backwardBuffers(c: ModelConfig, lengths: readonly number[], Ts: number, loraR: number, bindingBytes: number,
  vision?: { config: VisionTowerConfig; patches: number; full?: boolean }): BackwardBuffers {
  const { hiddenSize: D, intermediateSize: F, numHeads: H, numKvHeads: K, headDim: d, numLayers: L } = c;
  const T = lengths.reduce((a, n) => a + n, 0);
  const plan = new Map<string, number>();
  const add = (role: string, bytes: number) => plan.set(role, bufferSize(bytes));
  // Per-token roles of one layer type only, (role, bytes) each: shared below when the model has both types.
  const attentionOnly: [string, number][] = [];
  const deltaOnly: [string, number][] = [];
  const la = c.layerTypes.includes('linear_attention') ? c.linearAttention : undefined;
  const share = la !== undefined && c.layerTypes.includes('full_attention');
  const addTyped = (role: string, bytes: number, type: 'attention' | 'delta' | null) => {
    if (share && type === 'attention') attentionOnly.push([role, bufferSize(bytes)]);
    else if (share && type === 'delta') deltaOnly.push([role, bufferSize(bytes)]);
    else add(role, bytes);
  };
  // the packed batch: token ids, [kvBase, position, kvSlot, seq], RoPE cos/sin of the rotary dims
  add('packed tokens', Math.max(T, 1) * 4);
  add('packed meta', Math.max(T, 1) * 16);
  add('packed rope', Math.max(T * c.rotaryDim * F32, 4));
  for (const [role, n] of Object.entries(layerActsCounts(c))) {
    addTyped(`layer ${role}`, T * n * F32, ATTENTION_ACTS.has(role) ? 'attention' : role.startsWith('la') ? 'delta' : null);
  }
  for (let l = 0; l < L; l++) add(`x[${l}]`, T * D * F32);
  const perToken: [string, number][] = [
    ['dx', D], ['dnorm', D], ['dhidden', F], ['dgate', F], ['dup', F], ['dattn', H * d], ['dq', H * d], ['dq raw', H * d],
    ['dk', K * d], ['dk raw', K * d], ['dv', K * d], ['attention stats', 2 * H], ['rstd', Math.max(H, K, la?.numValueHeads ?? 1)], ['sequence bounds', 2],
  ];
  // Qwen3.5's gated attention: o_proj's input gradient, and the (query, gate) gradient of q_proj's output.
  if (c.attnOutputGate) perToken.push(['dattn gated', H * d], ['dq gate', 2 * H * d]);
  let frozen = Math.max(D, d);
  if (la) {
    const { numValueHeads: hv, keyHeadDim: dk, valueHeadDim: dv } = la;
    const C = linearAttnConvDim(c);
    perToken.push(
      ['la dnormed', hv * dv], ['la dn', hv * dv], ['la dz', hv * dv], ['la dcore', hv * dv], ['la dqk', 2 * hv * dk],
      ['la dconv', C], ['la dpre', C], ['la dqkv', C], ['la dgb', 2 * hv], ['la da', hv], ['la db', hv],
    );
    // The delta rule's backward: a saved state every DELTA_CHUNK tokens of each sequence + one chunk's scratch per (sequence, value head).
    add('la delta work', deltaBackwardWork(lengths, hv, dk, dv, DELTA_CHUNK).floats * F32);
    add('packed seqTable', lengths.length * 16);
    frozen = Math.max(frozen, C * la.convKernelDim, dv, hv);
    // A_log and dt_bias are written by one dispatch: two distinct frozen scratches.
    add('frozen dw b', hv * F32);
  }
  for (const [role, n] of perToken) addTyped(role, T * n * F32, ATTENTION_GRADS.has(role) ? 'attention' : role.startsWith('la ') ? 'delta' : null);
  const slotOf = new Map<string, string>();
  const bySize = (a: [string, number], b: [string, number]) => b[1] - a[1];
  attentionOnly.sort(bySize);
  deltaOnly.sort(bySize);
  for (let i = 0; i < Math.max(attentionOnly.length, deltaOnly.length); i++) {
    const pair = [attentionOnly[i], deltaOnly[i]].filter((r): r is [string, number] => r !== undefined);
    const slot = pair.map(([role]) => role).join(' | ');
    plan.set(slot, Math.max(...pair.map(([, bytes]) => bytes)));
    for (const [role] of pair) slotOf.set(role, slot);
  }
  add('frozen dw', frozen * F32);
  if (loraR > 0) {
    add('lora u', T * loraR * F32);
    add('lora du', T * loraR * F32);
  }
  for (const role of ['scored rows', 'targets', 'dL/dlogp', 'dL/dentropy', 'final rstd']) add(role, Ts * F32);
  add('logsumexp state', Ts * 3 * F32);
  for (const role of ['x_L scored rows', 'h scored rows', 'dh scored rows', 'dx_L scored rows']) add(role, Ts * D * F32);
  add('logits chunk', Ts * logitsChunkRows(Ts, c.vocabSize, bindingBytes) * F32);
  // LoRA on the vision tower or its full fine-tuning: its checkpoints, one block's intermediates and gradients, the merger's (vision-backward.ts).
  if (vision) for (const [role, bytes] of visionBackwardRoles(vision.config, vision.patches, loraR, vision.full)) add(role, bytes);
  return { buffers: plan, slotOf };
}

/**
 * The buffers of the vision tower's backward (train/vision-backward.ts: LoRA on the tower, or `full`
 * fine-tuning of it) over S patches, by role, in bytes: D hidden, F intermediate, H heads, G = S/m²
 * merged rows of M = m²D.
 */
export function visionBackwardRoles(c: VisionTowerConfig, S: number, loraR: number, full = false): [string, number][] {
  const D = c.hiddenSize;
  const F = c.intermediateSize;
  const H = c.numHeads;
  const G = S / c.spatialMergeSize ** 2;
  const M = D * c.spatialMergeSize ** 2;
  const roles: [string, number][] = [];
  for (let b = 0; b <= c.depth; b++) roles.push([`vision x[${b}]`, S * D]); // block inputs, then the merger's input
  roles.push(
    ['vision n1', S * D], ['vision qkv', S * 3 * D], ['vision q', S * D], ['vision k', S * D], ['vision v', S * D],
    ['vision attn', S * D], ['vision lse', S * H], ['vision xMid', S * D], ['vision n2', S * D], ['vision pre', S * F],
    ['vision hidden', S * F], ['vision xOut', S * D],
    ['vision merger normed', S * D], ['vision merger pre', G * M], ['vision merger hidden', G * M], ['vision embeds', G * c.outHiddenSize],
    ['vision dx', S * D], ['vision dnorm', S * D], ['vision dhidden', S * F], ['vision dattn', S * D],
    ['vision dq', S * D], ['vision dk', S * D], ['vision dv', S * D], ['vision dqkv', S * 3 * D], ['vision attention stats', S * H * 2],
    ['vision bounds', S * 2], ['vision dmerger hidden', G * M], ['vision dembeds', G * c.outHiddenSize],
    ['vision lora u', S * loraR], ['vision lora du', S * loraR],
    // LayerNorm backward: each row's (mean, rstd) for dγ, and the dγ target of a frozen norm (never written).
    ['vision ln stats', S * 2], ['vision frozen dw', D],
  );
  // Full fine-tuning: the position table's taps inverted per table row (4 per patch), for its gradient.
  if (full) roles.push(['vision pos offsets', c.numPositionEmbeddings + 1], ['vision pos patches', 4 * S], ['vision pos weights', 4 * S]);
  return roles.map(([role, floats]) => [role, floats * F32]);
}

/** (rows, in + out) of every vision-tower LoRA factor pair: A (r, in) and B (out, r) per adapted linear. */
function visionLoraShapes(mode: TrainingMode, vision: MemoryPlanInput['vision']): [number, number][] {
  if (mode.kind !== 'lora' || !mode.visionTargets?.length || !vision) return [];
  return visionAdaptedLinears(vision.config, mode.visionTargets).map(({ shape: [out, inp] }) => [inp, out]);
}

/** Full fine-tuning trains the tower's tensors (in f32, with gradients and moments): the tower is loaded and not frozen. */
function trainsTower(mode: TrainingMode, vision: MemoryPlanInput['vision']): vision is NonNullable<MemoryPlanInput['vision']> {
  return mode.kind === 'full' && !mode.freezeVisionTower && vision !== undefined;
}

/** Workgroups of one Σg² pass over `count` gradient values (optimizer.ts). */
export const sumsqGroups = (count: number): number => Math.max(1, Math.min(MAX_SUMSQ_GROUPS, Math.ceil(count / 256)));
export const MAX_SUMSQ_GROUPS = 64;

/** The optimizer's gradient-norm buffers: one partial per Σg² workgroup of every trainable tensor, and the 16-byte result. */
function gradNormScratchBytes(c: ModelConfig, mode: TrainingMode, bindingBytes: number, vision: MemoryPlanInput['vision']): number {
  const counts: number[] = [];
  if (mode.kind === 'lora') {
    for (const { target } of adaptedLinears(c, mode.targets)) {
      const [out, inp] = linearShape(c, target);
      counts.push(mode.r * inp, out * mode.r);
    }
    for (const [inp, out] of visionLoraShapes(mode, vision)) counts.push(mode.r * inp, out * mode.r);
  }
  if (mode.kind === 'full') {
    // Every tensor, in the f32 row chunks of at most one binding that full fine-tuning trains (the
    // tower's matrices as the 2-D rows it uploads: the patch embedding flattened per output channel).
    const tower = trainsTower(mode, vision) ? visionTensorLayout(vision.config).map((t) => ({ shape: t.shape.length > 2 ? [t.shape[0]!, t.shape.slice(1).reduce((a, b) => a * b, 1)] : t.shape })) : [];
    for (const { shape } of [...qwen3TensorLayout(c, !c.tieWordEmbeddings), ...tower]) {
      const rows = shape.length === 2 ? shape[0]! : 1;
      const rowLen = shape.reduce((a, b) => a * b, 1) / rows;
      const perChunk = Math.max(1, Math.floor(bindingBytes / (rowLen * F32)));
      for (let r0 = 0; r0 < rows; r0 += perChunk) counts.push(Math.min(perChunk, rows - r0) * rowLen);
    }
  }
  return bufferSize(counts.reduce((s, n) => s + sumsqGroups(n) * F32, 0)) + 16;
}

/** Splits a [rows, rowBytes] tensor across bindings of at most `bindingLimit` bytes. */
export function planBuffer(name: string, rows: number, rowBytes: number, bindingLimit: number): BufferPlan {
  const bytes = rows * rowBytes;
  const rowsPerBinding = Math.min(rows, Math.floor(bindingLimit / rowBytes));
  const bindings = rowsPerBinding > 0 ? Math.ceil(rows / rowsPerBinding) : Infinity;
  return { name, bytes, rowBytes, rows, bindings, rowsPerBinding };
}

export function planMemory(input: MemoryPlanInput): MemoryPlan {
  const { config: c, mode, numSequences: B, maxTokensPerSequence: T, limits } = input;
  for (const [key, v] of [['numSequences', B], ['maxTokensPerSequence', T]] as const) {
    if (!Number.isSafeInteger(v) || v <= 0) throw new Error(`planMemory: ${key} must be a positive integer, got ${v}`);
  }
  if (mode.kind === 'lora') {
    if (!Number.isSafeInteger(mode.r) || mode.r <= 0) throw new Error(`planMemory: LoRA rank must be a positive integer, got ${mode.r}`);
    const valid: readonly string[] = modelLinears(c);
    const unknown = mode.targets.filter((t) => !valid.includes(t));
    if (unknown.length > 0) throw new Error(`planMemory: unknown LoRA target(s) ${unknown.join(', ')} (valid: ${valid.join(', ')})`);
    if (mode.targets.length === 0) throw new Error('planMemory: LoRA needs at least one target module');
    if (mode.visionTargets?.length && !input.vision) throw new Error('planMemory: LoRA on the vision tower (visionTargets) needs the vision tower in the plan (vision)');
  }
  const D = c.hiddenSize, V = c.vocabSize, L = c.numLayers;
  const kvWidth = c.numKvHeads * c.headDim;
  const tokens = B * T;
  const params = qwen3ParamCount(c);
  // Full fine-tuning updates weights in f32; LoRA keeps the frozen base in the chosen dtype.
  const weightDtype: GpuDtype = mode.kind === 'full' ? 'f32' : input.weightDtype;
  // The KV cache's rows: f32, or f16 where chosen (chooseKvDtype), whatever the weights are (kv-cache.ts).
  const kvDtype: GpuDtype = input.kvDtype ?? 'f32';
  const binding = limits.maxStorageBufferBindingSize;

  const items: MemoryItem[] = [];
  // Norm weights (1-D) stay f32 on the GPU whatever the matrices are (engine.ts).
  const normParams = f32ParamCount(c);
  items.push({
    name: 'weights',
    bytes: (params - normParams) * bytesOf(weightDtype) + normParams * F32,
    detail: `${params.toLocaleString('en-US')} params, matrices in ${weightDtype}, norm weights in f32${c.tieWordEmbeddings ? ' (lm_head tied to the embedding)' : ''}`,
  });
  items.push({
    name: 'KV cache',
    bytes: tokens * kvBytesPerToken(c, kvDtype),
    detail: `${B} sequences × ${T} tokens × ${kvBytesPerToken(c, kvDtype).toLocaleString('en-US')} B/token (${kvDtype})`,
  });
  const stateBytes = linearStateBytesPerSequence(c);
  if (stateBytes > 0) {
    items.push({
      name: 'linear-attention state',
      bytes: B * stateBytes,
      detail: `${B} sequences × ${stateBytes.toLocaleString('en-US')} B (recurrent + conv state of the ${c.layerTypes.filter((t) => t === 'linear_attention').length} Gated DeltaNet layers, f32)`,
    });
    // linear-state.ts keeps a copy per row for chained decode steps: a row that stops inside a
    // chain gets its state back (a recurrent state cannot be truncated like the KV cache).
    items.push({
      name: 'linear-attention state snapshot',
      bytes: B * stateBytes,
      detail: `${B} sequences' states as a chain of decode steps starts, restored for one that stops inside it`,
    });
  }
  const towerTrained = trainsTower(mode, input.vision);
  let visionParams = 0;
  if (input.vision) {
    const { config: vc, maxPatches } = input.vision;
    // Matrices in the weights' dtype (f32 master weights when full fine-tuning trains them), biases,
    // norms and the position table (gathered by rows) in f32.
    const towerDtype: GpuDtype = towerTrained ? 'f32' : input.weightDtype;
    const tensors = visionTensorLayout(vc).map((t) => ({ n: t.shape.reduce((a, b) => a * b, 1), matrix: t.shape.length >= 2 && !t.name.endsWith('pos_embed.weight') }));
    visionParams = tensors.reduce((a, t) => a + t.n, 0);
    items.push({
      name: 'vision tower weights',
      bytes: tensors.reduce((a, t) => a + t.n * (t.matrix ? bytesOf(towerDtype) : F32), 0),
      detail: `${visionParams.toLocaleString('en-US')} params (model.visual.*, ${towerTrained ? 'trained' : 'frozen'}), matrices in ${towerDtype}`,
    });
    items.push({
      name: 'vision activations',
      bytes: visionActivationBytes(vc, maxPatches),
      detail: `${maxPatches} image patches per pass: pixel rows with their position and rotary tables, one block's intermediates, the merger (f32)`,
    });
  }
  // One backward call over every sequence of the step, all tokens but the first of each scored.
  const visionLora = visionLoraShapes(mode, input.vision);
  const towerBackward = (visionLora.length > 0 || towerTrained) && input.vision ? { config: input.vision.config, patches: input.vision.maxPatches, full: towerTrained } : undefined;
  const backward = backwardBufferPlan(c, Array<number>(B).fill(T), B * (T - 1) || 1, mode.kind === 'lora' ? mode.r : 0, binding, towerBackward);
  let checkpointBytes = 0;
  let backwardBytes = 0;
  let towerBytes = 0;
  for (const [role, bytes] of backward) {
    if (/^x\[\d+\]$/.test(role)) checkpointBytes += bytes;
    else if (role.startsWith('vision ')) towerBytes += bytes;
    else backwardBytes += bytes;
  }
  if (towerBackward) {
    const vc = towerBackward.config;
    const S = towerBackward.patches;
    // + the zero bias the tower's training activations add (tower.ts), and under LoRA its forward's scratch (x·Aᵀ, S·r).
    towerBytes += bufferSize(Math.max(vc.intermediateSize, vc.hiddenSize * vc.spatialMergeSize ** 2) * F32);
    if (mode.kind === 'lora') towerBytes += bufferSize(S * mode.r * F32);
    items.push({
      name: 'vision tower backward',
      bytes: towerBytes,
      detail: `${mode.kind === 'lora' ? 'LoRA on the tower' : 'full fine-tuning of the tower'}: ${S} patches, each block's input kept (${vc.depth + 1} × ${vc.hiddenSize} f32 per patch), one block recomputed with its gradients, the merger's`,
    });
  }
  items.push({
    name: 'activation checkpoints',
    bytes: checkpointBytes,
    detail: `each layer's input kept for backward (${L} × ${D} f32 per token); the rest is recomputed layer by layer`,
  });
  // Every LoRA linear's forward writes u = x·Aᵀ (tokens, r) into one scratch buffer of forward.ts.
  if (mode.kind === 'lora') backwardBytes += bufferSize(tokens * mode.r * F32);
  items.push({
    name: 'backward working set',
    bytes: backwardBytes,
    detail: `one layer recomputed with its gradients, the packed batch, and the LM head over the scored rows in vocabulary chunks of ≤ ${formatBytes(LOGITS_CHUNK_BYTES)}`,
  });

  let trainableParams: number;
  if (mode.kind === 'lora') {
    trainableParams = loraParamCount(c, mode.r, mode.targets) + visionLora.reduce((a, [inp, out]) => a + mode.r * (inp + out), 0);
    const on = [...mode.targets, ...(visionLora.length > 0 ? (mode.visionTargets ?? []).map((t) => `visual ${t}`) : [])];
    items.push({ name: 'LoRA params + grads', bytes: trainableParams * 2 * F32, detail: `r=${mode.r} on ${on.join(', ')}: ${trainableParams.toLocaleString('en-US')} params, f32` });
  } else {
    trainableParams = params + (towerTrained ? visionParams : 0);
    items.push({ name: 'gradients', bytes: trainableParams * F32, detail: `full fine-tuning: one f32 gradient per parameter${towerTrained ? ' (the vision tower\'s included)' : ''}` });
  }
  items.push({ name: 'AdamW moments', bytes: trainableParams * 2 * F32, detail: 'm and v in f32 for every trainable parameter' });
  items.push({ name: 'gradient norm scratch', bytes: gradNormScratchBytes(c, mode, binding, input.vision), detail: 'per-workgroup Σg² partials of clip_grad_norm_ and its result' });

  const wb = bytesOf(weightDtype);
  const [largestOut, largestIn] = (['gate_proj', 'down_proj', 'q_proj', 'o_proj'] as const)
    .map((t) => linearShape(c, t))
    .sort((a, b) => b[0] * b[1] - a[0] * a[1])[0]!;
  const buffers: BufferPlan[] = [
    planBuffer('model.embed_tokens.weight', V, D * wb, binding),
    ...(c.tieWordEmbeddings ? [] : [planBuffer('lm_head.weight', V, D * wb, binding)]),
    planBuffer(`largest layer matrix [${largestOut}, ${largestIn}]`, largestOut, largestIn * wb, binding),
    planBuffer('KV cache, one layer (K or V)', B * T, kvWidth * bytesOf(kvDtype), binding),
    planBuffer('activation checkpoints, one layer', tokens, D * F32, binding),
  ];
  if (mode.kind === 'full') buffers.push(planBuffer('embedding gradient', V, D * F32, binding));

  const totalBytes = items.reduce((s, i) => s + i.bytes, 0);
  const problems: string[] = [];
  for (const b of buffers) {
    if (b.rowsPerBinding === 0) {
      problems.push(`${b.name}: one row is ${formatBytes(b.rowBytes)}, more than maxStorageBufferBindingSize (${formatBytes(binding)})`);
    } else if (b.rowsPerBinding * b.rowBytes > limits.maxBufferSize) {
      problems.push(`${b.name}: a ${formatBytes(b.rowsPerBinding * b.rowBytes)} part exceeds maxBufferSize (${formatBytes(limits.maxBufferSize)})`);
    }
  }
  if (limits.budgetBytes !== undefined && totalBytes > limits.budgetBytes) {
    const largest = [...items].sort((a, b) => b.bytes - a.bytes).slice(0, 3).map((i) => `${i.name} ${formatBytes(i.bytes)}`);
    problems.push(`total ${formatBytes(totalBytes)} exceeds the ${formatBytes(limits.budgetBytes)} budget (largest: ${largest.join(', ')}); try fewer or shorter sequences${mode.kind === 'full' ? ', or LoRA instead of full fine-tuning' : ''}${weightDtype === 'f32' && mode.kind === 'lora' ? ', or f16 weights' : ''}`);
  }
  const splits = buffers.filter((b) => b.bindings > 1 && Number.isFinite(b.bindings)).map((b) => `${b.name} (${formatBytes(b.bytes)}) split into ${b.bindings} bindings of ≤ ${b.rowsPerBinding} rows`);
  const message = [
    `needs ${formatBytes(totalBytes)}: ${items.map((i) => `${i.name} ${formatBytes(i.bytes)}`).join(', ')}.`,
    splits.length > 0 ? `Split by rows: ${splits.join('; ')}.` : '',
    problems.length > 0 ? `Does not fit: ${problems.join('; ')}.` : 'Fits the adapter limits.',
  ].filter(Boolean).join(' ');
  return { params, trainableParams, items, buffers, totalBytes, fits: problems.length === 0, message, kvDtype };
}
