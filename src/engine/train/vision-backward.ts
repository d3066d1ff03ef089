// Backward through Qwen3.5's vision tower: for LoRA on its linears (the tower's weights frozen), and
// for full fine-tuning of every tower tensor (TRL's full fine-tuning trains the tower too).
// The language model's backward leaves dL/dx_0 at every packed row; the image tokens' rows of it
// are dL/d(merged embeddings) (the forward's rows_scatter, read back as a gather). From there, the
// tower in reverse, with per-block checkpointing like the language model's (backward.ts):
//   forward: patch embedding + positions, then each block with its input x_b kept, the merger's
//            intermediates kept;
//   merger:  fc2 → exact GELU → fc1 → LayerNorm (rows (S/m², m²D) = (S, D) read as merged blocks);
//   block b (from the last down to the lowest one with an adapter, to block 0 in full mode): recompute its forward from x_b,
//            then fc2 → tanh GELU → fc1 → LN2 (+ residual) → proj → bidirectional attention per frame
//            → 2-D rotary (inverse rotation) → qkv → LN1 (+ residual).
//   embedding (full fine-tuning): x_0 = patch_embed(pixels) + Σ_k w_k·pos_embed[idx_k], so
//            dW_patch += dx_0ᵀ·pixels (the Conv3d with stride = kernel is a matmul over flattened
//            patches), db_patch += Σ dx_0, and each table row gets its taps' weighted dx_0 rows.
// Full fine-tuning adds every weight's gradient on the way: dW, db of each linear, dγ, dβ of each
// LayerNorm. Under LoRA the patch embedding and the position table are frozen and below every
// adapter: nothing flows into them.

import type { ImageSplice, ParamEntry } from '../internals.ts';
import type { Recorder } from '../recorder.ts';
import type { EngineInternals } from '../internals.ts';
import { positionTapsByRow, type GridThw } from '../vision/inputs.ts';
import { Act, LAYERNORM_EPS, type TowerBlockActs, type TowerInputs, type VisionTower } from '../vision/tower.ts';
import type { TrainOps } from './ops.ts';
import type { LoraParams } from './trainable.ts';
import { linearBackward } from './linear-backward.ts';
import { VISION_BLOCK_LINEARS } from '../../model/qwen3_5-vision-tensors.ts';
import { visionBackwardRoles } from '../memory-plan.ts';

/** A planned backward buffer of `bytes` for `role` (backward.ts's Scratch: checked against memory-plan.ts). */
type Take = (role: string, bytes: number) => GPUBuffer;

/** Full fine-tuning of the tower: a `model.visual.…` tensor's gradient chunks (trainable.ts's gradChunks). */
export type TowerGrads = (name: string) => GPUBuffer[] | null;

export class VisionBackward {
  private inputs: TowerInputs | null = null;
  private readonly checkpoints: GPUBuffer[] = [];
  private readonly acts: TowerBlockActs;
  private readonly merger: { normed: GPUBuffer; pre: GPUBuffer; hidden: GPUBuffer; embeds: GPUBuffer };
  private readonly u: GPUBuffer;
  private readonly du: GPUBuffer;
  private readonly buf: Map<string, GPUBuffer>;

  constructor(
    private readonly internals: EngineInternals,
    private readonly ops: TrainOps,
    private readonly tower: VisionTower,
    private readonly lora: ReadonlyMap<string, LoraParams>,
    /** Full fine-tuning of the tower: every tower tensor's gradient; null under LoRA. */
    private readonly grads: TowerGrads | null,
    /** Patches over every image of the call. */
    private readonly S: number,
    loraR: number,
    take: Take,
  ) {
    this.buf = new Map(visionBackwardRoles(tower.config, S, loraR, grads !== null).map(([role, bytes]) => [role, take(role, bytes)]));
    const b = (role: string) => this.buf.get(`vision ${role}`)!;
    for (let i = 0; i <= tower.config.depth; i++) this.checkpoints.push(b(`x[${i}]`));
    this.acts = {
      x: this.checkpoints[0]!, n1: b('n1'), qkv: b('qkv'), q: b('q'), k: b('k'), v: b('v'), attn: b('attn'), lse: b('lse'),
      xMid: b('xMid'), n2: b('n2'), pre: b('pre'), hidden: b('hidden'), xOut: b('xOut'),
    };
    this.merger = { normed: b('merger normed'), pre: b('merger pre'), hidden: b('merger hidden'), embeds: b('embeds') };
    this.u = b('lora u');
    this.du = b('lora du');
  }

  /** The lowest block with an adapter (depth when only the merger has some; 0 in full mode): blocks below it need no backward. */
  private get lowestBlock(): number {
    const c = this.tower.config;
    if (this.grads) return 0;
    for (let b = 0; b < c.depth; b++) if (VISION_BLOCK_LINEARS.some((t) => this.lora.has(`model.visual.blocks.${b}.${t}.weight`))) return b;
    return c.depth;
  }

