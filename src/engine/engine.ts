// loadEngine: a checkpoint → the WebGPU Qwen3 engine (types.ts Engine). Forward, generation and
// scoring live here; backward / optimizer / trainable state are the train side's
// (src/engine/train), which receives the EngineInternals (internals.ts).

import type { Checkpoint, LoadProgress, ModelConfig } from '../model/types.ts';
import type { OpenedCheckpoint } from '../model/checkpoint.ts';
import { loadVisionTower } from './vision/load.ts';

import { qwen3TensorLayout, validateQwen3Tensors } from '../model/qwen3-tensors.ts';
import { decodeToFloat32, dtypeSize } from '../model/safetensors.ts';
import { adapterName, getGpu, type Gpu } from './gpu.ts';
import { Qwen3Forward, type AttentionVariant, type DeltaRuleVariant, type HalfLoads, type MatmulVariant } from './forward.ts';
import { bindingLimit, fitsHalf, uploadTensor, type RowReader } from './params.ts';
import type { ParamEntry } from './internals.ts';
import { KvCache } from './kv-cache.ts';
import { LinearStatePool } from './linear-state.ts';
import { chooseKvDtype, DEFAULT_IMAGE_PATCHES, planMemory, type GpuDtype, type MemoryPlan, type TrainingMode } from './memory-plan.ts';
import { chooseWeightPrecision, matrixDtypeOf, type WeightChoice, type WeightPrecision } from './weight-precision.ts';
import { QWEN3_LINEARS } from '../model/qwen3-tensors.ts';
import { CachedDecodeSession, SequenceState, generateBatch, type GenerateStats } from './generate.ts';
import { scoreSequences } from './score.ts';
import { createTrainState } from './train/index.ts';
import { readPeftAdapter } from './peft-adapter.ts';
import type {
  AdapterSource, BackwardRequest, DecodeSession, DecodeSessionOptions, Engine, GenerateOutput, GenerateRequest, NamedTensor, OptimizerConfig, ScoreOutput,
  PeftLoraSettings, ScoreRequest, SequenceHandle, StepResult, TrainableMode,
} from './types.ts';

export interface LoadEngineOptions {
  gpu?: Gpu;
  /**
   * 'auto' (default): the checkpoint's own precision where the adapter holds it (f32 stays f32; bf16
   * and f16 go to f16 with shader-f16), f16 only when the memory plan needs it (weight-precision.ts).
   * 'f16' works on every adapter (halves are unpacked in the kernels). Full fine-tuning promotes f16
   * weights to f32 when it starts.
   */
  weightDtype?: WeightChoice;
  onProgress?: (p: LoadProgress) => void;
  /** Kernel variant of the linears: 'auto' (default) = register-blocked on software adapters, workgroup-tiled otherwise. */
  matmul?: 'auto' | MatmulVariant;
  /** Attention kernel: 'auto' (default) = one invocation per (token, head) on software adapters, one workgroup per (token, head) otherwise. */
  attention?: 'auto' | AttentionVariant;
  /** How kernels read f16 weights, forward and backward: 'auto' (default) = natively (`array<f16>`) on GPUs with shader-f16, unpacked from u32 words on software adapters and without shader-f16. */
  halfLoads?: 'auto' | HalfLoads;
  /**
   * The gated delta rule of multi-token passes (Qwen3.5; see DeltaRuleVariant): 'auto' (default) = recurrent on
   * software adapters (measured faster there at 0.8B shapes, BENCHMARKS.md), chunked otherwise.
   */
  deltaRule?: 'auto' | DeltaRuleVariant;
  /** The KV cache's element type: 'auto' (default) as memory-plan.ts chooseKvDtype decides; 'f16' needs shader-f16. */
  kvCache?: 'auto' | GpuDtype;
  /** Cap on bytes per GPU buffer below the device's binding limit (tests force row-chunking with it). */
  maxBindingBytes?: number;
  /**
   * The workload the memory plan is checked for before anything is allocated (defaults: 1 sequence
   * of 1024 tokens, LoRA r=16 on all linears, no total budget). Loading fails with the plan's message
   * when it does not fit.
   */
  plan?: { numSequences?: number; maxTokensPerSequence?: number; mode?: TrainingMode; budgetBytes?: number; maxImagePatches?: number };
  /**
   * Also load a Qwen3.5 checkpoint's vision tower (model.visual.*), so that score() takes images
   * (ScoreSequence.images). Off by default: text-only use does not pay for its weights.
   */
  vision?: boolean;
  /**
   * The weight precision and memory plan planLoad decided for this checkpoint and GPU, by a caller that
   * showed them before loading (the app's model card): used as they are, not decided again.
   */
  decided?: LoadPlan;
}

