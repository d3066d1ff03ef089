// Qwen3 and Qwen3.5 forward and backward on the CPU in float64 (specs/qwen3.md §1, docs/qwen3_5.md):
// the slow, obvious yardstick the WGSL engine is checked against. Qwen3.5's Gated DeltaNet layers live
// in qwen3_5.ts; everything else (norms, MLP, head, the gated attention) is here. One sequence at a time, no KV cache: every call recomputes
// the whole sequence from position 0.

import type { ModelConfig } from '../../model/types.ts';
import {
  attention_backward,
  attention_forward,
  embedding_backward,
  embedding_forward,
  entropy_backward,
  entropy_forward,
  linear_backward,
  linear_forward,
  logsoftmax_backward,
  logsoftmax_forward,
  residual_backward,
  residual_forward,
  rmsnorm_backward,
  rmsnorm_forward,
  rope_backward,
  rope_forward,
  swiglu_backward,
  swiglu_forward,
  type LoraFactors,
} from './layers.ts';
import { linearTensorName, type ModelLinear } from '../../model/qwen3-tensors.ts';
import { sigmoid_gate_backward, sigmoid_gate_forward } from './qwen3_5-layers.ts';
import { deltanet_block_backward, deltanet_block_forward, type BackwardContext, type DeltaNetActs, type ForwardContext } from './qwen3_5.ts';
import { checkRefLora, checkRefWeights, refWeightShapes, type RefLora, type RefWeights } from './weights.ts';

/** One sequence to score: logprob[t − scoreFrom] = log p(ids[t] | ids[<t]) for t in [scoreFrom, ids.length). */
export interface RefSequence {
  ids: number[];
  scoreFrom: number;
  /** Images placed in it (a Qwen3.5 vision-language model); the vision tower itself is qwen3_5_vision.ts. */
  vision?: RefImages;
}

/**
 * A sequence's images, placed by position as transformers' Qwen3_5Model does it from inputs_embeds:
 * the tower's merged rows replace the embeddings of each span (the token ids there are ignored; any
 * other token, an image token id included, keeps its embedding row), and every full-attention layer
 * rotates by the 3-D position ids of get_rope_index. The tower is frozen: its rows get no gradient.
 */
export interface RefImages {
  /** (Σ lengths, D) the merged embeddings, image after image. */
  embeds: Float64Array;
  /** Each image's tokens: `length` rows of ids from `offset` take the next rows of embeds. */
  spans: { offset: number; length: number }[];
  /** 3 rows (temporal, height, width) of ids.length M-RoPE position ids. */
  positions: [number[], number[], number[]];
}

export interface RefScore {
  logprobs: number[];
  /** Entropy of the (temperature-scaled) distribution each scored token was drawn from. */
  entropy: number[];
}

export interface RefGrads {
  /** dL/dW for every base parameter (empty when base grads were skipped). */
  grads: RefWeights;
  /** dL/dA, dL/dB keyed like RefLora.A/B; present when a LoRA adapter was given. */
  loraGrads?: { A: Map<string, Float64Array>; B: Map<string, Float64Array> };
}

export interface RefBackwardOptions {
  /** Compute gradients of the base weights too (default true). With LoRA they are usually frozen. */
  baseGrads?: boolean;
  /** dL/dentropy per scored token (like dLdLogp): adds Σ_t dLdEntropy[t]·entropy[t] to L. */
  dLdEntropy?: number[];
}

/** Raw logits (no temperature) at every position: T arrays of length V. */
export function refLogits(cfg: ModelConfig, w: RefWeights, ids: number[], lora?: RefLora): Float64Array[] {
  checkInputs(cfg, w, ids, lora);
  const acts = model_forward(cfg, w, ids, lora, undefined);
  const V = cfg.vocabSize;
  return Array.from({ length: ids.length }, (_, t) => acts.logits.slice(t * V, (t + 1) * V));
}