  /** The training forward (an ImageEncoder for encodeImages): the tower with LoRA, each block's input kept. */
  readonly encode = (rec: Recorder, pixelValues: Float32Array, grids: readonly GridThw[]): { embeds: GPUBuffer; rows: number } => {
    const c = this.tower.config;
    const inp = this.tower.upload(pixelValues, grids);
    if (inp.S !== this.S) throw new Error(`vision backward: planned for ${this.S} patches, the images have ${inp.S}`);
    this.inputs = inp;
    this.tower.encodeEmbed(rec, inp, this.checkpoints[0]!);
    for (let b = 0; b < c.depth; b++) {
      // Each block writes its output straight into the next checkpoint.
      this.tower.encodeBlock(rec, b, { ...this.acts, x: this.checkpoints[b]!, xOut: this.checkpoints[b + 1]! }, inp, true);
    }
    const rows = this.tower.encodeMerger(rec, this.checkpoints[c.depth]!, this.merger, inp.S, true);
    return { embeds: this.merger.embeds, rows };
  };

  private param(name: string): ParamEntry {
    const p = this.tower.params.get(`model.visual.${name}`);
    if (!p) throw new Error(`vision backward: parameter model.visual.${name} is not loaded`);
    return p;
  }

  /** Full fine-tuning: the gradient chunks of model.visual.<name>; null under LoRA. */
  private grad(name: string): GPUBuffer[] | null {
    if (!this.grads) return null;
    const g = this.grads(`model.visual.${name}`);
    if (!g) throw new Error(`vision backward: model.visual.${name} is not trainable`);
    return g;
  }

  /** The (single-chunk) gradient of a 1-D tower tensor (bias, LayerNorm γ/β). */
  private vectorGrad(name: string): GPUBuffer | null {
    return this.grad(name)?.[0] ?? null;
  }

  private linear(rec: Recorder, name: string, x: GPUBuffer, dy: GPUBuffer, dx: GPUBuffer | null, rows: number): void {
    linearBackward(this.ops, rec, {
      w: this.param(`${name}.weight`), x, dy, dx, accumulate: false, rows, dw: this.grad(`${name}.weight`), db: this.vectorGrad(`${name}.bias`),
      lora: this.lora.get(`model.visual.${name}.weight`), u: this.u, du: this.du,
    });
  }

  /** LayerNorm `name` over the S patch rows: dx (+)= its input gradient; dγ, dβ in full mode. */
  private layerNorm(rec: Recorder, name: string, x: GPUBuffer, dy: GPUBuffer, dx: GPUBuffer, accumulate: boolean): void {
    const n = this.tower.config.hiddenSize;
    this.ops.layernormBackward(rec, {
      x, w: this.param(`${name}.weight`).chunks[0]!.buffer, dy, dx, stats: this.buf.get('vision ln stats')!,
      dw: this.vectorGrad(`${name}.weight`), scratchDw: this.buf.get('vision frozen dw')!, rows: this.S, n, eps: LAYERNORM_EPS, accumulate,
    });
    const db = this.vectorGrad(`${name}.bias`);
    if (db) this.ops.biasBackward(rec, dy, db, this.S, n);
  }

  /**
   * Full fine-tuning, below block 0: dx = dL/dx_0 (S, D) into the patch embedding's weight and bias
   * (its input: the pixel rows) and the position table through the forward's bilinear taps.
   */
  private embedBackward(rec: Recorder, inp: TowerInputs, dx: GPUBuffer): void {
    const c = this.tower.config;
    const { S } = this;
    this.linear(rec, 'patch_embed.proj', inp.pixels, dx, null, S);
    const table = this.grad('pos_embed.weight')!;
    if (table.length !== 1) throw new Error('vision backward: the position table\'s gradient spans several buffers; pos_embed_backward.wgsl reads one');
    const taps = positionTapsByRow(inp.layout, c.numPositionEmbeddings);
    const upload = (role: string, data: Uint32Array<ArrayBuffer> | Float32Array<ArrayBuffer>) => {
      const b = this.buf.get(role)!;
      this.internals.gpu.device.queue.writeBuffer(b, 0, data);
      return b;
    };
    this.ops.posEmbedBackward(rec, {
      dx, offsets: upload('vision pos offsets', taps.offsets), patch: upload('vision pos patches', taps.patch), weight: upload('vision pos weights', taps.weight),
      dtable: table[0]!, rows: c.numPositionEmbeddings, n: c.hiddenSize, taps: taps.patch.length,
    });
  }

  /**
   * Records the gather of dL/d(merged embeddings) from dL/dx_0 (T, D) at the image rows; call in the
   * recorder of the language model's layer 0 backward, before anything rewrites those rows.
   */
  gatherEmbedGrads(rec: Recorder, dx0: GPUBuffer, images: ImageSplice): void {
    this.ops.gatherRows(rec, dx0, images.rows, this.buf.get('vision dembeds')!, images.count, this.tower.config.outHiddenSize);
  }

