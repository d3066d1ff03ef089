// Qwen3.5's vision tower on WebGPU (transformers' Qwen3_5VisionModel), forward only: patch
// embedding (Conv3d with stride = kernel, i.e. a matmul over flattened C·T·P·P patches) plus the
// learned position table resampled to the grid; `depth` pre-norm blocks of bidirectional 2-D
// rotary attention within each frame and a GELU(tanh) MLP, LayerNorms with bias; then the patch
// merger (LayerNorm, each 2×2 block's patches concatenated, MLP with exact GELU) into the language
// model's hidden size. Output rows are in the order transformers' masked_scatter consumes them.

import { MatmulMode, type EngineInternals, type ParamEntry, type VisionEncoder } from '../internals.ts';
import { groups1d, f32, type Recorder } from '../recorder.ts';
import { patchLayout, type GridThw } from './inputs.ts';
import { patchValues, type VisionTowerConfig } from './config.ts';

/** transformers hard-codes eps 1e-6 in the tower's and the merger's LayerNorms. */
const LAYERNORM_EPS = 1e-6;

const enum Act {
  None = 0,
  GeluTanh = 1,
  GeluErf = 2,
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

  /** y = x·Wᵀ (+ residual) then bias and activation. */
  private linear(rec: Recorder, name: string, x: GPUBuffer, y: GPUBuffer, rows: number, act: Act, residual?: GPUBuffer): void {
    const W = this.param(`${name}.weight`);
    const [out, inp] = W.shape as [number, number];
    for (const c of W.chunks) {
      this.fwd.encodeMatmul(rec, {
        x, w: c.buffer, wDtype: W.dtype, y, M: rows, N: c.rows, K: inp, ldy: out, yOffset: c.rowStart,
        mode: residual ? MatmulMode.Residual : MatmulMode.Overwrite, residual, label: `visual ${name}`,
      });
    }
    const b = this.param(`${name}.bias`).chunks[0]!.buffer;
    rec.dispatch(this.fwd.getPipeline('bias_act.wgsl', { ACT: act }), [b, y], [rows, out, 0, 0], groups1d(rows * out), `visual ${name} bias`);
  }

  private layerNorm(rec: Recorder, name: string, x: GPUBuffer, y: GPUBuffer, rows: number): void {
    const n = this.config.hiddenSize;
    rec.dispatch(this.fwd.getPipeline('layernorm.wgsl'),
      [x, this.param(`${name}.weight`).chunks[0]!.buffer, this.param(`${name}.bias`).chunks[0]!.buffer, y],
      [rows, n, 0, 0, f32(LAYERNORM_EPS)], groups1d(rows), `visual ${name}`);
  }

  /** Merged image embeddings (rows, outHiddenSize) of every grid in order, in a scratch buffer. */
  encode(rec: Recorder, pixelValues: Float32Array, grids: readonly GridThw[]): { embeds: GPUBuffer; rows: number } {
    const c = this.config;
    const layout = patchLayout(grids, c);
    const S = layout.patches;
    const P = patchValues(c);
    if (pixelValues.length !== S * P) {
      throw new Error(`vision: pixel_values holds ${pixelValues.length} values; the grids ${JSON.stringify(grids)} need ${S} patches × ${P} = ${S * P}`);
    }
    const D = c.hiddenSize;
    const H = c.numHeads;
    const d = c.headDim;
    const fwd = this.fwd;
    const buf = (role: string, floats: number) => fwd.scratchBuffer(`visual.${role}`, floats * 4);
    const q = fwd.gpu.device.queue;
    const pixels = buf('pixels', S * P);
    q.writeBuffer(pixels, 0, pixelValues.buffer, pixelValues.byteOffset, pixelValues.byteLength);
    const posIndex = fwd.scratchBuffer('visual.posIndex', layout.posIndex.byteLength);
    const posWeight = fwd.scratchBuffer('visual.posWeight', layout.posWeight.byteLength);
    const rope = fwd.scratchBuffer('visual.rope', layout.rope.byteLength);
    const meta = fwd.scratchBuffer('visual.meta', layout.meta.byteLength);
    q.writeBuffer(posIndex, 0, layout.posIndex);
    q.writeBuffer(posWeight, 0, layout.posWeight);
    q.writeBuffer(rope, 0, layout.rope);
    q.writeBuffer(meta, 0, layout.meta);

    let x = buf('x', S * D);
    let xAlt = buf('xAlt', S * D);
    this.linear(rec, 'patch_embed.proj', pixels, x, S, Act.None);
    rec.dispatch(fwd.getPipeline('pos_embed.wgsl'), [this.param('pos_embed.weight').chunks[0]!.buffer, posIndex, posWeight, x], [S, D, 0, 0], groups1d(S * D), 'visual pos_embed');

    const normed = buf('normed', S * D);
    const qkv = buf('qkv', S * 3 * D);
    const [qb, kb, vb] = [buf('q', S * D), buf('k', S * D), buf('v', S * D)];
    const attn = buf('attn', S * D);
    const lse = buf('lse', S * H);
    const hidden = buf('hidden', S * c.intermediateSize);
    const attention = fwd.getPipeline('attention.wgsl', { HEAD_DIM: d });
    const ropePipe = fwd.getPipeline('rope.wgsl');
    const act = c.hiddenAct === 'gelu' ? Act.GeluErf : Act.GeluTanh;
    for (let b = 0; b < c.depth; b++) {
      const p = `blocks.${b}`;
      this.layerNorm(rec, `${p}.norm1`, x, normed, S);
      this.linear(rec, `${p}.attn.qkv`, normed, qkv, S, Act.None); // (S, 3, H, d)
      [qb, kb, vb].forEach((dst, i) => {
        rec.dispatch(fwd.getPipeline('rows_copy.wgsl'), [qkv, dst], [S, D, i * D, 3 * D, 0, D], groups1d(S * D), `visual ${p} qkv split`);
      });
      // rotate-half over the whole head: first half of the angles from the patch row, second from its column
      rec.dispatch(ropePipe, [rope, qb], [S, H, d / 2, d], groups1d(S * H * d / 2), `visual ${p} rope q`);
      rec.dispatch(ropePipe, [rope, kb], [S, H, d / 2, d], groups1d(S * H * d / 2), `visual ${p} rope k`);
      rec.dispatch(attention, [qb, kb, vb, meta, attn, lse], [S, H, H, 0, f32(1 / Math.sqrt(d))], groups1d(S * H), `visual ${p} attention`);
      this.linear(rec, `${p}.attn.proj`, attn, xAlt, S, Act.None, x); // xAlt = x + proj(attn)
      [x, xAlt] = [xAlt, x];
      this.layerNorm(rec, `${p}.norm2`, x, normed, S);
      this.linear(rec, `${p}.mlp.linear_fc1`, normed, hidden, S, act);
      this.linear(rec, `${p}.mlp.linear_fc2`, hidden, xAlt, S, Act.None, x);
      [x, xAlt] = [xAlt, x];
    }
    // Merger: LayerNorm per patch; the m² patches of a block are consecutive rows, so (S, D) read as
    // (S/m², m²·D) is their concatenation.
    const groupRows = S / c.spatialMergeSize ** 2;
    const M = D * c.spatialMergeSize ** 2;
    this.layerNorm(rec, 'merger.norm', x, normed, S);
    const mergedHidden = buf('mergedHidden', groupRows * M);
    const embeds = buf('embeds', groupRows * c.outHiddenSize);
    this.linear(rec, 'merger.linear_fc1', normed, mergedHidden, groupRows, Act.GeluErf);
    this.linear(rec, 'merger.linear_fc2', mergedHidden, embeds, groupRows, Act.None);
    return { embeds, rows: groupRows };
  }

  destroy(): void {
    for (const p of this.params.values()) for (const c of p.chunks) c.buffer.destroy();
  }
}
