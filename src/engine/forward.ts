// The Qwen3 / Qwen3.5 forward pass on WebGPU, recorded dispatch by dispatch (read top to bottom in
// encodeLayerForward; Qwen3.5's Gated DeltaNet layers in encodeDeltaNet). Implements EngineInternals,
// the object the training side receives.

import type { ModelConfig } from '../model/types.ts';
import type { Gpu } from './gpu.ts';
import { MatmulMode, type ImageSplice, type MatmulArgs, type PackedToken, type VisionEncoder } from './internals.ts';
import type {
  KernelVariants, EngineInternals, LayerActs, LayerForwardOptions, LoraAdapter, PackedBatch, ParamEntry,
} from './internals.ts';
import { KernelCache, MAX_GROUPS, Recorder, StagingPool, UniformPool, f32, groups1d, type Binding } from './recorder.ts';
import { ropeTable } from './rope-table.ts';
import { mropeTable } from './vision/inputs.ts';
import { layerActsCounts, type GpuDtype } from './memory-plan.ts';
import { linearTensorName, type ModelLinear } from '../model/qwen3-tensors.ts';
import { DELTA_CHUNK, sequenceTable } from './linear-attention-plan.ts';
import { weightLoads, type HalfLoads } from './weight-loads.ts';

/** The attention and kv_write kernels' K/V element constants for a KV cache of `dtype` (f16 needs shader-f16). */
export function kvElement(dtype: GpuDtype): { ENABLE_F16: string; KV_ELEM: GpuDtype } {
  return { ENABLE_F16: dtype === 'f16' ? 'enable f16;' : '', KV_ELEM: dtype };
}

export type { HalfLoads };

export type { AttentionVariant, DeltaRuleVariant, ImageSplice, KernelVariants, MatmulVariant, PackedToken } from './internals.ts';

/** Byte budget of one logits chunk (rows × vocab columns × 4 bytes) when scoring. */
const LOGITS_CHUNK_BYTES = 32 * 1024 * 1024;

/** transformers' l2norm eps in the Gated DeltaNet (use_qk_l2norm_in_kernel): fixed, not rms_norm_eps. */
const L2NORM_EPS = 1e-6;

export class Qwen3Forward implements EngineInternals {
  readonly kernels: KernelCache;
  readonly lora = new Map<string, LoraAdapter>();
  private readonly uniformPool: UniformPool;
  private readonly stagingPool: StagingPool;
  /** Matmul pipelines by matmulKey: resolved once per weight storage and write mode, not per dispatch. */
  private readonly matmulPipes = new Map<number, GPUComputePipeline>();
  private readonly attentionPipes: Partial<Record<GpuDtype, GPUComputePipeline>> = {};
  private readonly scratch = new Map<string, GPUBuffer>();
  /** Outgrown scratch buffers, destroyed after the next submit. */
  private retired: GPUBuffer[] = [];
  /** Qwen3.5's vision tower when loaded (loadEngine's `vision` option); its config carries the M-RoPE section. */
  vision: VisionEncoder | null = null;

  constructor(
    readonly gpu: Gpu,
    readonly config: ModelConfig,
    readonly params: Map<string, ParamEntry>,
    readonly kernelVariants: KernelVariants,
    readonly maxBindingBytes: number,
  ) {
    this.kernels = new KernelCache(gpu.device);
    this.uniformPool = new UniformPool(gpu.device);
    this.stagingPool = new StagingPool(gpu.device);
  }

  get device(): GPUDevice {
    return this.gpu.device;
  }

  linearName(layer: number, target: ModelLinear): string {
    return linearTensorName(layer, target);
  }

  getPipeline(file: string, constants: Record<string, string | number | boolean> = {}): GPUComputePipeline {
    return this.kernels.get(file, constants);
  }

