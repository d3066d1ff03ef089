// The training backward pass: from per-token dL/dlogp to the gradients of the trainable parameters,
// accumulated into their grad buffers. Per-layer checkpointing keeps activation memory at
// O(T·D·layers + one layer's intermediates):
//   1. forward: embedding, then each layer with its input x_l saved (H3's encodeLayerForward);
//   2. LM head over the scored rows only, chunked over the vocabulary (no (T, V) buffer): pass 1
//      folds every chunk into a running logsumexp (and Σp·z for the entropy term), pass 2
//      recomputes each chunk and backprops dL/dlogp and dL/dentropy through it;
//   3. layers L−1 … 0: recompute the layer's forward from x_l into one LayerActs, then backprop it;
//   4. embedding (full fine-tuning; with tied weights it adds to the LM head's share);
//   5. with LoRA on the vision tower, or in full mode (the tower trained unless frozen): from the
//      image tokens' rows of dL/dx_0 back through the tower (vision-backward.ts, block by block like 3).
// With a stop check (BackwardRequest.stopped) every layer of 1 and 3 (and every tower block of 5) is a
// submit of its own, and the pass may end at any of their boundaries: the gradients then hold a part
// of the call's, which the caller must clear (zeroGrad) and never apply.

import type { EngineInternals, ImageSplice, LayerActs, PackedBatch, ParamEntry } from '../internals.ts';
import type { Recorder } from '../recorder.ts';
import type { BackwardRequest, LoraTarget } from '../types.ts';
import type { TrainOps } from './ops.ts';
import type { TrainableSet } from './trainable.ts';
import { backwardBuffers, bufferSize, logitsChunkRows, type BackwardBuffers as PlannedBuffers } from '../memory-plan.ts';
import { DELTA_CHUNK, deltaBackwardThreads, deltaBackwardWork } from '../linear-attention-plan.ts';
import { linearAttnConvDim } from '../../model/qwen3-tensors.ts';
import { checkImageInputs, encodeImages, packPrompts } from '../vision/prompts.ts';
import { linearBackward } from './linear-backward.ts';
import { VisionBackward } from './vision-backward.ts';
import { VisionTower } from '../vision/tower.ts';

const NEG_BIG = -3.0e38;

/**
 * Which rows of the pack feed a scored token: row r predicts `target` and gets dL/dlogp `grads`
 * and dL/dentropy `entropyGrads` (zeros when the request has no dLdEntropy).
 */
export interface ScoredRows {
  rows: Uint32Array<ArrayBuffer>; // (Ts) packed row index
  targets: Uint32Array<ArrayBuffer>; // (Ts) token id
  grads: Float32Array<ArrayBuffer>; // (Ts) dL/dlogp
  entropyGrads: Float32Array<ArrayBuffer>; // (Ts) dL/dentropy
}

/** Qwen3.5's gated attention layers: o_proj's input gradient and the (query, gate) gradient of q_proj's output. */
interface GatedAttentionGrads {
  dAttnGated: GPUBuffer; // (T, H·d)
  dqGate: GPUBuffer; //     (T, H·2d) per head: d query dims, then d gate dims
}

/** Per-call gradients of a Gated DeltaNet layer (C = 2·Hk·dk + Hv·dv conv channels). */
interface DeltaNetGrads {
  dNormed: GPUBuffer; // (T, Hv·dv) out_proj's input
  dn: GPUBuffer; //      (T, Hv·dv) w ⊙ rmsnorm(core)
  dz: GPUBuffer; //      (T, Hv·dv) in_proj_z's output
  dCore: GPUBuffer; //   (T, Hv·dv) the delta rule's output
  dqk: GPUBuffer; //     (T, 2, Hv, dk) dq, dk per value head
  dConv: GPUBuffer; //   (T, C) the conv output: q, k, v columns
  dPre: GPUBuffer; //    (T, C) conv1d backward scratch
  dQkv: GPUBuffer; //    (T, C) in_proj_qkv's output
  dgb: GPUBuffer; //     (T, Hv, 2) dg, dβ
  da: GPUBuffer; //      (T, Hv) in_proj_a's output
  db: GPUBuffer; //      (T, Hv) in_proj_b's output
  work: GPUBuffer; //    delta backward chunk states + per-workgroup scratch (linear-attention-plan.ts)
  scratchOffset: number;
  /** Chunks per saved segment state of the delta rule (deltaBackwardWork). */
  seg: number;
  dwScratchB: GPUBuffer; // a second frozen-dw target (A_log and dt_bias share a dispatch)
  threads: number; // invocations per workgroup of the delta backward: max(dk, dv)
}

