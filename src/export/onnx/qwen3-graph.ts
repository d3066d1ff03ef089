// The Qwen3 decoder (specs/qwen3.md §1) as an ONNX graph with a KV cache, in the interface
// transformers.js feeds a decoder-only model: inputs input_ids, attention_mask, position_ids and
// past_key_values.{i}.key/value ([batch, kv_heads, past, head_dim]; an empty past of length 0 on the
// first call), outputs logits and present.{i}.key/value. Only standard opset-17 ops, so every
// onnxruntime backend (CPU, wasm, WebGPU) runs it without contrib kernels.

import { encodeFromFloat32 } from '../../model/safetensors.ts';
import type { ModelConfig } from '../../model/types.ts';
import { GraphBuilder } from './graph-builder.ts';
import { DataType, type GraphMsg } from './onnx-proto.ts';

export type OnnxDtype = 'fp32' | 'fp16';

/** Where the graph gets a weight: f32 values in Hugging Face layout ([out, in] for linears), adapters merged. */
export type WeightSource = (name: string) => Float32Array;

/** float32's lowest finite value: the additive mask of a forbidden key, as transformers uses. */
const MASK_MIN = -3.4028234663852886e38;

/**
 * Builds the graph. `dtype` fp16 stores the weights as float16 (half the download) and casts them
 * to float32 inside the graph, so the arithmetic, the KV cache and the logits stay float32.
 */
