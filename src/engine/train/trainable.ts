// The trainable parameters of one mode, each with its gradient and AdamW moments on the GPU.
//   LoRA: per adapted linear an A (r, in) and a B (out, r), f32, owned here and published in
//         internals.lora so that every forward linear adds scale·B·(A·x). PEFT's init:
//         A ~ kaiming_uniform(a=√5) = U(−1/√in, 1/√in), B = 0, scale = alpha / r.
//   full: every parameter of the checkpoint (f32 weights required), updated in place.

import type { EngineInternals, LoraAdapter, ParamEntry } from '../internals.ts';
import type { LoraConfig, LoraTarget, TrainableMode } from '../types.ts';
import { transformersDecays } from '../reference/adamw.ts';
import { mulberry32 } from '../../random.ts';

export const LORA_TARGETS: readonly LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

/** One row-slice of a trainable tensor: the weight and its same-shaped gradient and moments (f32). */
export interface TrainableChunk {
  weight: GPUBuffer;
  grad: GPUBuffer;
  m: GPUBuffer; // AdamW exp_avg
  v: GPUBuffer; // AdamW exp_avg_sq
  rowStart: number;
  rows: number;
  /** Elements in this chunk. */
  count: number;
}

export interface TrainableTensor {
  /** Its name in saveState/readGrads: the checkpoint name (full) or `<linear>.lora_A.weight` (LoRA). */
  name: string;
  shape: number[];
  chunks: TrainableChunk[];
  /** transformers' Trainer decays it (norm weights and biases are exempt). */
  decays: boolean;
}

export interface LoraParams {
  adapter: LoraAdapter;
  a: TrainableTensor; // (r, in)
  b: TrainableTensor; // (out, r)
  inFeatures: number;
  outFeatures: number;
}

export interface TrainableSet {
  mode: TrainableMode;
  tensors: TrainableTensor[];
  /** LoRA mode: adapters by the HF name of the base linear's weight. */
  lora: Map<string, LoraParams>;
  /** Full mode: gradient chunks of a checkpoint tensor (aligned with its ParamEntry chunks), else null. */
  gradChunks(name: string): GPUBuffer[] | null;
  destroy(): void;
}

/** `model.layers.0.self_attn.q_proj.weight` → `model.layers.0.self_attn.q_proj.lora_A.weight`. */
export function loraTensorName(linearWeightName: string, which: 'A' | 'B'): string {
  return `${linearWeightName.replace(/\.weight$/, '')}.lora_${which}.weight`;
}

function f32Buffer(internals: EngineInternals, label: string, count: number): GPUBuffer {
  return internals.createBuffer(label, Math.max(4, count * 4));
}

function newTensor(internals: EngineInternals, name: string, shape: number[], weights: { buffer: GPUBuffer; rowStart: number; rows: number }[]): TrainableTensor {
  const rowLen = shape.length === 2 ? shape[1]! : shape[0]!;
  return {
    name,
    shape,
    decays: transformersDecays(name),
    chunks: weights.map((w) => {
      const count = shape.length === 2 ? w.rows * rowLen : rowLen;
      return {
        weight: w.buffer,
        grad: f32Buffer(internals, `${name} grad`, count),
        m: f32Buffer(internals, `${name} exp_avg`, count),
        v: f32Buffer(internals, `${name} exp_avg_sq`, count),
        rowStart: w.rowStart,
        rows: w.rows,
        count,
      };
    }),
  };
}

/** PEFT's scaling: alpha / r, or alpha / √r with use_rslora. */
export function loraScale(lora: Pick<LoraConfig, 'r' | 'alpha' | 'useRslora'>): number {
  return lora.useRslora ? lora.alpha / Math.sqrt(lora.r) : lora.alpha / lora.r;
}

function checkLoraConfig(lora: LoraConfig): void {
  if (!Number.isInteger(lora.r) || lora.r < 1) throw new Error(`LoRA: r must be a positive integer, got ${lora.r}`);
  if (!(lora.alpha > 0)) throw new Error(`LoRA: alpha must be > 0, got ${lora.alpha}`);
  if (lora.targetModules.length === 0) throw new Error('LoRA: targetModules is empty (choose among q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)');
  for (const t of lora.targetModules) {
    if (!LORA_TARGETS.includes(t)) throw new Error(`LoRA: unknown target module "${t}" (choose among ${LORA_TARGETS.join(', ')})`);
  }
  if (new Set(lora.targetModules).size !== lora.targetModules.length) throw new Error(`LoRA: targetModules lists a module twice: ${lora.targetModules.join(', ')}`);
  if (!Number.isInteger(lora.seed)) throw new Error(`LoRA: seed must be an integer, got ${lora.seed}`);
}