export function checkBackwardRequest(req: BackwardRequest, vocabSize: number): void {
  if (!(req.temperature > 0) || !Number.isFinite(req.temperature)) throw new Error(`backward: temperature must be a finite number > 0, got ${req.temperature}`);
  if (req.sequences.length === 0) throw new Error('backward: no sequences');
  if (req.dLdLogp.length !== req.sequences.length) {
    throw new Error(`backward: dLdLogp has ${req.dLdLogp.length} arrays for ${req.sequences.length} sequences`);
  }
  if (req.dLdEntropy && req.dLdEntropy.length !== req.sequences.length) {
    throw new Error(`backward: dLdEntropy has ${req.dLdEntropy.length} arrays for ${req.sequences.length} sequences`);
  }
  req.sequences.forEach((s, i) => {
    if (s.ids.length === 0) throw new Error(`backward: sequence ${i} is empty`);
    if (!Number.isInteger(s.scoreFrom) || s.scoreFrom < 1 || s.scoreFrom > s.ids.length) {
      throw new Error(`backward: sequence ${i} has scoreFrom ${s.scoreFrom}; it must be in [1, ${s.ids.length}] (position 0 has no prediction)`);
    }
    for (const id of s.ids) {
      if (!Number.isInteger(id) || id < 0 || id >= vocabSize) throw new Error(`backward: sequence ${i} has token id ${id} outside the vocabulary [0, ${vocabSize})`);
    }
    const g = req.dLdLogp[i]!;
    const want = s.ids.length - s.scoreFrom;
    if (g.length !== want) throw new Error(`backward: dLdLogp[${i}] has ${g.length} values, expected ${want} (ids.length − scoreFrom)`);
    for (let j = 0; j < g.length; j++) if (!Number.isFinite(g[j]!)) throw new Error(`backward: dLdLogp[${i}][${j}] is not finite (${g[j]})`);
    const e = req.dLdEntropy?.[i];
    if (e) {
      if (e.length !== want) throw new Error(`backward: dLdEntropy[${i}] has ${e.length} values, expected ${want} (ids.length − scoreFrom)`);
      for (let j = 0; j < e.length; j++) if (!Number.isFinite(e[j]!)) throw new Error(`backward: dLdEntropy[${i}][${j}] is not finite (${e[j]})`);
    }
  });
}

/** Row r of the pack (token ids[t−1] of a sequence) predicts ids[t]; rows are listed in pack order. */
export function scoredRows(req: BackwardRequest, seqStarts: number[]): ScoredRows {
  const total = req.sequences.reduce((n, s) => n + s.ids.length - s.scoreFrom, 0);
  const out: ScoredRows = { rows: new Uint32Array(total), targets: new Uint32Array(total), grads: new Float32Array(total), entropyGrads: new Float32Array(total) };
  let k = 0;
  req.sequences.forEach((s, i) => {
    for (let t = s.scoreFrom; t < s.ids.length; t++, k++) {
      out.rows[k] = seqStarts[i]! + t - 1;
      out.targets[k] = s.ids[t]!;
      out.grads[k] = req.dLdLogp[i]![t - s.scoreFrom]!;
      if (req.dLdEntropy) out.entropyGrads[k] = req.dLdEntropy[i]![t - s.scoreFrom]!;
    }
  });
  return out;
}

/** A per-call buffer must fit one storage binding; the clear fix is fewer tokens per backward call. */
function checkFits(internals: EngineInternals, label: string, bytes: number): void {
  const { limits } = internals.gpu;
  const limit = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  if (bytes > limit) {
    throw new Error(`backward: the ${label} buffer needs ${bytes} bytes, above this device's ${limit}-byte binding limit; backpropagate fewer tokens per call (split the batch)`);
  }
}

/**
 * The backward pass's buffers, kept between calls (llm.c's one planned allocation): each role's
 * buffer is created the first time, reused while the next call's shape fits in it, and replaced only
 * when a call needs more. A reused buffer is zero-filled again, exactly like a new one, so no kernel
 * sees values of an earlier call. Calls never overlap (the engine runs GPU work one call at a time,
 * and runBackward waits for its work to finish), so a buffer is never rewritten while in use.
 */
export class BackwardBuffers {
  private readonly byRole = new Map<string, GPUBuffer>();
  /** Buffers created so far (tests check that a second call of the same shape creates none). */
  created = 0;
  constructor(private readonly internals: EngineInternals) {}

  /** A zero-filled buffer of at least `bytes` for `role`. */
  get(role: string, bytes: number): GPUBuffer {
    const size = Math.max(16, Math.ceil(bytes / 4) * 4);
    const have = this.byRole.get(role);
    if (have && have.size >= size) {
      const enc = this.internals.gpu.device.createCommandEncoder({ label: `clear backward ${role}` });
      enc.clearBuffer(have);
      this.internals.gpu.device.queue.submit([enc.finish()]);
      return have;
    }
    have?.destroy();
    const b = this.internals.createBuffer(`backward ${role}`, size);
    this.created++;
    this.byRole.set(role, b);
    return b;
  }