  /**
   * The tower's backward from the gathered embedding gradients: LoRA dA, dB of every adapted tower
   * linear, or (full) every tower tensor's gradient. `stopped`: the backward's stop check, asked before
   * each block's submit.
   */
  async run(stopped?: () => boolean): Promise<void> {
    const inp = this.inputs;
    if (!inp) throw new Error('vision backward: run() before the training forward encoded the images');
    const c = this.tower.config;
    const { S } = this;
    const D = c.hiddenSize;
    const F = c.intermediateSize;
    const H = c.numHeads;
    const d = c.headDim;
    const G = S / c.spatialMergeSize ** 2;
    const M = D * c.spatialMergeSize ** 2;
    const b = (role: string) => this.buf.get(`vision ${role}`)!;
    const [dx, dNorm, dHidden, dAttn, dq, dk, dv, dQkv] = ['dx', 'dnorm', 'dhidden', 'dattn', 'dq', 'dk', 'dv', 'dqkv'].map(b) as [GPUBuffer, GPUBuffer, GPUBuffer, GPUBuffer, GPUBuffer, GPUBuffer, GPUBuffer, GPUBuffer];
    const lowest = this.lowestBlock;

    const rec = this.internals.recorder('train vision merger backward', { stopped });
    // merger: embeds = fc2(gelu_erf(fc1(LN(x_depth) as (G, M))))
    const dMerged = b('dmerger hidden');
    this.linear(rec, 'merger.linear_fc2', this.merger.hidden, b('dembeds'), dMerged, G);
    this.ops.geluBackward(rec, this.merger.pre, dMerged, G * M, Act.GeluErf);
    if (lowest < c.depth || this.grads) {
      this.linear(rec, 'merger.linear_fc1', this.merger.normed, dMerged, dNorm, G); // (G, M) = (S, D)
      this.layerNorm(rec, 'merger.norm', this.checkpoints[c.depth]!, dNorm, dx, false);
    } else {
      this.linear(rec, 'merger.linear_fc1', this.merger.normed, dMerged, null, G);
    }
    await rec.submit();
    if (lowest === c.depth && !this.grads) return;

    // Attention backward's [first, last + 1) per patch: its frame (attention.wgsl's meta [start, length − 1, …]).
    const meta = inp.layout.meta;
    const bounds = new Uint32Array(S * 2);
    for (let s = 0; s < S; s++) {
      bounds[2 * s] = meta[4 * s]!;
      bounds[2 * s + 1] = meta[4 * s]! + meta[4 * s + 1]! + 1;
    }
    const boundsBuf = b('bounds');
    this.internals.gpu.device.queue.writeBuffer(boundsBuf, 0, bounds);
    const a = this.acts;
    for (let blk = c.depth - 1; blk >= lowest; blk--) {
      const p = `blocks.${blk}`;
      const brec = this.internals.recorder(`train vision block ${blk} backward`, { stopped });
      const acts = { ...a, x: this.checkpoints[blk]! };
      this.tower.encodeBlock(brec, blk, acts, inp, true);
      // dx = dL/dxOut on entry. MLP: xOut = xMid + fc2(act(fc1(LN2(xMid)))).
      this.linear(brec, `${p}.mlp.linear_fc2`, acts.hidden, dx, dHidden, S);
      this.ops.geluBackward(brec, acts.pre, dHidden, S * F, this.tower.blockAct);
      this.linear(brec, `${p}.mlp.linear_fc1`, acts.n2, dHidden, dNorm, S);
      this.layerNorm(brec, `${p}.norm2`, acts.xMid, dNorm, dx, true); // dx = dL/dxMid
      // Attention: xMid = x + proj(attn(rope(q), rope(k), v)), (q, k, v) = qkv(LN1(x)).
      this.linear(brec, `${p}.attn.proj`, acts.attn, dx, dAttn, S);
      this.ops.attentionBackward(brec, {
        q: acts.q, k: acts.k, v: acts.v, o: acts.attn, dout: dAttn, bounds: boundsBuf, stats: b('attention stats'),
        dq, dk, dv, tokens: S, heads: H, kvHeads: H, headDim: d, causal: false,
      });
      this.ops.ropeBackward(brec, dq, inp.rope, S, H, d, d);
      this.ops.ropeBackward(brec, dk, inp.rope, S, H, d, d);
      [dq, dk, dv].forEach((src, i) => this.ops.rowsCopy(brec, src, dQkv, { rows: S, n: D, srcOffset: 0, srcStride: D, dstOffset: i * D, dstStride: 3 * D }));
      if (blk > lowest || this.grads) {
        this.linear(brec, `${p}.attn.qkv`, acts.n1, dQkv, dNorm, S);
        this.layerNorm(brec, `${p}.norm1`, acts.x, dNorm, dx, true); // dx = dL/dx_blk
      } else {
        this.linear(brec, `${p}.attn.qkv`, acts.n1, dQkv, null, S);
      }
      await brec.submit();
    }
    if (this.grads) {
      const erec = this.internals.recorder('train vision embedding backward', { stopped });
      this.embedBackward(erec, inp, dx); // dx = dL/dx_0
      await erec.submit();
    }
  }
}
