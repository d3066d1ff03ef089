// The trainable parameters of one mode, each with its gradient and AdamW moments on the GPU.
//   LoRA: per adapted linear an A (r, in) and a B (out, r), f32, owned here and published in
//         internals.lora so that every forward linear adds scale·B·(A·x) (the vision tower's too,
//         keyed by their model.visual.… weight names, when visionTargetModules asks). PEFT's init:
//         A ~ kaiming_uniform(a=√5) = U(−1/√in, 1/√in), B = 0, scale = alpha / r.
//   full: every parameter of the checkpoint, updated in place in f32 (f16-stored weights are
//         promoted to f32 master weights first): the language model's, and the vision tower's
//         (model.visual.…) when the engine loaded it, unless freezeVisionTower.

import { weightLoads } from '../weight-loads.ts';
import type { EngineInternals, LoraAdapter, ParamChunk, ParamEntry } from '../internals.ts';
import { groups1d, type Recorder } from '../recorder.ts';
import type { LoraConfig, LoraTarget, TrainableMode } from '../types.ts';
import type { ModelConfig } from '../../model/types.ts';
import { transformersDecays } from '../reference/adamw.ts';
import { mulberry32 } from '../../random.ts';
import { adaptedLinears, modelLinears, QWEN3_5_LINEARS } from '../../model/qwen3-tensors.ts';
import { VISION_LORA_TARGETS, visionAdaptedLinears, visionTensorLayout } from '../../model/qwen3_5-vision-tensors.ts';
import { VisionTower } from '../vision/tower.ts';

/** Every linear LoRA can adapt, in config order (a model has those of its layer types: modelLinears). */
export const LORA_TARGETS: readonly LoraTarget[] = QWEN3_5_LINEARS;

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
  /** Full mode with the vision tower's tensors among `tensors` (the backward goes through the tower). */
  trainsVisionTower: boolean;
  /** Settles when GPU work queued by setTrainable (full mode's f16 → f32 promotion) is done; rejects with its error. */
  ready: Promise<void>;
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
  // Matrices are chunked by rows; any other tensor (1-D norms, Qwen3.5's [C, 1, K] conv) is one chunk.
  const rowLen = shape.length === 2 ? shape[1]! : shape.reduce((a, b) => a * b, 1);
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

function checkLoraConfig(config: ModelConfig, lora: LoraConfig): void {
  if (!Number.isInteger(lora.r) || lora.r < 1) throw new Error(`LoRA: r must be a positive integer, got ${lora.r}`);
  if (!(lora.alpha > 0)) throw new Error(`LoRA: alpha must be > 0, got ${lora.alpha}`);
  const valid = modelLinears(config);
  if (lora.targetModules.length === 0) throw new Error(`LoRA: targetModules is empty (choose among ${valid.join(', ')})`);
  for (const t of lora.targetModules) {
    if (!valid.includes(t)) throw new Error(`LoRA: unknown target module "${t}" for this ${config.architecture} model (choose among ${valid.join(', ')})`);
  }
  if (new Set(lora.targetModules).size !== lora.targetModules.length) throw new Error(`LoRA: targetModules lists a module twice: ${lora.targetModules.join(', ')}`);
  if (!Number.isInteger(lora.seed)) throw new Error(`LoRA: seed must be an integer, got ${lora.seed}`);
  const vision = lora.visionTargetModules ?? [];
  for (const t of vision) {
    if (!VISION_LORA_TARGETS.includes(t)) throw new Error(`LoRA: unknown vision target module "${t}" (choose among ${VISION_LORA_TARGETS.join(', ')})`);
  }
  if (new Set(vision).size !== vision.length) throw new Error(`LoRA: visionTargetModules lists a module twice: ${vision.join(', ')}`);
}

function createLora(internals: EngineInternals, lora: LoraConfig): TrainableSet {
  checkLoraConfig(internals.config, lora);
  const { device } = internals.gpu;
  const rand = mulberry32(lora.seed);
  const tensors: TrainableTensor[] = [];
  const adapters = new Map<string, LoraParams>();
  // Config order of targets, layer-major, so a seed gives the same adapter whatever order the user listed.
  const targets = LORA_TARGETS.filter((t) => lora.targetModules.includes(t));
  const add = (name: string, [out, inp]: [number, number]) => {
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
  };
  for (const { name } of adaptedLinears(internals.config, targets)) {
    const base = internals.params.get(name);
    if (!base || base.shape.length !== 2) throw new Error(`LoRA: the model has no linear weight ${name}`);
    add(name, base.shape as [number, number]);
  }
  // The vision tower's adapters after the language model's: the text ones draw the same A as without them.
  const visionTargets = VISION_LORA_TARGETS.filter((t) => lora.visionTargetModules?.includes(t));
  if (visionTargets.length > 0) {
    if (!internals.vision) throw new Error('LoRA: visionTargetModules needs the vision tower (load the engine with vision: true from a Qwen3.5 vision-language checkpoint)');
    for (const { name, shape } of visionAdaptedLinears(internals.vision.config, visionTargets)) add(name, shape);
  }
  internals.lora.clear();
  for (const [name, p] of adapters) internals.lora.set(name, p.adapter);
  return {
    mode: { kind: 'lora', lora: { ...lora, targetModules: [...targets], ...(visionTargets.length > 0 ? { visionTargetModules: visionTargets } : { visionTargetModules: undefined }) } },
    tensors,
    lora: adapters,
    gradChunks: () => null,
    trainsVisionTower: false,
    ready: Promise.resolve(),
    destroy() {
      internals.lora.clear();
      for (const t of tensors) for (const c of t.chunks) for (const buf of [c.weight, c.grad, c.m, c.v]) buf.destroy();
    },
  };
}