  /** Bytes held now, by role (the memory plan's backward share is checked against this). */
  bytes(): number {
    let n = 0;
    for (const b of this.byRole.values()) n += b.size;
    return n;
  }

  destroy(): void {
    for (const b of this.byRole.values()) b.destroy();
    this.byRole.clear();
  }
}

/**
 * One backward call's view of the buffers: f32 scratch and uploads, checked against the binding
 * limit and against the memory plan (a buffer the plan does not list, or lists with another size,
 * is a bug that would make the plan lie, so it fails loudly).
 */
class Scratch {
  constructor(private readonly internals: EngineInternals, private readonly pool: BackwardBuffers, private readonly plan: PlannedBuffers) {}

  /** A planned buffer of `bytes` for `role`: its own, or the one it shares with the other layer type's role (memory-plan.ts backwardBuffers). */
  take(role: string, bytes: number): GPUBuffer {
    const slot = this.plan.slotOf.get(role);
    const planned = this.plan.buffers.get(slot ?? role);
    const fits = slot === undefined ? planned === bufferSize(bytes) : planned !== undefined && bufferSize(bytes) <= planned;
    if (!fits) {
      throw new Error(`backward: buffer '${role}' of ${bytes} bytes is not in the memory plan (${planned === undefined ? 'no such role' : `planned ${planned}`}); update backwardBufferPlan in memory-plan.ts`);
    }
    return this.pool.get(slot ?? role, slot === undefined ? bytes : planned!);
  }

  f32(label: string, count: number): GPUBuffer {
    const bytes = count * 4;
    checkFits(this.internals, label, bytes);
    return this.take(label, bytes);
  }

  upload(label: string, data: Float32Array<ArrayBuffer> | Uint32Array<ArrayBuffer>): GPUBuffer {
    const b = this.take(label, data.byteLength);
    this.internals.gpu.device.queue.writeBuffer(b, 0, data);
    return b;
  }
}

function param(internals: EngineInternals, name: string): ParamEntry {
  const p = internals.params.get(name);
  if (!p) throw new Error(`backward: the model has no parameter ${name}`);
  return p;
}

export async function runBackward(internals: EngineInternals, ops: TrainOps, trainable: TrainableSet, req: BackwardRequest, pool: BackwardBuffers): Promise<void> {
  const cfg = internals.config;
  checkBackwardRequest(req, cfg.vocabSize);
  checkImageInputs(internals, req.sequences, 'backward');
  const adapters = req.adapters ?? true;
  if (trainable.mode.kind === 'lora' && !adapters) throw new Error('backward: adapters=false with LoRA training would compute no adapter gradient');
  // No scored token: L does not depend on any parameter.
  if (req.sequences.every((s) => s.scoreFrom === s.ids.length)) return;

  // The widest per-token activation, (T, max(F, H·d, D)), before anything is allocated.
  const T = req.sequences.reduce((n, s) => n + s.ids.length, 0);
  const widest = Math.max(cfg.intermediateSize, cfg.numHeads * cfg.headDim, cfg.hiddenSize);
  checkFits(internals, `(${T} tokens, ${widest}) activation`, T * widest * 4);
  const Ts = req.sequences.reduce((n, s) => n + s.ids.length - s.scoreFrom, 0);
  const loraR = Math.max(0, ...[...trainable.lora.values()].map((p) => p.adapter.r));
  // LoRA on the vision tower, or full fine-tuning with the tower trained: the backward goes on through it from the image tokens' rows.
  const visionLora = new Map([...trainable.lora].filter(([name]) => name.startsWith('model.visual.')));
  const towerGrads = trainable.trainsVisionTower ? (name: string) => trainable.gradChunks(name) : null;
  const patches = adapters && (visionLora.size > 0 || towerGrads) ? req.sequences.reduce((n, s) => n + (s.images?.grids.reduce((a, [t, h, w]) => a + t * h * w, 0) ?? 0), 0) : 0;
  const tower = internals.vision;
  if (patches > 0 && !(tower instanceof VisionTower)) throw new Error('backward: training the vision tower needs the engine\'s own vision tower');
  const plan = backwardBuffers(cfg, req.sequences.map((s) => s.ids.length), Ts, loraR, internals.gpu.limits.maxStorageBufferBindingSize,
    patches > 0 ? { config: tower!.config, patches, full: towerGrads !== null } : undefined);
  const scratch = new Scratch(internals, pool, plan);
  const vision = patches > 0 ? new VisionBackward(internals, ops, tower as VisionTower, visionLora, towerGrads, patches, loraR, (role, bytes) => scratch.take(role, bytes)) : null;
  const batch = packPrompts(internals, req.sequences, (role, bytes) => scratch.take(`packed ${role}`, bytes));
  const scored = scoredRows(req, batch.seqStarts);
  const acts = internals.createLayerActs(batch.T, 'backward', (role, bytes) => scratch.take(`layer ${role}`, bytes));
  const pass = new BackwardPass(internals, ops, trainable, batch, acts, scratch, adapters, vision, req.stopped);
  try {
    await pass.run(scored, req.temperature, req.sequences);
  } finally {
    // The next call may reuse every buffer: this one's work must be done first (a stop included).
    await internals.gpu.device.queue.onSubmittedWorkDone();
  }
}