/** How loadEngine will store the weights and what it will allocate: decided before anything is. */
export interface LoadPlan {
  precision: WeightPrecision;
  memory: MemoryPlan;
}

/**
 * The weight precision (weight-precision.ts) and the memory plan of loading `ckpt` on `gpu` for
 * `opts.plan`'s workload, under the engine's own binding limit (params.ts bindingLimit).
 */
export function planLoad(ckpt: Checkpoint, gpu: Pick<Gpu, 'limits' | 'f16' | 'software'>, opts: Pick<LoadEngineOptions, 'weightDtype' | 'plan' | 'vision' | 'maxBindingBytes' | 'kvCache'> = {}): LoadPlan {
  const cfg = ckpt.config;
  const visionConfig = opts.vision ? cfg.vision : null;
  const planFor = (weightDtype: GpuDtype, kvDtype: GpuDtype) => planMemory({
    config: cfg,
    weightDtype,
    kvDtype,
    mode: opts.plan?.mode ?? { kind: 'lora', r: 16, targets: QWEN3_LINEARS },
    numSequences: opts.plan?.numSequences ?? 1,
    maxTokensPerSequence: opts.plan?.maxTokensPerSequence ?? 1024,
    limits: { maxStorageBufferBindingSize: bindingLimit(gpu.limits, opts.maxBindingBytes), maxBufferSize: gpu.limits.maxBufferSize, budgetBytes: opts.plan?.budgetBytes },
    ...(visionConfig ? { vision: { config: visionConfig, maxPatches: opts.plan?.maxImagePatches ?? DEFAULT_IMAGE_PATCHES } } : {}),
  });
  // The KV cache's type first (at the weights' likely precision), then the weights' under it.
  const kvDtype = chooseKvDtype(opts.kvCache ?? 'auto', gpu, (kv) => planFor(opts.weightDtype === 'f32' ? 'f32' : 'f16', kv).fits);
  const precision = chooseWeightPrecision({ wanted: opts.weightDtype ?? 'auto', checkpoint: matrixDtypeOf(ckpt.tensors.values()), f16: gpu.f16, fits: (d) => planFor(d, kvDtype).fits });
  return { precision, memory: planFor(precision.stored, kvDtype) };
}

/** The train side's part of Engine (src/engine/train). */
type TrainSide = Pick<Engine, 'backward' | 'zeroGrad' | 'step' | 'setTrainable' | 'saveState' | 'loadState' | 'exportAdapter' | 'readGrads'> & { destroy(): void };