function createLora(internals: EngineInternals, lora: LoraConfig): TrainableSet {
  checkLoraConfig(lora);
  const { device } = internals.gpu;
  const rand = mulberry32(lora.seed);
  const tensors: TrainableTensor[] = [];
  const adapters = new Map<string, LoraParams>();
  // Config order of targets, layer-major, so a seed gives the same adapter whatever order the user listed.
  const targets = LORA_TARGETS.filter((t) => lora.targetModules.includes(t));
  for (let layer = 0; layer < internals.config.numLayers; layer++) {
    for (const target of targets) {
      const name = internals.linearName(layer, target);
      const base = internals.params.get(name);
      if (!base || base.shape.length !== 2) throw new Error(`LoRA: the model has no linear weight ${name}`);
      const [out, inp] = base.shape as [number, number];
      const aName = loraTensorName(name, 'A');
      const bName = loraTensorName(name, 'B');
      const aBuf = f32Buffer(internals, aName, lora.r * inp); // (r, in)
      const bBuf = f32Buffer(internals, bName, out * lora.r); // (out, r), zero: the adapter starts as a no-op
      const bound = 1 / Math.sqrt(inp);
      const init = new Float32Array(lora.r * inp);
      for (let i = 0; i < init.length; i++) init[i] = (2 * rand() - 1) * bound;
      device.queue.writeBuffer(aBuf, 0, init);
      const a = newTensor(internals, aName, [lora.r, inp], [{ buffer: aBuf, rowStart: 0, rows: lora.r }]);
      const b = newTensor(internals, bName, [out, lora.r], [{ buffer: bBuf, rowStart: 0, rows: out }]);
      tensors.push(a, b);
      adapters.set(name, { adapter: { a: aBuf, b: bBuf, r: lora.r, scale: loraScale(lora) }, a, b, inFeatures: inp, outFeatures: out });
    }
  }
  internals.lora.clear();
  for (const [name, p] of adapters) internals.lora.set(name, p.adapter);
  return {
    mode: { kind: 'lora', lora: { ...lora, targetModules: [...targets] } },
    tensors,
    lora: adapters,
    gradChunks: () => null,
    destroy() {
      internals.lora.clear();
      for (const t of tensors) for (const c of t.chunks) for (const buf of [c.weight, c.grad, c.m, c.v]) buf.destroy();
    },
  };
}

function createFull(internals: EngineInternals): TrainableSet {
  const tensors: TrainableTensor[] = [];
  const byName = new Map<string, TrainableTensor>();
  const notF32 = [...internals.params.values()].filter((p: ParamEntry) => p.dtype !== 'f32').map((p) => p.name);
  if (notF32.length > 0) {
    throw new Error(`full fine-tuning needs f32 weights, but ${notF32.length} tensors are stored as f16 (e.g. ${notF32[0]}); load the model with f32 weights`);
  }
  for (const p of internals.params.values()) {
    const t = newTensor(internals, p.name, p.shape, p.chunks);
    tensors.push(t);
    byName.set(p.name, t);
  }
  internals.lora.clear();
  return {
    mode: { kind: 'full' },
    tensors,
    lora: new Map(),
    gradChunks: (name) => byName.get(name)?.chunks.map((c) => c.grad) ?? null,
    destroy() {
      // The weights belong to the engine's parameter table; only the optimizer's buffers go.
      for (const t of tensors) for (const c of t.chunks) for (const buf of [c.grad, c.m, c.v]) buf.destroy();
    },
  };
}

export function createTrainableSet(internals: EngineInternals, mode: TrainableMode): TrainableSet | null {
  switch (mode.kind) {
    case 'lora':
      return createLora(internals, mode.lora);
    case 'full':
      return createFull(internals);
    case 'none':
      internals.lora.clear();
      return null;
    default:
      throw new Error(`setTrainable: unknown mode ${JSON.stringify(mode)}`);
  }
}