class BackwardPass {
  private readonly T: number;
  private readonly D: number;
  private readonly qDim: number; // H·d
  private readonly kvDim: number; // K·d
  private readonly F: number;
  private readonly full: boolean;
  // Per-call scratch, shapes next to names.
  private readonly dx: GPUBuffer; //      (T, D) dL/d(residual stream) at the current layer boundary
  private readonly dNorm: GPUBuffer; //   (T, D) gradient w.r.t. a norm's output (a or b)
  private readonly dHidden: GPUBuffer; // (T, F)
  private readonly dGate: GPUBuffer; //   (T, F)
  private readonly dUp: GPUBuffer; //     (T, F)
  private readonly dAttn: GPUBuffer; //   (T, H·d)
  private readonly dq: GPUBuffer; //      (T, H·d)
  private readonly dqRaw: GPUBuffer; //   (T, H·d)
  private readonly dk: GPUBuffer; //      (T, K·d)
  private readonly dkRaw: GPUBuffer; //   (T, K·d)
  private readonly dv: GPUBuffer; //      (T, K·d)
  private readonly stats: GPUBuffer; //   (T, H, 2) attention logsumexp and dO·o
  private readonly rstd: GPUBuffer; //    (max(T·H, T)) norm backward scratch
  private readonly dwScratch: GPUBuffer; // bound where a norm weight is frozen (never read)
  private readonly bounds: GPUBuffer; //  (T, 2) u32 [first, last+1) of each token's sequence
  private readonly loraU: GPUBuffer | null; //  (T, r) A·x
  private readonly loraDu: GPUBuffer | null; // (T, r) dL/d(A·x)
  /** Qwen3.5's input/post/final and q/k norms scale by (1 + w). */
  private readonly unitNorms: boolean;
  private readonly gated: GatedAttentionGrads | null;
  private readonly delta: DeltaNetGrads | null;

  constructor(
    private readonly internals: EngineInternals,
    private readonly ops: TrainOps,
    private readonly trainable: TrainableSet,
    private readonly batch: PackedBatch,
    private readonly acts: LayerActs,
    private readonly scratch: Scratch,
    private readonly adapters: boolean,
    /** LoRA on the vision tower or its full fine-tuning: its training forward and backward; null = the tower's output is a constant. */
    private readonly vision: VisionBackward | null,
    /** The request's stop check, asked at every layer boundary (BackwardRequest.stopped). */
    private readonly stopped: (() => boolean) | undefined,
  ) {
    const cfg = internals.config;
    const T = batch.T;
    this.T = T;
    this.D = cfg.hiddenSize;
    this.qDim = cfg.numHeads * cfg.headDim;
    this.kvDim = cfg.numKvHeads * cfg.headDim;
    this.F = cfg.intermediateSize;
    this.full = trainable.mode.kind === 'full';
    this.dx = scratch.f32('dx', T * this.D);
    this.dNorm = scratch.f32('dnorm', T * this.D);
    this.dHidden = scratch.f32('dhidden', T * this.F);
    this.dGate = scratch.f32('dgate', T * this.F);
    this.dUp = scratch.f32('dup', T * this.F);
    this.dAttn = scratch.f32('dattn', T * this.qDim);
    this.dq = scratch.f32('dq', T * this.qDim);
    this.dqRaw = scratch.f32('dq raw', T * this.qDim);
    this.dk = scratch.f32('dk', T * this.kvDim);
    this.dkRaw = scratch.f32('dk raw', T * this.kvDim);
    this.dv = scratch.f32('dv', T * this.kvDim);
    this.stats = scratch.f32('attention stats', T * cfg.numHeads * 2);
    const la = cfg.layerTypes.includes('linear_attention') ? cfg.linearAttention! : null;
    this.rstd = scratch.f32('rstd', T * Math.max(cfg.numHeads, cfg.numKvHeads, la?.numValueHeads ?? 1));
    const C = la ? linearAttnConvDim(cfg) : 0;
    this.dwScratch = scratch.f32('frozen dw', Math.max(this.D, cfg.headDim, ...(la ? [C * la.convKernelDim, la.valueHeadDim, la.numValueHeads] : [])));
    this.unitNorms = cfg.architecture === 'qwen3_5';
    this.gated = cfg.attnOutputGate ? { dAttnGated: scratch.f32('dattn gated', T * this.qDim), dqGate: scratch.f32('dq gate', T * 2 * this.qDim) } : null;
    if (la) {
      const { numValueHeads: hv, keyHeadDim: dk, valueHeadDim: dv } = la;
      const work = deltaBackwardWork(batch.seqLengths, hv, dk, dv, DELTA_CHUNK);
      this.delta = {
        dNormed: scratch.f32('la dnormed', T * hv * dv),
        dn: scratch.f32('la dn', T * hv * dv),
        dz: scratch.f32('la dz', T * hv * dv),
        dCore: scratch.f32('la dcore', T * hv * dv),
        dqk: scratch.f32('la dqk', T * 2 * hv * dk),
        dConv: scratch.f32('la dconv', T * C),
        dPre: scratch.f32('la dpre', T * C),
        dQkv: scratch.f32('la dqkv', T * C),
        dgb: scratch.f32('la dgb', T * 2 * hv),
        da: scratch.f32('la da', T * hv),
        db: scratch.f32('la db', T * hv),
        work: scratch.f32('la delta work', work.floats),
        scratchOffset: work.scratchOffset,
        seg: work.seg,
        dwScratchB: scratch.f32('frozen dw b', hv),
        threads: deltaBackwardThreads(dk, dv, internals.gpu.limits.maxComputeInvocationsPerWorkgroup),
      };
    } else {
      this.delta = null;
    }
    const bounds = new Uint32Array(T * 2);
    batch.seqStarts.forEach((start, i) => {
      const end = start + batch.seqLengths[i]!;
      for (let t = start; t < end; t++) {
        bounds[2 * t] = start;
        bounds[2 * t + 1] = end;
      }
    });
    this.bounds = scratch.upload('sequence bounds', bounds);
    const r = Math.max(0, ...[...trainable.lora.values()].map((p) => p.adapter.r));
    this.loraU = r > 0 ? scratch.f32('lora u', T * r) : null;
    this.loraDu = r > 0 ? scratch.f32('lora du', T * r) : null;
  }