/** Per-token log-probs and entropies of ids[scoreFrom..] at the given temperature. */
export function refScore(
  cfg: ModelConfig,
  w: RefWeights,
  seq: RefSequence,
  temperature: number,
  lora?: RefLora,
): RefScore {
  checkScoreInputs(cfg, w, seq, temperature, lora);
  const acts = model_forward(cfg, w, seq.ids, lora, seq.vision);
  const scored = scoredRows(cfg, acts.logits, seq, temperature);
  const entropy = new Float64Array(scored.N);
  entropy_forward(entropy, scored.logp, scored.N, cfg.vocabSize);
  return { logprobs: scored.logprobs, entropy: Array.from(entropy) };
}

/**
 * Gradients of L = Σ_t dLdLogp[t]·logprob[t] (+ Σ_t dLdEntropy[t]·entropy[t] when
 * opts.dLdEntropy is given; the quantities of refScore) with respect to every parameter. With tied embeddings, the embedding gradient includes the LM-head share.
 */
export function refBackward(
  cfg: ModelConfig,
  w: RefWeights,
  seq: RefSequence,
  temperature: number,
  dLdLogp: number[],
  lora?: RefLora,
  opts: RefBackwardOptions = {},
): RefGrads {
  checkScoreInputs(cfg, w, seq, temperature, lora);
  const nScored = seq.ids.length - seq.scoreFrom;
  if (dLdLogp.length !== nScored) {
    throw new Error(`refBackward: dLdLogp has ${dLdLogp.length} values, expected ${nScored} (ids.length − scoreFrom)`);
  }
  if (!dLdLogp.every(Number.isFinite)) throw new Error('refBackward: dLdLogp contains a non-finite value');
  const dLdEntropy = opts.dLdEntropy;
  if (dLdEntropy !== undefined) {
    if (dLdEntropy.length !== nScored) {
      throw new Error(`refBackward: dLdEntropy has ${dLdEntropy.length} values, expected ${nScored} (ids.length − scoreFrom)`);
    }
    if (!dLdEntropy.every(Number.isFinite)) throw new Error('refBackward: dLdEntropy contains a non-finite value');
  }
  const wantBase = opts.baseGrads ?? true;
  if (!wantBase && !lora) throw new Error('refBackward: baseGrads=false needs a LoRA adapter (nothing would be trained)');

  const grads: RefWeights = new Map();
  if (wantBase) for (const [name, shape] of refWeightShapes(cfg)) grads.set(name, new Float64Array(shape.reduce((a, b) => a * b, 1)));
  const loraGrads = lora ? { A: mapZerosLike(lora.A), B: mapZerosLike(lora.B) } : undefined;

  const acts = model_forward(cfg, w, seq.ids, lora, seq.vision);
  const scored = scoredRows(cfg, acts.logits, seq, temperature);
  model_backward(cfg, w, seq, temperature, dLdLogp, dLdEntropy, acts, scored.logp, lora, wantBase ? grads : null, loraGrads);
  return loraGrads ? { grads, loraGrads } : { grads };
}