export class WebGpuEngine implements Engine {
  /** Counters of the generation path (benchmarks read them). */
  readonly stats: GenerateStats = { prefillTokens: 0, decodeSteps: 0, dispatchesPerDecodeStep: 0 };
  private readonly cache: KvCache;
  /** Qwen3.5: the Gated DeltaNet layers' per-sequence states; null for Qwen3. */
  private readonly linearState: LinearStatePool | null;
  private readonly sequences = new Map<number, SequenceState>();
  private nextSeqId = 1;
  private train: TrainSide | null = null;
  private destroyed = false;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    readonly internals: Qwen3Forward,
    private readonly ownsGpu: boolean,
    readonly memoryPlan: MemoryPlan,
    /** How the checkpoint's matrices were stored at load, and why. */
    readonly precision: WeightPrecision,
    /** Harmless oddities of the checkpoint (e.g. a stored lm_head.weight although tied, which is ignored). */
    readonly warnings: string[] = [],
  ) {
    const { config } = internals;
    this.cache = new KvCache(internals.device, config.layerTypes.map((t) => t === 'full_attention'), config.numKvHeads * config.headDim, bindingLimit(internals.gpu.limits), memoryPlan.kvDtype);
    this.linearState = config.linearAttention ? new LinearStatePool(internals.device, config, bindingLimit(internals.gpu.limits)) : null;
  }

  /** How the matrices are stored now: full fine-tuning promotes f16 weights to f32 (train/trainable.ts). */
  get weightDtype(): 'f16' | 'f32' {
    return [...this.internals.params.values()].some((p) => p.dtype === 'f16') ? 'f16' : 'f32';
  }

  /** What machine-readable CLI output reports about the run: the adapter, the weight storage, the memory plan. */
  report(): {
    adapter: string;
    weight_dtype: 'f16' | 'f32';
    weight_precision: { checkpoint: string; stored: GpuDtype; reason: string; expected_logprob_error: number };
    memory_plan: { total_bytes: number; fits: boolean; items: { name: string; bytes: number }[] };
  } {
    const p = this.precision;
    return {
      adapter: adapterName(this.gpu.adapterInfo),
      weight_dtype: this.weightDtype,
      weight_precision: { checkpoint: p.checkpoint, stored: p.stored, reason: p.reason, expected_logprob_error: p.expectedLogprobError },
      memory_plan: { total_bytes: this.memoryPlan.totalBytes, fits: this.memoryPlan.fits, items: this.memoryPlan.items.map((i) => ({ name: i.name, bytes: i.bytes })) },
    };
  }

  get config(): ModelConfig {
    return this.internals.config;
  }

  get gpu(): Gpu {
    return this.internals.gpu;
  }

  newSequence(): SequenceHandle {
    this.checkAlive();
    const s = new SequenceState(this.nextSeqId++);
    this.sequences.set(s.id, s);
    return s;
  }

  releaseSequence(seq: SequenceHandle): void {
    const s = this.sequences.get(seq.id);
    if (!s) return;
    s.released = true;
    this.sequences.delete(seq.id);
    this.cache.release(seq.id);
    this.linearState?.release(seq.id);
  }

  async generate(req: GenerateRequest): Promise<GenerateOutput[]> {
    this.checkAlive();
    return this.exclusive(() => this.generateNow(req));
  }

  private generateNow(req: GenerateRequest): Promise<GenerateOutput[]> {
    return generateBatch(this.internals, this.cache, this.lookup, req, this.stats, this.linearState);
  }

  openDecode(opts: DecodeSessionOptions): DecodeSession {
    this.checkAlive();
    const session = new CachedDecodeSession(this.internals, this.cache, this.lookup, opts, this.stats, this.linearState);
    // Each step takes its turn with the engine's other GPU work (scratch buffers are shared).
    return {
      step: (items, steps) => this.exclusive(() => session.step(items, steps)),
      close: () => this.exclusive(() => session.close()),
    };
  }

  private readonly lookup = (seq: SequenceHandle): SequenceState | null => this.sequences.get(seq.id) ?? null;

  async score(req: ScoreRequest): Promise<ScoreOutput> {
    this.checkAlive();
    return this.exclusive(() => scoreSequences(this.internals, req));
  }

  // ---- training: delegated to the train side ------------------------------------------------
  // The ONE place where src/engine/train plugs in: set `this.train = createTrainState(this.internals)`.
  private trainSide(): TrainSide {
    this.checkAlive();
    this.train ??= createTrainState(this.internals);
    return this.train;
  }

  backward(req: BackwardRequest): Promise<void> {
    return this.exclusive(() => this.trainSide().backward(req));
  }

  zeroGrad(): void {
    this.trainSide().zeroGrad();
  }

  step(opt: OptimizerConfig): Promise<StepResult> {
    return this.exclusive(() => this.trainSide().step(opt));
  }

  setTrainable(mode: TrainableMode): void {
    this.trainSide().setTrainable(mode);
  }

  saveState(): Promise<{ tensors: NamedTensor[]; step: number }> {
    return this.exclusive(() => this.trainSide().saveState());
  }

  loadState(state: { tensors: NamedTensor[]; step: number }): Promise<void> {
    return this.exclusive(() => this.trainSide().loadState(state));
  }

  exportAdapter(baseModelName: string): Promise<{ adapterConfig: Record<string, unknown>; tensors: NamedTensor[] }> {
    return this.exclusive(() => this.trainSide().exportAdapter(baseModelName));
  }

  readGrads(): Promise<NamedTensor[]> {
    return this.exclusive(() => this.trainSide().readGrads());
  }

  async loadAdapter(source: AdapterSource): Promise<PeftLoraSettings> {
    this.checkAlive();
    const adapter = await readPeftAdapter(source, this.config);
    const { r, alpha, targetModules, visionTargetModules, useRslora } = adapter.settings;
    this.setTrainable({ kind: 'lora', lora: { r, alpha, targetModules, ...(visionTargetModules ? { visionTargetModules } : {}), useRslora, seed: 0 } });
    // The trainable state format: each factor with zero AdamW moments (a fresh optimizer).
    const zeros = (t: NamedTensor, suffix: string): NamedTensor => ({ name: t.name + suffix, shape: t.shape, data: new Float32Array(t.data.length) });
    const tensors = adapter.tensors.flatMap((t) => [t, zeros(t, '.exp_avg'), zeros(t, '.exp_avg_sq')]);
    await this.loadState({ tensors, step: 0 });
    return adapter.settings;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.train?.destroy();
    this.cache.destroy();
    this.linearState?.destroy();
    this.internals.destroy();
    if (this.ownsGpu) this.internals.device.destroy();
  }

  /**
   * Runs GPU work one call at a time: generation, scoring and training share scratch buffers, so an
   * overlapping call (e.g. the UI scoring while the trainer generates) must wait its turn.
   */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.then(() => undefined, () => undefined);
    return run;
  }

  private checkAlive(): void {
    if (this.destroyed) throw new Error('engine was destroyed');
  }
}