export function buildQwen3Graph(cfg: ModelConfig, weight: WeightSource, dtype: OnnxDtype): GraphMsg {
  const { hiddenSize: D, numHeads: H, numKvHeads: K, headDim: d, vocabSize: V, numLayers: L } = cfg;
  if (H % K !== 0) throw new Error(`num_attention_heads (${H}) must be a multiple of num_key_value_heads (${K})`);
  if (d % 2 !== 0) throw new Error(`head_dim (${d}) must be even for rotary embeddings`);
  const nRep = H / K;
  const g = new GraphBuilder();
  const F = DataType.FLOAT;

  /** A stored weight: float32 as is, or float16 plus a Cast back to float32. */
  const stored = (name: string, dims: number[], values: Float32Array): string => {
    if (dtype === 'fp32') return g.initializer(name, F, dims, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
    const half = g.initializer(`${name}_fp16`, DataType.FLOAT16, dims, encodeFromFloat32('F16', values));
    return g.op('Cast', [half], { to: F }, name);
  };
  /** A linear's weight as MatMul wants it: [in, out] (the checkpoint's [out, in] transposed). */
  const linear = (name: string, out: number, inp: number): string => stored(name, [inp, out], transpose(weight(name), out, inp));
  const vector = (name: string, n: number): string => stored(name, [n], weight(name));

  const ids = g.input('input_ids', DataType.INT64, ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', DataType.INT64, ['batch_size', 'total_sequence_length']);
  const pos = g.input('position_ids', DataType.INT64, ['batch_size', 'sequence_length']);
  const past = Array.from({ length: L }, (_, l) => ({
    key: g.input(`past_key_values.${l}.key`, F, ['batch_size', K, 'past_sequence_length', d]),
    value: g.input(`past_key_values.${l}.value`, F, ['batch_size', K, 'past_sequence_length', d]),
  }));

  const rms = (x: string, w: string): string => {
    const ms = g.op('ReduceMean', [g.op('Mul', [x, x])], { axes: [-1], keepdims: 1 });
    const rstd = g.op('Reciprocal', [g.op('Sqrt', [g.op('Add', [ms, g.float([cfg.rmsNormEps], [])])])]);
    return g.op('Mul', [g.op('Mul', [x, rstd]), w]);
  };

  // Rotary tables from position_ids: angle = pos · inv_freq, in float32 as transformers computes them.
  const invFreq = new Float32Array(d / 2).map((_, j) => Math.fround(1 / Math.pow(cfg.ropeTheta, (2 * j) / d)));
  const angle = g.op('Mul', [g.op('Unsqueeze', [g.op('Cast', [pos], { to: F }), g.int64([-1])]), g.float(invFreq, [d / 2], 'rope_inv_freq')]);
  const emb = g.op('Concat', [angle, angle], { axis: -1 }); // [B, S, d]
  const cos = g.op('Unsqueeze', [g.op('Cos', [emb]), g.int64([1])]); // [B, 1, S, d]
  const sin = g.op('Unsqueeze', [g.op('Sin', [emb]), g.int64([1])]);
  const half = g.int64([d / 2]);
  const rope = (x: string): string => {
    const x1 = g.op('Slice', [x, g.int64([0]), half, g.int64([-1])]);
    const x2 = g.op('Slice', [x, half, g.int64([d]), g.int64([-1])]);
    const rotated = g.op('Concat', [g.op('Neg', [x2]), x1], { axis: -1 });
    return g.op('Add', [g.op('Mul', [x, cos]), g.op('Mul', [rotated, sin])]);
  };

  // Additive mask [B, 1, 1, S, T]: query i (absolute position past + i) sees key j ≤ past + i whose
  // attention_mask is 1. The two unit axes broadcast over (kv head, repeat) of the grouped scores.
  const total = g.op('Gather', [g.op('Shape', [mask]), g.int64([1], true)], { axis: 0 });
  const seq = g.op('Gather', [g.op('Shape', [ids]), g.int64([1], true)], { axis: 0 });
  const pastLen = g.op('Sub', [total, seq]);
  const one = g.int64([1], true);
  const qPos = g.op('Range', [pastLen, total, one]);
  const kPos = g.op('Range', [g.int64([0], true), total, one]);
  const causal = g.op('LessOrEqual', [g.op('Unsqueeze', [kPos, g.int64([0])]), g.op('Unsqueeze', [qPos, g.int64([1])])]); // [S, T]
  const padOk = g.op('Unsqueeze', [g.op('Cast', [mask], { to: DataType.BOOL }), g.int64([1, 2, 3])]); // [B, 1, 1, 1, T]
  const allowed = g.op('And', [causal, padOk]); // [B, 1, 1, S, T]
  const bias = g.op('Where', [allowed, g.float([0], []), g.float([MASK_MIN], [])]);
  const scale = g.float([1 / Math.sqrt(d)], []);

  const embed = stored('model.embed_tokens.weight', [V, D], weight('model.embed_tokens.weight')); // [V, D] float32
  let x = g.op('Gather', [embed, ids], { axis: 0 }); // [B, S, D]
  for (let l = 0; l < L; l++) {
    const p = `model.layers.${l}`;
    const a = rms(x, vector(`${p}.input_layernorm.weight`, D));
    const heads = (t: string, n: number) => g.op('Reshape', [t, g.int64([0, 0, n, d])]); // [B, S, n, d]
    const toBhsd = (t: string) => g.op('Transpose', [t], { perm: [0, 2, 1, 3] });
    const q = g.op('MatMul', [a, linear(`${p}.self_attn.q_proj.weight`, H * d, D)]);
    const k = g.op('MatMul', [a, linear(`${p}.self_attn.k_proj.weight`, K * d, D)]);
    const v = g.op('MatMul', [a, linear(`${p}.self_attn.v_proj.weight`, K * d, D)]);
    const qh = rope(toBhsd(rms(heads(q, H), vector(`${p}.self_attn.q_norm.weight`, d)))); // [B, H, S, d]
    const kh = rope(toBhsd(rms(heads(k, K), vector(`${p}.self_attn.k_norm.weight`, d)))); // [B, K, S, d]
    const vh = toBhsd(heads(v, K));
    const kAll = g.op('Concat', [past[l]!.key, kh], { axis: 2 }, `present.${l}.key`); // [B, K, T, d]
    const vAll = g.op('Concat', [past[l]!.value, vh], { axis: 2 }, `present.${l}.value`);
    // GQA without copying K/V: query head h = kv·nRep + r, so [B, H, S, d] → [B, K, nRep, S, d]
    // against K/V as [B, K, 1, T, d]; MatMul broadcasts the unit axis.
    const qg = g.op('Reshape', [qh, g.int64([0, K, nRep, -1, d])]);
    const kg = g.op('Unsqueeze', [kAll, g.int64([2])]);
    const vg = g.op('Unsqueeze', [vAll, g.int64([2])]);
    const scores = g.op('Add', [g.op('Mul', [g.op('MatMul', [qg, g.op('Transpose', [kg], { perm: [0, 1, 2, 4, 3] })]), scale]), bias]);
    const attn = g.op('MatMul', [g.op('Softmax', [scores], { axis: -1 }), vg]); // [B, K, nRep, S, d]
    const merged = g.op('Reshape', [g.op('Transpose', [g.op('Reshape', [attn, g.int64([0, H, -1, d])])], { perm: [0, 2, 1, 3] }), g.int64([0, 0, H * d])]);
    x = g.op('Add', [x, g.op('MatMul', [merged, linear(`${p}.self_attn.o_proj.weight`, D, H * d)])]);

    const b = rms(x, vector(`${p}.post_attention_layernorm.weight`, D));
    const gate = g.op('MatMul', [b, linear(`${p}.mlp.gate_proj.weight`, cfg.intermediateSize, D)]);
    const up = g.op('MatMul', [b, linear(`${p}.mlp.up_proj.weight`, cfg.intermediateSize, D)]);
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    x = g.op('Add', [x, g.op('MatMul', [act, linear(`${p}.mlp.down_proj.weight`, D, cfg.intermediateSize)])]);
    g.output(`present.${l}.key`, F, ['batch_size', K, 'total_sequence_length', d]);
    g.output(`present.${l}.value`, F, ['batch_size', K, 'total_sequence_length', d]);
  }
  const h = rms(x, vector('model.norm.weight', D));
  // A tied head reuses the embedding (transposed in the graph, so the file holds it once).
  const head = cfg.tieWordEmbeddings ? g.op('Transpose', [embed], { perm: [1, 0] }) : linear('lm_head.weight', V, D);
  g.op('MatMul', [h, head], {}, 'logits');
  g.output('logits', F, ['batch_size', 'sequence_length', V]);
  return g.build('qwen3');
}

/** [rows, cols] row-major → [cols, rows]. */
function transpose(m: Float32Array, rows: number, cols: number): Float32Array {
  if (m.length !== rows * cols) throw new Error(`weight has ${m.length} values, expected ${rows}×${cols}`);
  const out = new Float32Array(m.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = m[r * cols + c]!;
  return out;
}