/** Greedy continuation: the n ids that argmax decoding appends to promptIds (ties → lowest id). */
export function refGreedy(cfg: ModelConfig, w: RefWeights, promptIds: number[], n: number, lora?: RefLora): number[] {
  if (!Number.isInteger(n) || n < 0) throw new Error(`refGreedy: n must be a non-negative integer, got ${n}`);
  const ids = [...promptIds];
  const out: number[] = [];
  for (let step = 0; step < n; step++) {
    const logits = refLogits(cfg, w, ids, lora);
    const last = logits[logits.length - 1];
    let best = 0;
    for (let j = 1; j < last.length; j++) if (last[j] > last[best]) best = j;
    ids.push(best);
    out.push(best);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The model, layer by layer.

/** Softmax attention of a full_attention layer (Qwen3; Qwen3.5 adds the output gate and partial rotary). */
interface AttentionActs {
  kind: 'attention';
  qProj: Float64Array | null; // (T, H·2d) q_proj output when gated: per head d query dims, then d gate dims
  qRaw: Float64Array; // (T, H·d) queries (the q_proj output itself when ungated)
  qGate: Float64Array | null; // (T, H·d) output gate logits
  kRaw: Float64Array; // (T, K·d)
  v: Float64Array; // (T, K·d)
  qNorm: Float64Array; // (T, H·d) after per-head q_norm
  qNormRstd: Float64Array; // (T·H)
  kNorm: Float64Array; // (T, K·d)
  kNormRstd: Float64Array; // (T·K)
  qRope: Float64Array; // (T, H·d)
  kRope: Float64Array; // (T, K·d)
  att: Float64Array; // (H, T, T)
  attOut: Float64Array; // (T, H·d) concat of heads
  oIn: Float64Array; // (T, H·d) o_proj input: attOut, or attOut ⊙ σ(qGate)
}

interface LayerActs {
  xIn: Float64Array; // (T, D) residual stream entering the layer
  ln1: Float64Array; // (T, D)
  ln1Rstd: Float64Array; // (T)
  mixer: AttentionActs | DeltaNetActs;
  xMid: Float64Array; // (T, D) residual after the mixer
  ln2: Float64Array; // (T, D)
  ln2Rstd: Float64Array; // (T)
  gate: Float64Array; // (T, F)
  up: Float64Array; // (T, F)
  act: Float64Array; // (T, F) silu(gate) ⊙ up, down_proj input
}

interface ModelActs {
  layers: LayerActs[];
  xFinal: Float64Array; // (T, D) residual after the last layer
  lnf: Float64Array; // (T, D)
  lnfRstd: Float64Array; // (T)
  logits: Float64Array; // (T, V)
}

/**
 * The weight an RMSNorm multiplies by: w itself (Qwen3), or 1 + w for Qwen3.5's Qwen3_5RMSNorm (all
 * its norms but the DeltaNet's gated one). d(1 + w)/dw = 1, so rmsnorm_backward's dw is right either way.
 */
function normWeights(cfg: ModelConfig, w: RefWeights): (name: string) => Float64Array {
  if (cfg.architecture !== 'qwen3_5') return (name) => w.get(name)!;
  const shifted = new Map<string, Float64Array>();
  return (name) => {
    let s = shifted.get(name);
    if (!s) shifted.set(name, (s = w.get(name)!.map((x) => 1 + x)));
    return s;
  };
}

function forwardContext(cfg: ModelConfig, w: RefWeights, T: number, lora: RefLora | undefined, images: RefImages | undefined): ForwardContext {
  const get = (name: string) => w.get(name)!;
  return {
    cfg,
    T,
    get,
    lin: (out, inp, l, t, I, O) => linear_forward(out, inp, get(linearTensorName(l, t)), T, I, O, loraFactors(lora, l, t)),
    ...(images ? { mrope: { rows: images.positions, section: cfg.vision!.mropeSection } } : {}),
  };
}

/** The token indices each image's embeds row lands on, in embeds order. */
function imageRows(images: RefImages): number[] {
  return images.spans.flatMap(({ offset, length }) => Array.from({ length }, (_, j) => offset + j));
}

function model_forward(cfg: ModelConfig, w: RefWeights, ids: number[], lora: RefLora | undefined, images: RefImages | undefined): ModelActs {
  const T = ids.length;
  const { hiddenSize: D, intermediateSize: F, vocabSize: V } = cfg;
  const eps = cfg.rmsNormEps;
  const ctx = forwardContext(cfg, w, T, lora, images);
  const { get, lin } = ctx;
  const norm = normWeights(cfg, w);

  let x = new Float64Array(T * D); // (T, D)
  embedding_forward(x, ids, get('model.embed_tokens.weight'), D);
  // inputs_embeds.masked_scatter: the image spans take the tower's rows, in order.
  if (images) imageRows(images).forEach((t, r) => x.set(images.embeds.subarray(r * D, (r + 1) * D), t * D));
  const layers: LayerActs[] = [];
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `model.layers.${l}`;
    const xIn = x;
    const ln1 = new Float64Array(T * D);
    const ln1Rstd = new Float64Array(T);
    rmsnorm_forward(ln1, ln1Rstd, xIn, norm(`${p}.input_layernorm.weight`), T, D, eps);
    const mixerOut = new Float64Array(T * D); // (T, D)
    const mixer = cfg.layerTypes[l] === 'linear_attention'
      ? deltanet_block_forward(ctx, l, ln1, mixerOut)
      : attention_block_forward(ctx, l, ln1, mixerOut, norm);
    const a: LayerActs = {
      xIn, ln1, ln1Rstd, mixer,
      xMid: new Float64Array(T * D),
      ln2: new Float64Array(T * D),
      ln2Rstd: new Float64Array(T),
      gate: new Float64Array(T * F),
      up: new Float64Array(T * F),
      act: new Float64Array(T * F),
    };
    residual_forward(a.xMid, a.xIn, mixerOut, T * D);
    rmsnorm_forward(a.ln2, a.ln2Rstd, a.xMid, norm(`${p}.post_attention_layernorm.weight`), T, D, eps);
    lin(a.gate, a.ln2, l, 'gate_proj', D, F);
    lin(a.up, a.ln2, l, 'up_proj', D, F);
    swiglu_forward(a.act, a.gate, a.up, T * F);
    const mlpOut = new Float64Array(T * D); // (T, D)
    lin(mlpOut, a.act, l, 'down_proj', F, D);
    x = new Float64Array(T * D);
    residual_forward(x, a.xMid, mlpOut, T * D);
    layers.push(a);
  }
  const lnf = new Float64Array(T * D);
  const lnfRstd = new Float64Array(T);
  rmsnorm_forward(lnf, lnfRstd, x, norm('model.norm.weight'), T, D, eps);
  const logits = new Float64Array(T * V); // (T, V)
  linear_forward(logits, lnf, get(headName(cfg)), T, D, V);
  return { layers, xFinal: x, lnf, lnfRstd, logits };
}

function attention_block_forward(
  ctx: ForwardContext,
  l: number,
  ln1: Float64Array, // (T, D)
  out: Float64Array, // (T, D)
  norm: (name: string) => Float64Array,
): AttentionActs {
  const { cfg, T, lin } = ctx;
  const { hiddenSize: D, numHeads: H, numKvHeads: K, headDim: d } = cfg;
  const eps = cfg.rmsNormEps;
  const p = `model.layers.${l}`;
  const gated = cfg.attnOutputGate;
  const a: AttentionActs = {
    kind: 'attention',
    qProj: gated ? new Float64Array(T * H * 2 * d) : null,
    qRaw: new Float64Array(T * H * d),
    qGate: gated ? new Float64Array(T * H * d) : null,
    kRaw: new Float64Array(T * K * d),
    v: new Float64Array(T * K * d),
    qNorm: new Float64Array(T * H * d),
    qNormRstd: new Float64Array(T * H),
    kNorm: new Float64Array(T * K * d),
    kNormRstd: new Float64Array(T * K),
    qRope: new Float64Array(T * H * d),
    kRope: new Float64Array(T * K * d),
    att: new Float64Array(H * T * T),
    attOut: new Float64Array(T * H * d),
    oIn: new Float64Array(T * H * d),
  };
  if (a.qProj && a.qGate) {
    lin(a.qProj, ln1, l, 'q_proj', D, H * 2 * d);
    split_query_gate(a.qRaw, a.qGate, a.qProj, T * H, d);
  } else {
    lin(a.qRaw, ln1, l, 'q_proj', D, H * d);
  }
  lin(a.kRaw, ln1, l, 'k_proj', D, K * d);
  lin(a.v, ln1, l, 'v_proj', D, K * d);
  rmsnorm_forward(a.qNorm, a.qNormRstd, a.qRaw, norm(`${p}.self_attn.q_norm.weight`), T * H, d, eps);
  rmsnorm_forward(a.kNorm, a.kNormRstd, a.kRaw, norm(`${p}.self_attn.k_norm.weight`), T * K, d, eps);
  rope_forward(a.qRope, a.qNorm, T, H, d, cfg.ropeTheta, cfg.rotaryDim, ctx.mrope);
  rope_forward(a.kRope, a.kNorm, T, K, d, cfg.ropeTheta, cfg.rotaryDim, ctx.mrope);
  attention_forward(a.attOut, a.att, a.qRope, a.kRope, a.v, T, H, K, d);
  if (a.qGate) sigmoid_gate_forward(a.oIn, a.attOut, a.qGate, T * H * d);
  else a.oIn.set(a.attOut);
  lin(out, a.oIn, l, 'o_proj', H * d, D);
  return a;
}

/** Gated q_proj output (rows of 2d: query then gate) → queries and gates, each (rows, d). */
function split_query_gate(q: Float64Array, gate: Float64Array, qProj: Float64Array, rows: number, d: number): void {
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < d; i++) {
      q[r * d + i] = qProj[r * 2 * d + i];
      gate[r * d + i] = qProj[r * 2 * d + d + i];
    }
  }
}