  async run(scored: ScoredRows, temperature: number, sequences: BackwardRequest['sequences']): Promise<void> {
    const L = this.internals.config.numLayers;
    const rowBytes = this.T * this.D * 4;
    // x_l for every layer: the only activations kept across the whole pass.
    const checkpoints = Array.from({ length: L }, (_, l) => this.scratch.f32(`x[${l}]`, this.T * this.D)); // each (T, D)

    const rec = this.internals.recorder('train forward + LM head backward', { stopped: this.stopped });
    this.internals.encodeEmbedding(rec, this.batch, this.acts.x);
    // A frozen vision tower's output enters as constants at the image tokens; with LoRA on it or its
    // weights trained, its training forward keeps what its backward needs.
    const images = encodeImages(this.internals, rec, sequences, this.adapters, this.vision?.encode);
    if (images) this.internals.encodeImageSplice(rec, images, this.acts.x);
    for (let l = 0; l < L; l++) {
      rec.copy(this.acts.x, 0, checkpoints[l]!, 0, rowBytes);
      this.internals.encodeLayerForward(rec, l, this.acts, this.batch, { adapters: this.adapters });
      rec.copy(this.acts.xOut, 0, this.acts.x, 0, rowBytes);
      rec.boundary();
    }
    // acts.x now holds x_L, the final norm's input.
    this.encodeHeadBackward(rec, scored, temperature);
    await rec.submit();

    for (let l = L - 1; l >= 0; l--) {
      const lrec = this.internals.recorder(`train layer ${l} backward`, { stopped: this.stopped });
      lrec.copy(checkpoints[l]!, 0, this.acts.x, 0, rowBytes);
      this.internals.encodeLayerForward(lrec, l, this.acts, this.batch, { adapters: this.adapters });
      this.encodeLayerBackward(lrec, l);
      if (l === 0) {
        if (images && this.vision) this.vision.gatherEmbedGrads(lrec, this.dx, images);
        this.encodeEmbeddingBackward(lrec, images);
      }
      await lrec.submit();
    }
    await this.vision?.run(this.stopped);
  }

