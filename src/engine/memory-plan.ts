// How much GPU memory a run needs, item by item, and whether each buffer fits the adapter's
// limits (shared/specs/qwen3.md §4). Computed from the config alone, before any allocation, so the
// UI and CLI can say clearly what does not fit. Tensors larger than one storage binding are not
// rejected: they are split by rows across several bindings (and buffers), and the split is reported.

import { linearShape, qwen3ParamCount, QWEN3_LINEARS, type Qwen3Linear } from '../model/qwen3-tensors.ts';
import type { ModelConfig } from '../model/types.ts';

export type GpuDtype = 'f32' | 'f16';

export type TrainingMode =
  | { kind: 'lora'; r: number; targets: readonly Qwen3Linear[] }
  | { kind: 'full' };

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
  /** KV cache dtype (default: weightDtype). */
  kvDtype?: GpuDtype;
  /** Tokens per log-softmax chunk (default: as many as one binding holds, at most 256). */
  logitsChunkTokens?: number;
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
  logitsChunkTokens: number;
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

/** Parameters LoRA adds: r·(in + out) per targeted linear, in every layer. */
export function loraParamCount(config: ModelConfig, r: number, targets: readonly Qwen3Linear[]): number {
  return targets.reduce((s, t) => {
    const [out, inp] = linearShape(config, t);
    return s + r * (inp + out);
  }, 0) * config.numLayers;
}

/** KV cache bytes per token: layers × (K and V) × kv heads × head_dim × dtype size. */
export function kvBytesPerToken(config: ModelConfig, dtype: GpuDtype): number {
  return config.numLayers * 2 * config.numKvHeads * config.headDim * bytesOf(dtype);
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
    const unknown = mode.targets.filter((t) => !(QWEN3_LINEARS as readonly string[]).includes(t));
    if (unknown.length > 0) throw new Error(`planMemory: unknown LoRA target(s) ${unknown.join(', ')} (valid: ${QWEN3_LINEARS.join(', ')})`);
    if (mode.targets.length === 0) throw new Error('planMemory: LoRA needs at least one target module');
  }
  const D = c.hiddenSize, V = c.vocabSize, F = c.intermediateSize, L = c.numLayers;
  const qWidth = c.numHeads * c.headDim;
  const kvWidth = c.numKvHeads * c.headDim;
  const tokens = B * T;
  const params = qwen3ParamCount(c);
  // Full fine-tuning updates weights in f32; LoRA keeps the frozen base in the chosen dtype.
  const weightDtype: GpuDtype = mode.kind === 'full' ? 'f32' : input.weightDtype;
  const kvDtype = input.kvDtype ?? input.weightDtype;
  const binding = limits.maxStorageBufferBindingSize;
  const logitsChunkTokens = input.logitsChunkTokens ?? Math.max(1, Math.min(256, Math.floor(binding / (V * F32))));

  const items: MemoryItem[] = [];
  items.push({
    name: 'weights',
    bytes: params * bytesOf(weightDtype),
    detail: `${params.toLocaleString('en-US')} params in ${weightDtype}${c.tieWordEmbeddings ? ' (lm_head tied to the embedding)' : ''}`,
  });
  items.push({
    name: 'KV cache',
    bytes: tokens * kvBytesPerToken(c, kvDtype),
    detail: `${B} sequences × ${T} tokens × ${kvBytesPerToken(c, kvDtype).toLocaleString('en-US')} B/token (${kvDtype})`,
  });
  items.push({
    name: 'activation checkpoints',
    bytes: tokens * L * D * F32,
    detail: `each layer's input kept for backward (${L} × ${D} f32 per token); the rest is recomputed layer by layer`,
  });
  // One layer's forward intermediates and their gradients while it is recomputed for backward.
  const layerWidth = 3 * D + 2 * qWidth + 2 * kvWidth + 3 * F;
  items.push({
    name: 'layer working set',
    bytes: 2 * tokens * layerWidth * F32,
    detail: `one layer recomputed: ${layerWidth} f32 values per token, and their gradients`,
  });
  items.push({
    name: 'attention scores',
    bytes: c.numHeads * T * T * F32,
    detail: `one layer, one sequence at a time: ${c.numHeads} heads × ${T}² f32`,
  });
  items.push({
    name: 'logits chunk',
    bytes: 2 * logitsChunkTokens * V * F32,
    detail: `log-softmax over ${logitsChunkTokens} tokens at a time (logits and their gradient, f32)`,
  });

  let trainableParams: number;
  if (mode.kind === 'lora') {
    trainableParams = loraParamCount(c, mode.r, mode.targets);
    items.push({ name: 'LoRA params + grads', bytes: trainableParams * 2 * F32, detail: `r=${mode.r} on ${mode.targets.join(', ')}: ${trainableParams.toLocaleString('en-US')} params, f32` });
  } else {
    trainableParams = params;
    items.push({ name: 'gradients', bytes: params * F32, detail: 'full fine-tuning: one f32 gradient per parameter' });
  }
  items.push({ name: 'AdamW moments', bytes: trainableParams * 2 * F32, detail: 'm and v in f32 for every trainable parameter' });

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
    planBuffer('logits chunk', logitsChunkTokens, V * F32, binding),
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
  return { params, trainableParams, items, buffers, totalBytes, fits: problems.length === 0, message, logitsChunkTokens };
}