function model_backward(
  cfg: ModelConfig,
  w: RefWeights,
  seq: RefSequence,
  temperature: number,
  dLdLogp: number[],
  dLdEntropy: number[] | undefined,
  acts: ModelActs,
  logp: Float64Array, // (N, V) log-probs of the N scored rows
  lora: RefLora | undefined,
  grads: RefWeights | null,
  loraGrads: { A: Map<string, Float64Array>; B: Map<string, Float64Array> } | undefined,
): void {
  const T = seq.ids.length;
  const { hiddenSize: D, intermediateSize: F, vocabSize: V } = cfg;
  const N = T - seq.scoreFrom;
  const norm = normWeights(cfg, w);
  const ctx: BackwardContext = {
    ...forwardContext(cfg, w, T, lora, seq.vision),
    grad: (name) => (grads ? grads.get(name)! : null),
    linBack: (dinp, dout, inp, l, t, I, O) => {
      const name = linearTensorName(l, t);
      const factors = loraFactors(lora, l, t);
      linear_backward(dinp, ctx.grad(name), dout, inp, w.get(name)!, T, I, O, factors, loraGrads?.A.get(name), loraGrads?.B.get(name));
    },
  };
  const { get, grad, linBack } = ctx;

  // log-softmax: row n of logp is position scoreFrom − 1 + n, predicting ids[scoreFrom + n].
  const dlogp = new Float64Array(N * V); // (N, V) one-hot rows scaled by dLdLogp (+ the entropy share)
  for (let n = 0; n < N; n++) dlogp[n * V + seq.ids[seq.scoreFrom + n]] = dLdLogp[n];
  if (dLdEntropy) entropy_backward(dlogp, dLdEntropy, logp, N, V);
  const dlogitsScored = new Float64Array(N * V); // (N, V)
  logsoftmax_backward(dlogitsScored, dlogp, logp, N, V, temperature);
  const dlogits = new Float64Array(T * V); // (T, V) zero at unscored positions
  dlogits.set(dlogitsScored, (seq.scoreFrom - 1) * V);

  // LM head (tied: the embedding matrix) and final norm.
  const dlnf = new Float64Array(T * D);
  linear_backward(dlnf, grad(headName(cfg)), dlogits, acts.lnf, get(headName(cfg)), T, D, V);
  let dx = new Float64Array(T * D); // (T, D) gradient of the residual stream
  rmsnorm_backward(dx, grad('model.norm.weight'), dlnf, acts.xFinal, norm('model.norm.weight'), acts.lnfRstd, T, D);

  for (let l = cfg.numLayers - 1; l >= 0; l--) {
    const p = `model.layers.${l}`;
    const a = acts.layers[l];
    // x_out = x_mid + down(act)
    const dxMid = new Float64Array(T * D);
    const dmlpOut = new Float64Array(T * D);
    residual_backward(dxMid, dmlpOut, dx, T * D);
    const dact = new Float64Array(T * F);
    linBack(dact, dmlpOut, a.act, l, 'down_proj', F, D);
    const dgate = new Float64Array(T * F);
    const dup = new Float64Array(T * F);
    swiglu_backward(dgate, dup, dact, a.gate, a.up, T * F);
    const dln2 = new Float64Array(T * D);
    linBack(dln2, dgate, a.ln2, l, 'gate_proj', D, F);
    linBack(dln2, dup, a.ln2, l, 'up_proj', D, F);
    rmsnorm_backward(dxMid, grad(`${p}.post_attention_layernorm.weight`), dln2, a.xMid, norm(`${p}.post_attention_layernorm.weight`), a.ln2Rstd, T, D);

    // x_mid = x_in + mixer(ln1(x_in))
    const dxIn = new Float64Array(T * D);
    const dmixerOut = new Float64Array(T * D);
    residual_backward(dxIn, dmixerOut, dxMid, T * D);
    const dln1 = new Float64Array(T * D);
    if (a.mixer.kind === 'deltanet') deltanet_block_backward(ctx, l, a.ln1, a.mixer, dmixerOut, dln1);
    else attention_block_backward(ctx, l, a.ln1, a.mixer, dmixerOut, dln1, norm);
    rmsnorm_backward(dxIn, grad(`${p}.input_layernorm.weight`), dln1, a.xIn, norm(`${p}.input_layernorm.weight`), a.ln1Rstd, T, D);
    dx = dxIn;
  }
  const dwte = grad('model.embed_tokens.weight');
  // The image spans' inputs were the tower's rows, not embedding rows: no embedding gradient there.
  if (seq.vision) for (const t of imageRows(seq.vision)) dx.fill(0, t * D, (t + 1) * D);
  if (dwte) embedding_backward(dwte, dx, seq.ids, D);
}

