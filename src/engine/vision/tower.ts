// Qwen3.5's vision tower on WebGPU (transformers' Qwen3_5VisionModel), forward (its backward, for
// LoRA on the tower's linears, is train/vision-backward.ts, built from these same pieces): patch
// embedding (Conv3d with stride = kernel, i.e. a matmul over flattened C·T·P·P patches) plus the
// learned position table resampled to the grid; `depth` pre-norm blocks of bidirectional 2-D
// rotary attention within each frame and a GELU(tanh) MLP, LayerNorms with bias; then the patch
// merger (LayerNorm, each 2×2 block's patches concatenated, MLP with exact GELU) into the language
// model's hidden size. Output rows are in the order transformers' masked_scatter consumes them.

import { MatmulMode, type EngineInternals, type ParamEntry, type VisionEncoder } from '../internals.ts';
import { groups1d, f32, type Recorder } from '../recorder.ts';
import { patchLayout, type GridThw, type PatchLayout } from './inputs.ts';
import { patchValues, type VisionTowerConfig } from './config.ts';

/** transformers hard-codes eps 1e-6 in the tower's and the merger's LayerNorms. */
export const LAYERNORM_EPS = 1e-6;

/** bias_act.wgsl's (and gelu_backward.wgsl's) ACT. */
export const enum Act {
  None = 0,
  GeluTanh = 1,
  GeluErf = 2,
}

/** The tower's inputs on the GPU for one pass (upload), read by every block and by the backward. */
export interface TowerInputs {
  S: number; //          patches
  pixels: GPUBuffer; //  (S, C·T·P·P)
  posIndex: GPUBuffer; // (S, 4) u32
  posWeight: GPUBuffer; // (S, 4)
  rope: GPUBuffer; //    (S, d/2, 2) cos, sin
  meta: GPUBuffer; //    (S, 4) u32 attention metadata: [frame start, frame length − 1, 0, frame]
  layout: PatchLayout;
}

/** One block's intermediates over S patches (D hidden, F intermediate, H heads). */
export interface TowerBlockActs {
  x: GPUBuffer; //      (S, D) block input
  n1: GPUBuffer; //     (S, D) LN1(x)
  qkv: GPUBuffer; //    (S, 3D) qkv(n1)
  q: GPUBuffer; //      (S, D) after the 2-D rotary
  k: GPUBuffer; //      (S, D) after the 2-D rotary
  v: GPUBuffer; //      (S, D)
  attn: GPUBuffer; //   (S, D) attention output, proj's input
  lse: GPUBuffer; //    (S, H)
  xMid: GPUBuffer; //   (S, D) x + proj(attn)
  n2: GPUBuffer; //     (S, D) LN2(xMid)
  pre: GPUBuffer; //    (S, F) fc1(n2), before the activation
  hidden: GPUBuffer; // (S, F) act(pre), fc2's input
  xOut: GPUBuffer; //   (S, D) xMid + fc2(hidden)
}

export class VisionTower implements VisionEncoder {
  constructor(
    private readonly fwd: EngineInternals,
    readonly config: VisionTowerConfig,
    /** Tensors by stored name (`model.visual.…`); matrices 2-D (the patch embedding flattened). */
    readonly params: Map<string, ParamEntry>,
  ) {}

  private param(name: string): ParamEntry {
    const p = this.params.get(`model.visual.${name}`);
    if (!p) throw new Error(`vision tower: parameter model.visual.${name} is not loaded`);
    return p;
  }

  /**
   * y = x·Wᵀ (+ residual) (+ scale·B·(A·x) when the linear has a LoRA adapter and `adapters`), then
   * bias and activation. `act` None with `pre` given: the training forward keeps fc1's pre-activation.
   */
  private linear(rec: Recorder, name: string, x: GPUBuffer, y: GPUBuffer, rows: number, act: Act, adapters: boolean, residual?: GPUBuffer): void {
    const W = this.param(`${name}.weight`);
    const [out, inp] = W.shape as [number, number];
    for (const c of W.chunks) {
      this.fwd.encodeMatmul(rec, {
        x, w: c.buffer, wDtype: W.dtype, y, M: rows, N: c.rows, K: inp, ldy: out, yOffset: c.rowStart,
        mode: residual ? MatmulMode.Residual : MatmulMode.Overwrite, residual, label: `visual ${name}`,
      });
    }
    const lora = adapters ? this.fwd.lora.get(`model.visual.${name}.weight`) : undefined;
    if (lora) {
      const u = this.fwd.scratchBuffer('visual.lora.u', rows * lora.r * 4); // (rows, r) = x·Aᵀ
      this.fwd.encodeMatmul(rec, { x, w: lora.a, wDtype: 'f32', y: u, M: rows, N: lora.r, K: inp, label: `visual ${name} lora A` });
      this.fwd.encodeMatmul(rec, { x: u, w: lora.b, wDtype: 'f32', y, M: rows, N: out, K: lora.r, scale: lora.scale, mode: MatmulMode.Accumulate, label: `visual ${name} lora B` });
    }
    const b = this.param(`${name}.bias`).chunks[0]!.buffer;
    rec.dispatch(this.fwd.getPipeline('bias_act.wgsl', { ACT: act }), [b, y], [rows, out, 0, 0], groups1d(rows * out), `visual ${name} bias`);
  }