/**
 * Full fine-tuning updates every weight in place with AdamW, which needs f32 master weights: an f16
 * matrix (the default on adapters with shader-f16) is widened on the GPU into f32 row chunks, split
 * again to the binding limit (an f32 row is twice as long), and replaces its f16 buffers in the
 * engine's parameter table; forward and backward then read the f32 weights being trained.
 */
function promoteToF32(internals: EngineInternals, rec: Recorder, p: ParamEntry): GPUBuffer[] {
  const rows = p.shape.length === 2 ? p.shape[0]! : 1;
  const rowLen = p.shape.reduce((a, b) => a * b, 1) / rows;
  const rowsPerChunk = Math.floor(internals.maxBindingBytes / (rowLen * 4));
  if (rowsPerChunk < 1) throw new Error(`full fine-tuning: one f32 row of ${p.name} (${rowLen * 4} bytes) exceeds the storage binding limit (${internals.maxBindingBytes} bytes)`);
  const loads = weightLoads('f16', internals.kernelVariants.halfLoads);
  const pipe = internals.getPipeline('half_to_float.wgsl', { ENABLE_F16: loads.ENABLE_F16!, W_ELEM: loads.W_ELEM!, LOAD_W: loads.LOAD_W! });
  const chunks: ParamChunk[] = [];
  for (let r0 = 0; r0 < rows; r0 += rowsPerChunk) {
    const n = Math.min(rowsPerChunk, rows - r0);
    const buffer = internals.createBuffer(chunks.length || r0 + n < rows ? `${p.name} rows ${r0}..${r0 + n}` : p.name, n * rowLen * 4);
    // Copy the overlap with every f16 chunk (chunk boundaries of the two dtypes need not align).
    for (const src of p.chunks) {
      const lo = Math.max(r0, src.rowStart);
      const hi = Math.min(r0 + n, src.rowStart + src.rows);
      if (lo >= hi) continue;
      const count = (hi - lo) * rowLen;
      rec.dispatch(pipe, [src.buffer, buffer], [count, (lo - src.rowStart) * rowLen, (lo - r0) * rowLen, 0], groups1d(count / 2), `promote ${p.name}`);
    }
    chunks.push({ buffer, rowStart: r0, rows: n });
  }
  const old = p.chunks.map((c) => c.buffer);
  p.chunks = chunks;
  p.dtype = 'f32';
  return old;
}

function createFull(internals: EngineInternals, freezeVisionTower: boolean): TrainableSet {
  const tensors: TrainableTensor[] = [];
  const byName = new Map<string, TrainableTensor>();
  // The tower's tensors (model.visual.…, its own table) after the language model's, in its module order.
  const tower = !freezeVisionTower && internals.vision instanceof VisionTower ? internals.vision : null;
  const params = [...internals.params.values(), ...(tower ? tower.params.values() : [])];
  let ready = Promise.resolve();
  if (params.some((p) => p.dtype === 'f16')) {
    const rec = internals.recorder('promote f16 weights to f32');
    const halves = params.filter((p) => p.dtype === 'f16').flatMap((p) => promoteToF32(internals, rec, p));
    // submit() hands the work to the queue synchronously; buffers may be destroyed once submitted.
    // A failure surfaces at the next backward/step (they await `ready`), never as a silent zero model.
    ready = rec.submit().then(() => undefined);
    ready.catch(() => undefined);
    for (const b of halves) b.destroy();
  }
  // The tower keeps its matrices 2-D (the patch embedding flattened); saved and exported under the checkpoint's shapes.
  const towerShapes = new Map(tower ? visionTensorLayout(tower.config).map((t) => [t.name, t.shape]) : []);
  for (const p of params) {
    const t = newTensor(internals, p.name, p.shape, p.chunks);
    t.shape = towerShapes.get(p.name) ?? t.shape;
    tensors.push(t);
    byName.set(p.name, t);
  }
  internals.lora.clear();
  return {
    mode: { kind: 'full', ...(freezeVisionTower ? { freezeVisionTower } : {}) },
    tensors,
    lora: new Map(),
    gradChunks: (name) => byName.get(name)?.chunks.map((c) => c.grad) ?? null,
    trainsVisionTower: tower !== null,
    ready,
    destroy() {
      // The weights belong to the engine's parameter tables; only the optimizer's buffers go.
      for (const t of tensors) for (const c of t.chunks) for (const buf of [c.grad, c.m, c.v]) buf.destroy();
    },
  };
}

export function createTrainableSet(internals: EngineInternals, mode: TrainableMode): TrainableSet | null {
  switch (mode.kind) {
    case 'lora':
      return createLora(internals, mode.lora);
    case 'full':
      return createFull(internals, mode.freezeVisionTower === true);
    case 'none':
      internals.lora.clear();
      return null;
    default:
      throw new Error(`setTrainable: unknown mode ${JSON.stringify(mode)}`);
  }
}