function attention_block_backward(
  ctx: BackwardContext,
  l: number,
  ln1: Float64Array, // (T, D)
  a: AttentionActs,
  dout: Float64Array, // (T, D)
  dln1: Float64Array, // (T, D) accumulated
  norm: (name: string) => Float64Array,
): void {
  const { cfg, T, grad, linBack } = ctx;
  const { hiddenSize: D, numHeads: H, numKvHeads: K, headDim: d } = cfg;
  const p = `model.layers.${l}`;
  const doIn = new Float64Array(T * H * d);
  linBack(doIn, dout, a.oIn, l, 'o_proj', H * d, D);
  let dattOut = doIn;
  const dqGate = a.qGate ? new Float64Array(T * H * d) : null;
  if (a.qGate && dqGate) {
    dattOut = new Float64Array(T * H * d);
    sigmoid_gate_backward(dattOut, dqGate, doIn, a.attOut, a.qGate, T * H * d);
  }
  const dqRope = new Float64Array(T * H * d);
  const dkRope = new Float64Array(T * K * d);
  const dv = new Float64Array(T * K * d);
  attention_backward(dqRope, dkRope, dv, dattOut, a.qRope, a.kRope, a.v, a.att, T, H, K, d);
  const dqNorm = new Float64Array(T * H * d);
  const dkNorm = new Float64Array(T * K * d);
  rope_backward(dqNorm, dqRope, T, H, d, cfg.ropeTheta, cfg.rotaryDim, ctx.mrope);
  rope_backward(dkNorm, dkRope, T, K, d, cfg.ropeTheta, cfg.rotaryDim, ctx.mrope);
  const dqRaw = new Float64Array(T * H * d);
  const dkRaw = new Float64Array(T * K * d);
  rmsnorm_backward(dqRaw, grad(`${p}.self_attn.q_norm.weight`), dqNorm, a.qRaw, norm(`${p}.self_attn.q_norm.weight`), a.qNormRstd, T * H, d);
  rmsnorm_backward(dkRaw, grad(`${p}.self_attn.k_norm.weight`), dkNorm, a.kRaw, norm(`${p}.self_attn.k_norm.weight`), a.kNormRstd, T * K, d);
  if (a.qProj && dqGate) {
    // Interleave back per head: [dq | dgate].
    const dqProj = new Float64Array(T * H * 2 * d);
    for (let r = 0; r < T * H; r++) {
      for (let i = 0; i < d; i++) {
        dqProj[r * 2 * d + i] = dqRaw[r * d + i];
        dqProj[r * 2 * d + d + i] = dqGate[r * d + i];
      }
    }
    linBack(dln1, dqProj, ln1, l, 'q_proj', D, H * 2 * d);
  } else {
    linBack(dln1, dqRaw, ln1, l, 'q_proj', D, H * d);
  }
  linBack(dln1, dkRaw, ln1, l, 'k_proj', D, K * d);
  linBack(dln1, dv, ln1, l, 'v_proj', D, K * d);
}