  /** Final norm + tied/untied LM head + log-softmax backward, leaving dL/dx_L in this.dx. */
  private encodeHeadBackward(rec: Recorder, scored: ScoredRows, temperature: number): void {
    const { internals, ops, scratch, D } = this;
    const cfg = internals.config;
    const Ts = scored.rows.length;
    const rowIndex = scratch.upload('scored rows', scored.rows);
    const targets = scratch.upload('targets', scored.targets);
    const gradLogp = scratch.upload('dL/dlogp', scored.grads);
    const gradEntropy = scratch.upload('dL/dentropy', scored.entropyGrads);
    const lseInit = new Float32Array(Ts * 3);
    for (let i = 0; i < Ts; i++) lseInit[3 * i] = NEG_BIG;
    const lseState = scratch.upload('logsumexp state', lseInit); // (Ts, 3) max, Σexp, Σexp·z
    const xs = scratch.f32('x_L scored rows', Ts * D); //    (Ts, D)
    const hs = scratch.f32('h scored rows', Ts * D); //      (Ts, D)
    const dhs = scratch.f32('dh scored rows', Ts * D); //    (Ts, D)
    const dxs = scratch.f32('dx_L scored rows', Ts * D); //  (Ts, D)
    const rstdF = scratch.f32('final rstd', Ts);
    const normW = param(internals, 'model.norm.weight');

    ops.gatherRows(rec, this.acts.x, rowIndex, xs, Ts, D);
    ops.rmsnormForward(rec, xs, normW.chunks[0]!.buffer, hs, rstdF, Ts, D, cfg.rmsNormEps, this.unitNorms);

    const head = param(internals, cfg.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight');
    const headGrads = this.full ? this.trainable.gradChunks(head.name) : null;
    const maxVc = logitsChunkRows(Ts, cfg.vocabSize, internals.gpu.limits.maxStorageBufferBindingSize);
    const pieces: { chunk: number; v0: number; vc: number }[] = [];
    head.chunks.forEach((c, ci) => {
      for (let v0 = c.rowStart; v0 < c.rowStart + c.rows; v0 += maxVc) pieces.push({ chunk: ci, v0, vc: Math.min(maxVc, c.rowStart + c.rows - v0) });
    });
    const logits = scratch.f32('logits chunk', Ts * maxVc); // (Ts, Vc)
    const encodeLogits = (p: { chunk: number; v0: number; vc: number }) => {
      const c = head.chunks[p.chunk]!;
      ops.gemm(rec, {
        M: Ts, N: p.vc, K: D,
        a: hs, lda: D,
        b: c.buffer, bOffset: (p.v0 - c.rowStart) * D, ldb: D, bTransposed: true, bHalf: head.dtype === 'f16',
        c: logits, ldc: p.vc, accumulate: false,
      });
    };
    for (const p of pieces) {
      encodeLogits(p);
      ops.lseUpdate(rec, logits, lseState, targets, gradLogp, gradEntropy, Ts, p.v0, p.vc, temperature);
    }
    rec.clear(dhs);
    for (const p of pieces) {
      const c = head.chunks[p.chunk]!;
      encodeLogits(p);
      ops.dlogits(rec, logits, lseState, targets, gradLogp, gradEntropy, Ts, p.v0, p.vc, temperature);
      // dh += dlogits · E_chunk   (Ts, Vc)·(Vc, D)
      ops.gemm(rec, {
        M: Ts, N: D, K: p.vc,
        a: logits, lda: p.vc,
        b: c.buffer, bOffset: (p.v0 - c.rowStart) * D, ldb: D, bHalf: head.dtype === 'f16',
        c: dhs, ldc: D, accumulate: true,
      });
      // dE_chunk += dlogitsᵀ · h   (Vc, Ts)·(Ts, D)
      if (headGrads) {
        ops.gemm(rec, {
          M: p.vc, N: D, K: Ts,
          a: logits, lda: p.vc, aTransposed: true,
          b: hs, ldb: D,
          c: headGrads[p.chunk]!, cOffset: (p.v0 - c.rowStart) * D, ldc: D, accumulate: true,
        });
      }
    }
    ops.rmsnormBackward(rec, {
      x: xs, dy: dhs, w: normW.chunks[0]!.buffer, dx: dxs, rstd: this.rstd, scratchDw: this.dwScratch,
      dw: this.full ? this.trainable.gradChunks(normW.name)![0]! : null,
      rows: Ts, n: D, eps: cfg.rmsNormEps, accumulate: false, unitOffset: this.unitNorms,
    });
    rec.clear(this.dx);
    ops.gatherRowsBackward(rec, dxs, rowIndex, this.dx, Ts, D);
  }

  /**
   * y = W·x (+ scale·B·(A·x)) over T rows: dX += dY·W (+ LoRA share), and the trainable gradients
   * (dW += dYᵀ·x in full mode; dA, dB for an adapted linear).
   */
  private linearBackward(rec: Recorder, layer: number, target: LoraTarget, x: GPUBuffer, dy: GPUBuffer, dxOut: GPUBuffer): void {
    const name = this.internals.linearName(layer, target);
    linearBackward(this.ops, rec, {
      w: param(this.internals, name), x, dy, dx: dxOut, accumulate: true, rows: this.T,
      dw: this.full ? this.trainable.gradChunks(name)! : null,
      lora: this.adapters ? this.trainable.lora.get(name) : undefined, u: this.loraU, du: this.loraDu,
    });
  }

  private normGrad(name: string): GPUBuffer | null {
    return this.full ? this.trainable.gradChunks(name)![0]! : null;
  }

  /** this.dx = dL/dx_{l+1} on entry, dL/dx_l on exit. acts holds layer l's recomputed forward. */
  private encodeLayerBackward(rec: Recorder, l: number): void {
    const { internals, ops, acts, T, D, F } = this;
    const cfg = internals.config;
    const pre = `model.layers.${l}`;

    // MLP: x_out = x_mid + down(silu(gate(b)) ⊙ up(b)), b = rmsnorm(x_mid)
    rec.clear(this.dHidden);
    this.linearBackward(rec, l, 'down_proj', acts.hidden, this.dx, this.dHidden);
    ops.swigluBackward(rec, acts.gate, acts.up, this.dHidden, this.dGate, this.dUp, T * F);
    rec.clear(this.dNorm);
    this.linearBackward(rec, l, 'gate_proj', acts.b, this.dGate, this.dNorm);
    this.linearBackward(rec, l, 'up_proj', acts.b, this.dUp, this.dNorm);
    this.normBackward(rec, `${pre}.post_attention_layernorm.weight`, acts.xMid, this.dNorm, this.dx, T, D, true);

    // Token mixer: x_mid = x + mixer(a), a = rmsnorm(x); leaves dL/da in this.dNorm.
    rec.clear(this.dNorm);
    if (cfg.layerTypes[l] === 'linear_attention') this.encodeDeltaNetBackward(rec, l);
    else this.encodeAttentionBackward(rec, l);
    this.normBackward(rec, `${pre}.input_layernorm.weight`, acts.x, this.dNorm, this.dx, T, D, true);
  }

  /** rmsnorm backward of one of the model's (1 + w) / w norms over rows of n: dx (+)= …, dw += … when trained. */
  private normBackward(rec: Recorder, weightName: string, x: GPUBuffer, dy: GPUBuffer, dx: GPUBuffer, rows: number, n: number, accumulate: boolean, unitOffset = this.unitNorms): void {
    const w = param(this.internals, weightName);
    this.ops.rmsnormBackward(rec, {
      x, dy, w: w.chunks[0]!.buffer, dx, rstd: this.rstd, scratchDw: this.dwScratch,
      dw: this.normGrad(w.name), rows, n, eps: this.internals.config.rmsNormEps, accumulate, unitOffset,
    });
  }

  /**
   * Softmax attention: x_mid = x + o(attn(rope(qnorm(q(a))), rope(knorm(k(a))), v(a))); Qwen3.5's
   * gated form multiplies attn by σ(gate), the gate being each head's second half of q_proj's output.
   */
  private encodeAttentionBackward(rec: Recorder, l: number): void {
    const { internals, ops, acts, T } = this;
    const cfg = internals.config;
    const { numHeads: H, numKvHeads: K, headDim: d } = cfg;
    const pre = `model.layers.${l}`;
    const gated = this.gated;
    rec.clear(this.dAttn);
    if (gated) {
      rec.clear(gated.dAttnGated);
      this.linearBackward(rec, l, 'o_proj', acts.attnGated!, this.dx, gated.dAttnGated);
      // dattn, and the gate halves of d(q_proj output); the query halves follow below.
      ops.sigmoidGateBackward(rec, { x: acts.attn, gate: acts.qGate!, dy: gated.dAttnGated, dx: this.dAttn, dgate: gated.dqGate, rows: T * H, n: d, gateOffset: d, gateStride: 2 * d });
    } else {
      this.linearBackward(rec, l, 'o_proj', acts.attn, this.dx, this.dAttn);
    }
    ops.attentionBackward(rec, {
      q: acts.q, k: acts.k, v: acts.v, o: acts.attn, dout: this.dAttn, bounds: this.bounds, stats: this.stats,
      dq: this.dq, dk: this.dk, dv: this.dv, tokens: T, heads: H, kvHeads: K, headDim: d,
    });
    ops.ropeBackward(rec, this.dq, this.batch.rope, T, H, d, cfg.rotaryDim);
    ops.ropeBackward(rec, this.dk, this.batch.rope, T, K, d, cfg.rotaryDim);
    this.normBackward(rec, `${pre}.self_attn.q_norm.weight`, acts.qRaw, this.dq, this.dqRaw, T * H, d, false);
    this.normBackward(rec, `${pre}.self_attn.k_norm.weight`, acts.kRaw, this.dk, this.dkRaw, T * K, d, false);
    if (gated) {
      ops.rowsCopy(rec, this.dqRaw, gated.dqGate, { rows: T * H, n: d, srcOffset: 0, srcStride: d, dstOffset: 0, dstStride: 2 * d });
      this.linearBackward(rec, l, 'q_proj', acts.a, gated.dqGate, this.dNorm);
    } else {
      this.linearBackward(rec, l, 'q_proj', acts.a, this.dqRaw, this.dNorm);
    }
    this.linearBackward(rec, l, 'k_proj', acts.a, this.dkRaw, this.dNorm);
    this.linearBackward(rec, l, 'v_proj', acts.a, this.dv, this.dNorm);
  }

  /**
   * Qwen3.5's Gated DeltaNet (forward.ts encodeDeltaNet, read bottom-up): out_proj → gated norm (and
   * its z gate) → delta rule → l2norm of q/k → gates (β, g) → causal conv + SiLU → the in_proj linears.
   */
  private encodeDeltaNetBackward(rec: Recorder, l: number): void {
    const { internals, ops, acts, T } = this;
    const la = internals.config.linearAttention!;
    const { numKeyHeads: hk, numValueHeads: hv, keyHeadDim: dk, valueHeadDim: dv, convKernelDim: kc } = la;
    const C = linearAttnConvDim(internals.config);
    const g = this.delta!;
    const p = `model.layers.${l}.linear_attn`;
    const paramBuf = (name: string) => param(internals, `${p}.${name}`).chunks[0]!.buffer;

    rec.clear(g.dNormed);
    this.linearBackward(rec, l, 'out_proj', acts.laNormed!, this.dx, g.dNormed);
    ops.rmsnormGatedBackward(rec, { x: acts.laCore!, z: acts.laZ!, w: paramBuf('norm.weight'), rstd: acts.laRstd!, dy: g.dNormed, dn: g.dn, dz: g.dz, rows: T * hv, n: dv });
    // The gated norm's weight scales by w itself (Qwen3_5RMSNormGated), not by (1 + w).
    this.normBackward(rec, `${p}.norm.weight`, acts.laCore!, g.dn, g.dCore, T * hv, dv, false, false);
    // dq/dk per value head into g.dqk; dv straight into the v columns of the conv output's gradient.
    ops.gatedDeltaBackward(rec, {
      qk: acts.laQk!, v: acts.laConv!, gb: acts.laGb!, dout: g.dCore, seqTable: this.batch.seqTable!, work: g.work, dqk: g.dqk, dv: g.dConv, dgb: g.dgb,
      seqs: this.batch.seqStarts.length, tokens: T, hk, hv, dk, dvDim: dv, chunk: DELTA_CHUNK, threads: g.threads, scratchOffset: g.scratchOffset, seg: g.seg,
      vOffset: 2 * hk * dk, vStride: C,
    });
    // q and k heads: one l2norm backward over 2·Hk heads, summing each key head's group of value heads.
    ops.l2normBackward(rec, { x: acts.laConv!, inv: acts.laInv!, dy: g.dqk, dx: g.dConv, tokens: T, heads: 2 * hk, n: dk, offset: 0, stride: C, group: hv / hk });
    ops.deltaGatesBackward(rec, {
      a: acts.laA!, aLog: paramBuf('A_log'), dtBias: paramBuf('dt_bias'), gb: acts.laGb!, dgb: g.dgb, da: g.da, db: g.db,
      dALog: this.normGrad(`${p}.A_log`) ?? this.dwScratch, dDtBias: this.normGrad(`${p}.dt_bias`) ?? g.dwScratchB, tokens: T, hv,
    });
    ops.conv1dSiluBackward(rec, {
      x: acts.laQkv!, w: paramBuf('conv1d.weight'), bounds: this.bounds, dy: g.dConv, dpre: g.dPre, dx: g.dQkv,
      dw: this.normGrad(`${p}.conv1d.weight`) ?? this.dwScratch, tokens: T, channels: C, kernel: kc,
    });
    this.linearBackward(rec, l, 'in_proj_qkv', acts.a, g.dQkv, this.dNorm);
    this.linearBackward(rec, l, 'in_proj_z', acts.a, g.dz, this.dNorm);
    this.linearBackward(rec, l, 'in_proj_b', acts.a, g.db, this.dNorm);
    this.linearBackward(rec, l, 'in_proj_a', acts.a, g.da, this.dNorm);
  }

  /** Full fine-tuning: dE[ids[t]] += dL/dx_0[t] (on top of the LM head's share when tied), the images' spans excepted. */
  private encodeEmbeddingBackward(rec: Recorder, images: ImageSplice | undefined): void {
    if (!this.full) return;
    // The images' spans took the tower's output, not embedding rows: no embedding gradient there. A
    // sampled <|image_pad|> outside them is text and gets its gradient like any token.
    if (images) {
      const zeros = this.internals.scratchBuffer('visual.zeroRows', images.count * this.D * 4); // never written: stays zero
      this.internals.encodeImageSplice(rec, { ...images, embeds: zeros }, this.dx);
    }
    const embed = param(this.internals, 'model.embed_tokens.weight');
    const grads = this.trainable.gradChunks(embed.name)!;
    embed.chunks.forEach((c, i) => this.ops.embeddingBackward(rec, this.batch.tokens, this.dx, grads[i]!, this.T, this.D, c.rowStart, c.rows));
  }
}