  createBuffer(label: string, byteSize: number): GPUBuffer {
    return this.device.createBuffer({ label, size: Math.max(16, Math.ceil(byteSize / 4) * 4), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  }

  recorder(label: string, opts: { errorScope?: boolean; stopped?: () => boolean } = {}): Recorder {
    return new Recorder(this.device, this.kernels, this.uniformPool, this.stagingPool, label, () => {
      for (const b of this.retired) b.destroy();
      this.retired = [];
    }, opts.errorScope ?? true, opts.stopped);
  }

  /** Makes sure the read-back pool holds a buffer of `byteSize` bytes (a decode session sizes its read-back once). */
  reserveReadback(byteSize: number): void {
    this.stagingPool.release(this.stagingPool.take(byteSize));
  }

  /**
   * A reusable scratch buffer of at least `byteSize` bytes, by role. Reuse across submits is safe:
   * writes of a later submit are ordered after the earlier one on the queue.
   */
  scratchBuffer(role: string, byteSize: number): GPUBuffer {
    const have = this.scratch.get(role);
    if (have && have.size >= byteSize) return have;
    // A smaller buffer may still be referenced by a recording that has not been submitted yet.
    if (have) this.retired.push(have);
    const buf = this.createBuffer(`scratch ${role}`, Math.max(byteSize, (have?.size ?? 0) * 2));
    this.scratch.set(role, buf);
    return buf;
  }

  private param(name: string): ParamEntry {
    const p = this.params.get(name);
    if (!p) throw new Error(`engine: parameter ${name} is not loaded`);
    return p;
  }

  /** The LM head matrix (V, D): the embedding when tied. */
  lmHead(): ParamEntry {
    return this.config.tieWordEmbeddings ? this.param('model.embed_tokens.weight') : this.param('lm_head.weight');
  }

  // ---------------------------------------------------------------------------------------------
  // Buffers of a batch.

  createLayerActs(T: number, label: string, make?: (role: string, bytes: number) => GPUBuffer): LayerActs {
    return this.layerActsIn(T, make ?? ((role, bytes) => this.createBuffer(`${label} ${role}`, bytes)));
  }

  /** LayerActs over reusable scratch buffers (valid until the next call with the same prefix). */
  scratchLayerActs(T: number, prefix: string): LayerActs {
    return this.layerActsIn(T, (role, bytes) => this.scratchBuffer(`${prefix}.${role}`, bytes));
  }

  /** Every LayerActs field sized from layerActsCounts, the memory plan's own description of it. */
  private layerActsIn(T: number, make: (role: string, bytes: number) => GPUBuffer): LayerActs {
    const fields = Object.entries(layerActsCounts(this.config)).map(([role, n]) => [role, make(role, T * n * 4)]);
    return { T, ...Object.fromEntries(fields) } as LayerActs;
  }

  packSequences(sequences: number[][], make?: (role: string, bytes: number) => GPUBuffer): PackedBatch {
    const tokens: PackedToken[] = [];
    sequences.forEach((ids, s) => {
      const start = tokens.length;
      ids.forEach((token, p) => tokens.push({ token, position: p, kvBase: start, kvSlot: start + p, seq: s }));
    });
    return this.packTokens(tokens, make ?? ((role, bytes) => this.createBuffer(`packed ${role}`, bytes)));
  }

  /** Uploads a packed batch into the given buffers (scratch or fresh). */
  /** `stateSlots`: per sequence of the pack, its linear-attention state slot (default: its index). */
  packTokens(tokens: PackedToken[], make: (role: string, bytes: number) => GPUBuffer, stateSlots?: number[]): PackedBatch {
    const T = tokens.length;
    const ids = new Uint32Array(Math.max(T, 1));
    const meta = new Uint32Array(Math.max(T, 1) * 4);
    const positions = new Uint32Array(T);
    const seqStarts: number[] = [];
    const seqLengths: number[] = [];
    tokens.forEach((t, i) => {
      if (!Number.isInteger(t.token) || t.token < 0 || t.token >= this.config.vocabSize) {
        throw new Error(`token id ${t.token} is outside the vocabulary [0, ${this.config.vocabSize})`);
      }
      ids[i] = t.token;
      meta.set([t.kvBase, t.position, t.kvSlot, t.seq], i * 4);
      positions[i] = t.position;
      if (i === 0 || tokens[i - 1]!.seq !== t.seq) {
        seqStarts.push(i);
        seqLengths.push(0);
      }
      seqLengths[seqLengths.length - 1]! += 1;
    });
    // Only the first rotaryDim dims of a head rotate (all of them for Qwen3).
    const rope = tokens.some((t) => t.mrope) ? this.mrope(tokens) : ropeTable(positions, this.config.rotaryDim, this.config.ropeTheta);
    const batch: PackedBatch = {
      T,
      tokens: make('tokens', ids.byteLength),
      meta: make('meta', meta.byteLength),
      rope: make('rope', Math.max(rope.byteLength, 4)),
      seqStarts,
      seqLengths,
      positions,
    };
    const q = this.device.queue;
    q.writeBuffer(batch.tokens, 0, ids);
    q.writeBuffer(batch.meta, 0, meta);
    if (rope.byteLength) q.writeBuffer(batch.rope, 0, rope);
    if (this.config.layerTypes.includes('linear_attention')) {
      const table = sequenceTable(seqStarts, seqLengths, stateSlots);
      batch.seqTable = make('seqTable', table.byteLength);
      q.writeBuffer(batch.seqTable, 0, table);
    }
    return batch;
  }

  private mrope(tokens: PackedToken[]): Float32Array<ArrayBuffer> {
    if (!this.vision) throw new Error('engine: M-RoPE positions need the vision tower\'s config (load the engine with vision: true)');
    const { rotaryDim, ropeTheta } = this.config;
    return mropeTable(tokens.map((t) => t.mrope ?? [t.position, t.position, t.position]), rotaryDim, ropeTheta, this.vision.config.mropeSection);
  }

  // ---------------------------------------------------------------------------------------------
  // Kernels.

  encodeEmbedding(rec: Recorder, batch: PackedBatch, out: GPUBuffer): void {
    const E = this.param('model.embed_tokens.weight');
    const D = this.config.hiddenSize;
    const loads = weightLoads(E.dtype, this.kernelVariants.halfLoads);
    const pipe = this.getPipeline('embedding.wgsl', { ENABLE_F16: loads.ENABLE_F16!, W_ELEM: loads.W_ELEM!, LOAD_W: loads.LOAD_W! });
    for (const c of E.chunks) {
      rec.dispatch(pipe, [batch.tokens, c.buffer, out], [batch.T, D, c.rowStart, c.rows], groups1d(batch.T * D), `embedding rows ${c.rowStart}`);
    }
  }

  encodeImageSplice(rec: Recorder, images: ImageSplice, x: GPUBuffer): void {
    const D = this.config.hiddenSize;
    rec.dispatch(this.getPipeline('rows_scatter.wgsl'), [images.embeds, images.rows, x], [images.count, D, 0, 0], groups1d(images.count * D), 'image embeddings splice');
  }

  /**
   * y[:, yOffset .. yOffset+N) (row stride ldy) = scale · x·W[wRow0 .. wRow0+N)ᵀ, with mode
   * overwrite / accumulate / residual. W is a raw buffer of `dtype` holding rows of length K.
   */
  encodeMatmul(rec: Recorder, a: MatmulArgs): void {
    const mode = a.mode ?? MatmulMode.Overwrite;
    const tiled = (a.variant ?? this.kernelVariants.matmul) === 'tiled';
    const wRow0 = a.wRow0 ?? 0;
    // Vector loads need K and the W offset in whole 4-element groups.
    const vec4 = !tiled && a.K % 4 === 0;
    const halfLoads = a.halfLoads ?? this.kernelVariants.halfLoads;
    // Everything the kernel's constants depend on, as one small integer: a decode step looks its ~200
    // matmul pipelines up without building a string key for each.
    const key = ((((tiled ? 2 : vec4 ? 1 : 0) * 2 + (a.wDtype === 'f16' ? 1 : 0)) * 2 + (halfLoads === 'native' ? 1 : 0)) * 3) + mode;
    let pipe = this.matmulPipes.get(key);
    if (!pipe) {
      const loads = weightLoads(a.wDtype, halfLoads);
      const vec4Loads = a.wDtype === 'f32'
        ? { W_VEC: 'vec4u', W_LOAD4: 'bitcast<vec4f>(v)' }
        : halfLoads === 'native'
          ? { W_VEC: 'vec4<f16>', W_LOAD4: 'vec4f(v)' }
          : { W_VEC: 'vec2u', W_LOAD4: 'vec4f(unpack2x16float(v.x), unpack2x16float(v.y))' };
      pipe = tiled
        ? this.getPipeline('matmul_tiled.wgsl', { ENABLE_F16: loads.ENABLE_F16!, W_ELEM: loads.W_ELEM!, LOAD_W: loads.LOAD_W!, MODE: mode })
        : vec4
          ? this.getPipeline('matmul_vec4.wgsl', { ENABLE_F16: loads.ENABLE_F16!, MODE: mode, ...vec4Loads })
          : this.getPipeline('matmul.wgsl', { ...loads, MODE: mode });
      this.matmulPipes.set(key, pipe);
    }
    const groups: [number, number, number] = tiled
      ? [Math.ceil(a.N / 16), Math.ceil(a.M / 16), 1]
      : [Math.ceil(a.N / 256), Math.ceil(a.M / 4), 1];
    const residual: Binding = mode === MatmulMode.Residual ? a.residual! : a.x;
    rec.dispatch(pipe, [a.x, a.w, residual, a.y],
      [a.M, a.N, a.K, wRow0 * a.K, a.ldy ?? a.N, a.yOffset ?? 0, 0, 0, f32(a.scale ?? 1)], groups, a.label);
  }

  encodeLinear(rec: Recorder, layer: number, target: ModelLinear, x: GPUBuffer, y: GPUBuffer, rows: number,
    opts: { adapters: boolean; residual?: GPUBuffer }): void {
    const name = linearTensorName(layer, target);
    const W = this.param(name);
    const [out, inp] = W.shape as [number, number];
    for (const c of W.chunks) {
      this.encodeMatmul(rec, {
        x, w: c.buffer, wDtype: W.dtype, y, M: rows, N: c.rows, K: inp, ldy: out, yOffset: c.rowStart,
        mode: opts.residual ? MatmulMode.Residual : MatmulMode.Overwrite, residual: opts.residual, label: name,
      });
    }
    const lora = opts.adapters ? this.lora.get(name) : undefined;
    if (lora) {
      const u = this.scratchBuffer('lora.u', rows * lora.r * 4); // (rows, r) = x·Aᵀ
      this.encodeMatmul(rec, { x, w: lora.a, wDtype: 'f32', y: u, M: rows, N: lora.r, K: inp, label: `${name} lora A` });
      this.encodeMatmul(rec, {
        x: u, w: lora.b, wDtype: 'f32', y, M: rows, N: out, K: lora.r, scale: lora.scale, mode: MatmulMode.Accumulate, label: `${name} lora B`,
      });
    }
  }

  encodeRmsnorm(rec: Recorder, x: GPUBuffer, weightName: string, y: GPUBuffer, rstd: GPUBuffer, rows: number, n: number): void {
    const w = this.param(weightName);
    // Qwen3.5's norms are zero-centered: they scale by (1 + w).
    const unitOffset = this.config.architecture === 'qwen3_5' ? 1 : 0;
    rec.dispatch(this.getPipeline('rmsnorm.wgsl'), [x, w.chunks[0]!.buffer, y, rstd], [rows, n, unitOffset, 0, f32(this.config.rmsNormEps)], groups1d(rows), weightName);
  }

  encodeLayerForward(rec: Recorder, layer: number, acts: LayerActs, batch: PackedBatch, opts: LayerForwardOptions): void {
    const D = this.config.hiddenSize;
    const T = batch.T;
    const p = `model.layers.${layer}`;
    this.encodeRmsnorm(rec, acts.x, `${p}.input_layernorm.weight`, acts.a, acts.rstd1, T, D); // a (T, D)
    if (this.config.layerTypes[layer] === 'linear_attention') {
      if (opts.kv && !opts.linearState) throw new Error('engine: generating with Qwen3.5 needs the linear-attention layers\' conv and recurrent state (LayerForwardOptions.linearState) besides the KV cache');
      this.encodeDeltaNet(rec, layer, acts, batch, opts); // xMid = x + out_proj·…
    } else {
      this.encodeAttention(rec, layer, acts, batch, opts);
    }
    // MLP block
    this.encodeRmsnorm(rec, acts.xMid, `${p}.post_attention_layernorm.weight`, acts.b, acts.rstd2, T, D);
    this.encodeMlp(rec, layer, acts, T, opts.adapters);
  }

  /** Softmax attention (Qwen3; Qwen3.5's gated full-attention layers): reads acts.a, writes xMid. */
  private encodeAttention(rec: Recorder, layer: number, acts: LayerActs, batch: PackedBatch, opts: LayerForwardOptions): void {
    const { numHeads: H, numKvHeads: K, headDim: d, rotaryDim } = this.config;
    const T = batch.T;
    const p = `model.layers.${layer}`;
    const lin = { adapters: opts.adapters };
    const gated = this.config.attnOutputGate;
    if (gated) {
      this.encodeLinear(rec, layer, 'q_proj', acts.a, acts.qGate!, T, lin); // (T, H·2d): per head, queries then gates
      rec.dispatch(this.getPipeline('rows_copy.wgsl'), [acts.qGate!, acts.qRaw], [T * H, d, 0, 2 * d, 0, d], groups1d(T * H * d), 'q from (q, gate)');
    } else {
      this.encodeLinear(rec, layer, 'q_proj', acts.a, acts.qRaw, T, lin); // (T, H·d)
    }
    this.encodeLinear(rec, layer, 'k_proj', acts.a, acts.kRaw, T, lin); // (T, K·d)
    this.encodeLinear(rec, layer, 'v_proj', acts.a, acts.v, T, lin); //    (T, K·d)
    this.encodeRmsnorm(rec, acts.qRaw, `${p}.self_attn.q_norm.weight`, acts.q, acts.qRstd, T * H, d);
    this.encodeRmsnorm(rec, acts.kRaw, `${p}.self_attn.k_norm.weight`, acts.k, acts.kRstd, T * K, d);
    const rope = this.getPipeline('rope.wgsl');
    const half = rotaryDim / 2;
    rec.dispatch(rope, [batch.rope, acts.q], [T, H, half, d], groups1d(T * H * half), 'rope q');
    rec.dispatch(rope, [batch.rope, acts.k], [T, K, half, d], groups1d(T * K * half), 'rope k');
    let kSrc = acts.k;
    let vSrc = acts.v;
    // The packed k/v are f32; a KV cache holds its own element type (kv-cache.ts).
    const kvDtype = opts.kv?.dtype ?? 'f32';
    if (opts.kv) {
      kSrc = opts.kv.k[layer]!;
      vSrc = opts.kv.v[layer]!;
      rec.dispatch(this.getPipeline('kv_write.wgsl', kvElement(kvDtype)), [acts.k, acts.v, batch.meta, kSrc, vSrc], [T, K * d, 0, 0], groups1d(T * K * d), 'kv write');
    }
    const attnParams = [T, H, K, 0, f32(1 / Math.sqrt(d))];
    const attnBuffers = [acts.q, kSrc, vSrc, batch.meta, acts.attn, acts.lse];
    // One attention pipeline per model and K/V element type (HEAD_DIM is the model's), resolved once.
    const workgroup = this.kernelVariants.attention === 'workgroup';
    const pipe = this.attentionPipes[kvDtype] ??= this.getPipeline(workgroup ? 'attention_wg.wgsl' : 'attention.wgsl', { HEAD_DIM: d, ...kvElement(kvDtype) });
    if (workgroup) {
      // one workgroup per (token, head)
      const n = T * H;
      const groups: [number, number, number] = [Math.min(n, MAX_GROUPS), Math.ceil(n / MAX_GROUPS), 1];
      rec.dispatch(pipe, attnBuffers, attnParams, groups, 'attention');
    } else {
      rec.dispatch(pipe, attnBuffers, attnParams, groups1d(T * H), 'attention');
    }
    let oIn = acts.attn;
    if (gated) {
      // Qwen3.5: attn ⊙ σ(gate), the gate being each head's second half of the q_proj output.
      oIn = acts.attnGated!;
      rec.dispatch(this.getPipeline('sigmoid_gate.wgsl'), [acts.attn, acts.qGate!, oIn], [T * H, d, d, 2 * d], groups1d(T * H * d), 'attention output gate');
    }
    this.encodeLinear(rec, layer, 'o_proj', oIn, acts.xMid, T, { ...lin, residual: acts.x }); // xMid = x + o·attn
  }

  /**
   * Qwen3.5's Gated DeltaNet token mixer (transformers' Qwen3_5GatedDeltaNet). Scoring: every
   * sequence of the pack starts from a zero conv and recurrent state; generating (opts.linearState):
   * from its saved states, which are updated. Reads acts.a, writes xMid.
   */
  private encodeDeltaNet(rec: Recorder, layer: number, acts: LayerActs, batch: PackedBatch, opts: LayerForwardOptions): void {
    const la = this.config.linearAttention!;
    const { numKeyHeads: hk, numValueHeads: hv, keyHeadDim: dk, valueHeadDim: dv, convKernelDim: kc } = la;
    const T = batch.T;
    const C = 2 * hk * dk + hv * dv;
    const seqs = batch.seqStarts.length;
    const p = `model.layers.${layer}.linear_attn`;
    const lin = { adapters: opts.adapters };
    const withState = Boolean(opts.linearState);
    const noState = this.scratchBuffer('linear.nostate', 16); // bound, never read: WITH_STATE is false when scoring
    const convState = opts.linearState?.conv[layer] ?? noState;
    const recurrentState = opts.linearState?.recurrent[layer] ?? noState;
    this.encodeLinear(rec, layer, 'in_proj_qkv', acts.a, acts.laQkv!, T, lin); // (T, C)
    this.encodeLinear(rec, layer, 'in_proj_z', acts.a, acts.laZ!, T, lin); //     (T, Hv·dv)
    this.encodeLinear(rec, layer, 'in_proj_b', acts.a, acts.laB!, T, lin); //     (T, Hv)
    this.encodeLinear(rec, layer, 'in_proj_a', acts.a, acts.laA!, T, lin); //     (T, Hv)
    const convIo = [acts.laQkv!, this.param(`${p}.conv1d.weight`).chunks[0]!.buffer, batch.meta, batch.seqTable!, convState, acts.laConv!];
    rec.dispatch(this.getPipeline('conv1d_silu.wgsl', { KSIZE: kc, PASS: 0, WITH_STATE: withState }), convIo, [T, C, seqs, 0], groups1d(T * C), 'conv1d');
    if (withState) rec.dispatch(this.getPipeline('conv1d_silu.wgsl', { KSIZE: kc, PASS: 1, WITH_STATE: true }), convIo, [T, C, seqs, 0], groups1d(seqs * C), 'conv state');
    // q and k heads are the conv output's first 2·Hk·dk columns: one l2norm over 2·Hk heads.
    rec.dispatch(this.getPipeline('l2norm.wgsl'), [acts.laConv!, acts.laQk!, acts.laInv!], [T * 2 * hk, 2 * hk, dk, 0, C, f32(L2NORM_EPS)], groups1d(T * 2 * hk), 'q/k l2norm');
    rec.dispatch(this.getPipeline('delta_gates.wgsl'),
      [acts.laA!, acts.laB!, this.param(`${p}.A_log`).chunks[0]!.buffer, this.param(`${p}.dt_bias`).chunks[0]!.buffer, acts.laGb!], [T * hv, hv, 0, 0], groups1d(T * hv), 'delta gates');
    const deltaIo = [acts.laQk!, acts.laConv!, acts.laGb!, batch.seqTable!, recurrentState, acts.laCore!];
    const deltaParams = [seqs, T, hk, hv, dv, 2 * hk * dk, C, f32(1 / Math.sqrt(dk))];
    if (T > seqs && this.kernelVariants.deltaRule === 'chunked') {
      // Some sequence has several tokens: one workgroup per (sequence, value head), CHUNK tokens at a time.
      const groups = seqs * hv;
      rec.dispatch(this.getPipeline('gated_delta_chunked.wgsl', { DK: dk, DV: dv, CHUNK: DELTA_CHUNK, WITH_STATE: withState }), deltaIo, deltaParams,
        [Math.min(groups, MAX_GROUPS), Math.ceil(groups / MAX_GROUPS), 1], 'gated delta rule');
    } else {
      rec.dispatch(this.getPipeline('gated_delta.wgsl', { DK: dk, WITH_STATE: withState }), deltaIo, deltaParams, groups1d(seqs * hv * dv), 'gated delta rule');
    }
    rec.dispatch(this.getPipeline('rmsnorm_gated.wgsl'), [acts.laCore!, acts.laZ!, this.param(`${p}.norm.weight`).chunks[0]!.buffer, acts.laNormed!, acts.laRstd!],
      [T * hv, dv, 0, 0, f32(this.config.rmsNormEps)], groups1d(T * hv), 'gated norm');
    this.encodeLinear(rec, layer, 'out_proj', acts.laNormed!, acts.xMid, T, { ...lin, residual: acts.x }); // xMid = x + out_proj·…
  }

  /** The MLP block: reads acts.xMid, writes acts.b … acts.xOut. */
  private encodeMlp(rec: Recorder, layer: number, acts: LayerActs, T: number, adapters: boolean): void {
    const lin = { adapters };
    const F = this.config.intermediateSize;
    this.encodeLinear(rec, layer, 'gate_proj', acts.b, acts.gate, T, lin); // (T, F)
    this.encodeLinear(rec, layer, 'up_proj', acts.b, acts.up, T, lin); //     (T, F)
    rec.dispatch(this.getPipeline('swiglu.wgsl'), [acts.gate, acts.up, acts.hidden], [T * F, 0, 0, 0], groups1d(T * F), 'swiglu');
    this.encodeLinear(rec, layer, 'down_proj', acts.hidden, acts.xOut, T, { ...lin, residual: acts.xMid }); // xOut = xMid + down·hidden
  }

  /**
   * Embedding (with image embeddings spliced in) + all layers; returns the buffer holding the last layer's
   * output (T, D). A layer boundary follows each layer: a recorder with a stop check may end there.
   */
  encodeTrunk(rec: Recorder, batch: PackedBatch, acts: LayerActs, opts: LayerForwardOptions, images?: ImageSplice): GPUBuffer {
    this.encodeEmbedding(rec, batch, acts.x);
    if (images) this.encodeImageSplice(rec, images, acts.x);
    const io = { x: acts.x, xOut: acts.xOut };
    for (let l = 0; l < this.config.numLayers; l++) {
      const layerActs = { ...acts, x: io.x, xOut: io.xOut };
      this.encodeLayerForward(rec, l, layerActs, batch, opts);
      rec.boundary();
      [io.x, io.xOut] = [io.xOut, io.x];
    }
    return io.x;
  }

  /** rows of `hidden` picked by `rowIndex`, then the final norm: (R, D) in a scratch buffer. */
  encodeFinalHidden(rec: Recorder, hidden: GPUBuffer, rowIndex: GPUBuffer, R: number): GPUBuffer {
    const D = this.config.hiddenSize;
    const picked = this.scratchBuffer('final.picked', R * D * 4);
    const normed = this.scratchBuffer('final.normed', R * D * 4);
    const rstd = this.scratchBuffer('final.rstd', R * 4);
    rec.dispatch(this.getPipeline('gather_rows.wgsl'), [hidden, rowIndex, picked], [R, D, 0, 0], groups1d(R * D), 'gather rows');
    this.encodeRmsnorm(rec, picked, 'model.norm.weight', normed, rstd, R, D);
    return normed;
  }

  /** Full logits (R, V) of the final hidden rows into `logits` (raw, no temperature). */
  encodeLogits(rec: Recorder, h: GPUBuffer, R: number, logits: GPUBuffer): void {
    const W = this.lmHead();
    const V = this.config.vocabSize;
    for (const c of W.chunks) {
      this.encodeMatmul(rec, { x: h, w: c.buffer, wDtype: W.dtype, y: logits, M: R, N: c.rows, K: this.config.hiddenSize, ldy: V, yOffset: c.rowStart, label: 'lm head' });
    }
  }

  /**
   * Per-row (logprob of targets[r], entropy, logZ) at temperature τ, streaming the vocabulary in
   * chunks so that R×V logits never exist at once. Returns the (R, 3) output buffer.
   */
  encodeLogprobs(rec: Recorder, h: GPUBuffer, R: number, targets: GPUBuffer, temperature: number): GPUBuffer {
    const W = this.lmHead();
    const D = this.config.hiddenSize;
    const cols = Math.max(64, Math.min(this.config.vocabSize, Math.floor(LOGITS_CHUNK_BYTES / (4 * Math.max(R, 1)))));
    const z = this.scratchBuffer('logprobs.z', R * cols * 4);
    const stats = this.scratchBuffer('logprobs.stats', R * 16);
    const out = this.scratchBuffer('logprobs.out', R * 12);
    const statsPipe = this.getPipeline('logits_stats.wgsl');
    let first = 1;
    for (const c of W.chunks) {
      for (let r0 = 0; r0 < c.rows; r0 += cols) {
        const n = Math.min(cols, c.rows - r0);
        this.encodeMatmul(rec, { x: h, w: c.buffer, wDtype: W.dtype, y: z, M: R, N: n, K: D, wRow0: r0, ldy: n, scale: 1 / temperature, label: 'lm head chunk' });
        rec.dispatch(statsPipe, [z, targets, stats], [R, n, n, c.rowStart + r0, first, 0, 0, 0], groups1d(R), 'logits stats');
        first = 0;
      }
    }
    rec.dispatch(this.getPipeline('logprob_finalize.wgsl'), [stats, out], [R, 0, 0, 0], groups1d(R), 'logprob finalize');
    return out;
  }

  destroy(): void {
    for (const b of this.scratch.values()) b.destroy();
    this.scratch.clear();
    for (const p of this.params.values()) for (const c of p.chunks) c.buffer.destroy();
    this.vision?.destroy();
    this.stagingPool.destroy();
  }
}