  /** hidden = act(pre) for the training forward (bias_act over a zero bias: the very f32 ops of the in-place forward). */
  private activate(rec: Recorder, pre: GPUBuffer, hidden: GPUBuffer, rows: number, n: number, act: Act, label: string): void {
    rec.copy(pre, 0, hidden, 0, rows * n * 4);
    // never written: stays zero; one size for the blocks' F and the merger's m²D (memory-plan.ts counts it)
    const c = this.config;
    const zeros = this.fwd.scratchBuffer('visual.zeroBias', Math.max(c.intermediateSize, c.hiddenSize * c.spatialMergeSize ** 2) * 4);
    rec.dispatch(this.fwd.getPipeline('bias_act.wgsl', { ACT: act }), [zeros, hidden], [rows, n, 0, 0], groups1d(rows * n), `visual ${label} act`);
  }

  private layerNorm(rec: Recorder, name: string, x: GPUBuffer, y: GPUBuffer, rows: number): void {
    const n = this.config.hiddenSize;
    rec.dispatch(this.fwd.getPipeline('layernorm.wgsl'),
      [x, this.param(`${name}.weight`).chunks[0]!.buffer, this.param(`${name}.bias`).chunks[0]!.buffer, y],
      [rows, n, 0, 0, f32(LAYERNORM_EPS)], groups1d(rows), `visual ${name}`);
  }

  /** The blocks' MLP activation (vision_config.hidden_act). */
  get blockAct(): Act {
    return this.config.hiddenAct === 'gelu' ? Act.GeluErf : Act.GeluTanh;
  }

  /** Uploads pixel_values and the host-computed layout of `grids` (checked against each other). */
  upload(pixelValues: Float32Array, grids: readonly GridThw[]): TowerInputs {
    const c = this.config;
    const layout = patchLayout(grids, c);
    const S = layout.patches;
    const P = patchValues(c);
    if (pixelValues.length !== S * P) {
      throw new Error(`vision: pixel_values holds ${pixelValues.length} values; the grids ${JSON.stringify(grids)} need ${S} patches × ${P} = ${S * P}`);
    }
    const fwd = this.fwd;
    const q = fwd.gpu.device.queue;
    const pixels = fwd.scratchBuffer('visual.pixels', S * P * 4);
    q.writeBuffer(pixels, 0, pixelValues.buffer, pixelValues.byteOffset, pixelValues.byteLength);
    const posIndex = fwd.scratchBuffer('visual.posIndex', layout.posIndex.byteLength);
    const posWeight = fwd.scratchBuffer('visual.posWeight', layout.posWeight.byteLength);
    const rope = fwd.scratchBuffer('visual.rope', layout.rope.byteLength);
    const meta = fwd.scratchBuffer('visual.meta', layout.meta.byteLength);
    q.writeBuffer(posIndex, 0, layout.posIndex);
    q.writeBuffer(posWeight, 0, layout.posWeight);
    q.writeBuffer(rope, 0, layout.rope);
    q.writeBuffer(meta, 0, layout.meta);
    return { S, pixels, posIndex, posWeight, rope, meta, layout };
  }

  /** x (S, D) = patch_embed(pixels) + the resampled position table. */
  encodeEmbed(rec: Recorder, inp: TowerInputs, x: GPUBuffer): void {
    this.linear(rec, 'patch_embed.proj', inp.pixels, x, inp.S, Act.None, false);
    rec.dispatch(this.fwd.getPipeline('pos_embed.wgsl'), [this.param('pos_embed.weight').chunks[0]!.buffer, inp.posIndex, inp.posWeight, x], [inp.S, this.config.hiddenSize, 0, 0], groups1d(inp.S * this.config.hiddenSize), 'visual pos_embed');
  }