/** Streams the checkpoint's tensors to the GPU, one at a time, and returns a ready engine. */
export async function loadEngine(ckpt: Checkpoint, opts: LoadEngineOptions = {}): Promise<WebGpuEngine> {
  const check = validateQwen3Tensors(ckpt);
  const cfg = ckpt.config;
  if (cfg.numHeads % cfg.numKvHeads !== 0) throw new Error(`config: num_attention_heads (${cfg.numHeads}) must be a multiple of num_key_value_heads (${cfg.numKvHeads})`);
  if (cfg.headDim % 2 !== 0) throw new Error(`config: head_dim must be even for rotate-half RoPE, got ${cfg.headDim}`);
  const ownsGpu = !opts.gpu;
  const gpu = opts.gpu ?? (await getGpu());
  const maxBindingBytes = bindingLimit(gpu.limits, opts.maxBindingBytes);
  // Measured on lavapipe (BENCHMARKS.md, bench half-loads): native f16 loads were slower in the
  // forward matmul (0.57–0.94×) and in a whole LoRA train step (u32 faster by 3–16 %), though the
  // backward's dX GEMM gained 1.12–1.23×; so software adapters keep the u32 path for both
  // directions; GPUs with shader-f16 read halves natively, which is what their hardware loads do.
  const halfLoads: HalfLoads = !opts.halfLoads || opts.halfLoads === 'auto' ? (gpu.f16 && !gpu.software ? 'native' : 'u32') : opts.halfLoads;
  if (halfLoads === 'native' && !gpu.f16) {
    if (ownsGpu) gpu.device.destroy();
    throw new Error('halfLoads: \'native\' needs an adapter with shader-f16 (this one has none); use \'u32\' or \'auto\'');
  }
  const visionConfig = opts.vision ? cfg.vision : null;
  if (opts.vision && !visionConfig) {
    if (ownsGpu) gpu.device.destroy();
    throw new Error(cfg.visionError ? `vision: the vision tower cannot be used: ${cfg.visionError}` : 'vision: config.json has no vision_config (not a vision-language checkpoint)');
  }
  let decided: LoadPlan;
  try {
    decided = opts.decided ?? planLoad(ckpt, gpu, opts);
  } catch (err) {
    if (ownsGpu) gpu.device.destroy();
    throw err;
  }
  const { precision, memory: memoryPlan } = decided;
  const matrixDtype = precision.stored;
  if (!memoryPlan.fits) {
    if (ownsGpu) gpu.device.destroy();
    throw new Error(`model does not fit this GPU: ${memoryPlan.message}`);
  }
  const layout = qwen3TensorLayout(cfg, check.usesSeparateLmHead);
  const totalBytes = layout.reduce((a, t) => a + ckpt.tensors.get(t.name)!.byteLength, 0);
  const params = new Map<string, ParamEntry>();
  let loaded = 0;
  try {
    for (const { name, shape } of layout) {
      const info = ckpt.tensors.get(name)!;
      const raw = await ckpt.readTensor(name);
      const rows = shape.length === 2 ? shape[0]! : 1;
      const rowLen = shape.reduce((a, b) => a * b, 1) / rows;
      const rowBytes = rowLen * dtypeSize(info.dtype);
      const read: RowReader = (r0, n) => decodeToFloat32(info, raw.subarray(r0 * rowBytes, (r0 + n) * rowBytes));
      // Halves are paired per u32 word, so rows must hold an even count; a value beyond the half
      // range (possible from bf16) would become inf: such tensors stay f32.
      const dtype = matrixDtype === 'f16' && shape.length === 2 && rowLen % 2 === 0 && fitsHalf(read, rows, rowLen) ? 'f16' : 'f32';
      params.set(name, uploadTensor(gpu.device, name, shape, read, dtype, maxBindingBytes));
      loaded += info.byteLength;
      opts.onProgress?.({ phase: 'upload', file: name, loadedBytes: loaded, totalBytes });
    }
  } catch (err) {
    for (const p of params.values()) for (const c of p.chunks) c.buffer.destroy();
    if (ownsGpu) gpu.device.destroy();
    throw err;
  }
  const matmul: MatmulVariant = !opts.matmul || opts.matmul === 'auto' ? (gpu.software ? 'blocked' : 'tiled') : opts.matmul;
  const attention: AttentionVariant = !opts.attention || opts.attention === 'auto' ? (gpu.software ? 'thread' : 'workgroup') : opts.attention;
  const deltaRule: DeltaRuleVariant = !opts.deltaRule || opts.deltaRule === 'auto' ? (gpu.software ? 'recurrent' : 'chunked') : opts.deltaRule;
  const fwd = new Qwen3Forward(gpu, cfg, params, { matmul, attention, halfLoads, deltaRule }, maxBindingBytes);
  if (opts.vision) {
    try {
      if (!('weightFiles' in ckpt)) throw new Error('vision: the vision tower loads from an opened checkpoint (openCheckpoint), not a bare Checkpoint');
      fwd.vision = await loadVisionTower(fwd, ckpt as OpenedCheckpoint, matrixDtype);
    } catch (err) {
      fwd.destroy();
      if (ownsGpu) gpu.device.destroy();
      throw err;
    }
  }
  return new WebGpuEngine(fwd, ownsGpu, memoryPlan, precision, check.warnings);
}