// ---------------------------------------------------------------------------------------------
// Helpers.

const headName = (cfg: ModelConfig): string => (cfg.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight');

function loraFactors(lora: RefLora | undefined, layer: number, target: ModelLinear): LoraFactors | undefined {

  if (!lora || !lora.targets.includes(target)) return undefined;
  const name = linearTensorName(layer, target);
  return { A: lora.A.get(name)!, B: lora.B.get(name)!, r: lora.r, scale: lora.alpha / lora.r };
}

/** Log-softmax of the rows that predict ids[scoreFrom..], and the log-prob of each actual token. */
function scoredRows(
  cfg: ModelConfig,
  logits: Float64Array, // (T, V)
  seq: RefSequence,
  temperature: number,
): { N: number; logp: Float64Array; logprobs: number[] } {
  const V = cfg.vocabSize;
  const N = seq.ids.length - seq.scoreFrom;
  const logp = new Float64Array(N * V); // (N, V)
  logsoftmax_forward(logp, logits.subarray((seq.scoreFrom - 1) * V, (seq.ids.length - 1) * V), N, V, temperature);
  const logprobs = Array.from({ length: N }, (_, n) => logp[n * V + seq.ids[seq.scoreFrom + n]]);
  return { N, logp, logprobs };
}

function mapZerosLike(m: Map<string, Float64Array>): Map<string, Float64Array> {
  return new Map([...m].map(([name, data]) => [name, new Float64Array(data.length)]));
}

function checkInputs(cfg: ModelConfig, w: RefWeights, ids: number[], lora: RefLora | undefined): void {
  checkRefWeights(cfg, w);
  if (lora) checkRefLora(cfg, lora);
  if (ids.length === 0) throw new Error('reference model: ids is empty');
  for (const id of ids) {
    if (!Number.isInteger(id) || id < 0 || id >= cfg.vocabSize) {
      throw new Error(`reference model: token id ${id} is outside the vocabulary [0, ${cfg.vocabSize})`);
    }
  }
}

function checkScoreInputs(cfg: ModelConfig, w: RefWeights, seq: RefSequence, temperature: number, lora: RefLora | undefined): void {
  checkInputs(cfg, w, seq.ids, lora);
  if (seq.vision) checkImages(cfg, seq.ids.length, seq.vision);
  if (!Number.isInteger(seq.scoreFrom) || seq.scoreFrom < 1 || seq.scoreFrom > seq.ids.length) {
    throw new Error(`reference model: scoreFrom must be an integer in [1, ${seq.ids.length}] (token 0 has no context), got ${seq.scoreFrom}`);
  }
  if (!(temperature > 0) || !Number.isFinite(temperature)) {
    throw new Error(`reference model: temperature must be a positive finite number, got ${temperature}`);
  }
}

function checkImages(cfg: ModelConfig, T: number, images: RefImages): void {
  if (!cfg.vision) throw new Error('reference model: a sequence has images but the config has no vision_config (its M-RoPE section)');
  let end = 0;
  let rows = 0;
  images.spans.forEach(({ offset, length }, k) => {
    if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < end || length < 1 || offset + length > T) {
      throw new Error(`reference model: image ${k} span [${offset}, ${offset + length}) must be non-empty, inside the ${T} ids and after the previous image (ends at ${end})`);
    }
    end = offset + length;
    rows += length;
  });
  if (images.embeds.length !== rows * cfg.hiddenSize) throw new Error(`reference model: embeds holds ${images.embeds.length} values; the spans need ${rows} rows × ${cfg.hiddenSize}`);
  if (images.positions.length !== 3 || images.positions.some((r) => r.length !== T)) throw new Error(`reference model: images.positions must be 3 rows of ${T} position ids`);
}