  /**
   * Block b from acts.x: xMid = x + proj(attn(LN1(x))), xOut = xMid + fc2(act(fc1(LN2(xMid)))). The
   * scoring forward aliases buffers (n1 = n2, xOut = x, pre = hidden: fc1 activates in place).
   */
  encodeBlock(rec: Recorder, b: number, a: TowerBlockActs, inp: TowerInputs, adapters: boolean): void {
    const c = this.config;
    const { S } = inp;
    const D = c.hiddenSize;
    const H = c.numHeads;
    const d = c.headDim;
    const fwd = this.fwd;
    const p = `blocks.${b}`;
    this.layerNorm(rec, `${p}.norm1`, a.x, a.n1, S);
    this.linear(rec, `${p}.attn.qkv`, a.n1, a.qkv, S, Act.None, adapters); // (S, 3, H, d)
    [a.q, a.k, a.v].forEach((dst, i) => {
      rec.dispatch(fwd.getPipeline('rows_copy.wgsl'), [a.qkv, dst], [S, D, i * D, 3 * D, 0, D], groups1d(S * D), `visual ${p} qkv split`);
    });
    // rotate-half over the whole head: first half of the angles from the patch row, second from its column
    const ropePipe = fwd.getPipeline('rope.wgsl');
    rec.dispatch(ropePipe, [inp.rope, a.q], [S, H, d / 2, d], groups1d(S * H * d / 2), `visual ${p} rope q`);
    rec.dispatch(ropePipe, [inp.rope, a.k], [S, H, d / 2, d], groups1d(S * H * d / 2), `visual ${p} rope k`);
    rec.dispatch(fwd.getPipeline('attention.wgsl', { HEAD_DIM: d, ENABLE_F16: '', KV_ELEM: 'f32' }), [a.q, a.k, a.v, inp.meta, a.attn, a.lse], [S, H, H, 0, f32(1 / Math.sqrt(d))], groups1d(S * H), `visual ${p} attention`);
    this.linear(rec, `${p}.attn.proj`, a.attn, a.xMid, S, Act.None, adapters, a.x); // xMid = x + proj(attn)
    this.layerNorm(rec, `${p}.norm2`, a.xMid, a.n2, S);
    if (a.pre === a.hidden) {
      this.linear(rec, `${p}.mlp.linear_fc1`, a.n2, a.hidden, S, this.blockAct, adapters);
    } else {
      this.linear(rec, `${p}.mlp.linear_fc1`, a.n2, a.pre, S, Act.None, adapters);
      this.activate(rec, a.pre, a.hidden, S, c.intermediateSize, this.blockAct, `${p}.mlp`);
    }
    this.linear(rec, `${p}.mlp.linear_fc2`, a.hidden, a.xOut, S, Act.None, adapters, a.xMid);
  }

  /**
   * Merger: LayerNorm per patch; the m² patches of a block are consecutive rows, so (S, D) read as
   * (S/m², m²·D) is their concatenation. fc1 + exact GELU into `hidden` (its pre-activation kept in
   * `pre` when that is another buffer), fc2 into `embeds`.
   */
  encodeMerger(rec: Recorder, x: GPUBuffer, m: { normed: GPUBuffer; pre: GPUBuffer; hidden: GPUBuffer; embeds: GPUBuffer }, S: number, adapters: boolean): number {
    const c = this.config;
    const groupRows = S / c.spatialMergeSize ** 2;
    this.layerNorm(rec, 'merger.norm', x, m.normed, S);
    if (m.pre === m.hidden) {
      this.linear(rec, 'merger.linear_fc1', m.normed, m.hidden, groupRows, Act.GeluErf, adapters);
    } else {
      this.linear(rec, 'merger.linear_fc1', m.normed, m.pre, groupRows, Act.None, adapters);
      this.activate(rec, m.pre, m.hidden, groupRows, c.hiddenSize * c.spatialMergeSize ** 2, Act.GeluErf, 'merger');
    }
    this.linear(rec, 'merger.linear_fc2', m.hidden, m.embeds, groupRows, Act.None, adapters);
    return groupRows;
  }

  /** Merged image embeddings (rows, outHiddenSize) of every grid in order, in a scratch buffer; LoRA adapters of the tower applied unless `adapters` is false. */
  encode(rec: Recorder, pixelValues: Float32Array, grids: readonly GridThw[], adapters = true): { embeds: GPUBuffer; rows: number } {
    const c = this.config;
    const inp = this.upload(pixelValues, grids);
    const { S } = inp;
    const D = c.hiddenSize;
    const buf = (role: string, floats: number) => this.fwd.scratchBuffer(`visual.${role}`, floats * 4);
    // Ping-pong residual stream: a block reads x, writes x + attention into xAlt, then the MLP back into x.
    const x = buf('x', S * D);
    const xAlt = buf('xAlt', S * D);
    this.encodeEmbed(rec, inp, x);
    const normed = buf('normed', S * D);
    const hidden = buf('hidden', S * c.intermediateSize);
    const acts: TowerBlockActs = {
      x, n1: normed, qkv: buf('qkv', S * 3 * D), q: buf('q', S * D), k: buf('k', S * D), v: buf('v', S * D),
      attn: buf('attn', S * D), lse: buf('lse', S * c.numHeads), xMid: xAlt, n2: normed, pre: hidden, hidden, xOut: x,
    };
    for (let b = 0; b < c.depth; b++) this.encodeBlock(rec, b, acts, inp, adapters);
    const groupRows = S / c.spatialMergeSize ** 2;
    const mergedHidden = buf('mergedHidden', groupRows * D * c.spatialMergeSize ** 2);
    const embeds = buf('embeds', groupRows * c.outHiddenSize);
    this.encodeMerger(rec, x, { normed, pre: mergedHidden, hidden: mergedHidden, embeds }, S, adapters);
    return { embeds, rows: groupRows };
  }

  destroy(): void {
    for (const p of this.params.values()) for (const c of p.chunks) c.buffer.destroy();
  }
}
