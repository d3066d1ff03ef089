// The layers of Qwen3 as plain float64 forward/backward pairs (llm.c style), side by side.
// Activations are row-major Float64Arrays; the shape of each buffer is in the comment next to it.
// Every *_backward ACCUMULATES (+=) into its gradient outputs, so that contributions of several
// paths (the residual stream, a tied embedding used twice) sum into one buffer. A gradient output
// that is `null` is not wanted (frozen base weights under LoRA) and is not computed.

// ---------------------------------------------------------------------------------------------
// embedding: out[t] = wte[ids[t]] (no scaling)

export function embedding_forward(
  out: Float64Array, // (T, D)
  ids: readonly number[], // (T)
  wte: Float64Array, // (V, D)
  D: number,
): void {
  for (let t = 0; t < ids.length; t++) {
    const row = ids[t] * D;
    for (let i = 0; i < D; i++) out[t * D + i] = wte[row + i];
  }
}

export function embedding_backward(
  dwte: Float64Array, // (V, D)
  dout: Float64Array, // (T, D)
  ids: readonly number[], // (T)
  D: number,
): void {
  for (let t = 0; t < ids.length; t++) {
    const row = ids[t] * D;
    for (let i = 0; i < D; i++) dwte[row + i] += dout[t * D + i];
  }
}

// ---------------------------------------------------------------------------------------------
// rmsnorm over the last C values of each of N rows: y = w ⊙ x · rstd, rstd = (mean(x²) + eps)^-½.
// The same pair serves the model norms (N = T, C = D) and Qwen3's per-head q_norm/k_norm
// (N = T·heads, C = headDim).

export function rmsnorm_forward(
  out: Float64Array, // (N, C)
  rstd: Float64Array, // (N) saved for backward
  inp: Float64Array, // (N, C)
  w: Float64Array, // (C)
  N: number,
  C: number,
  eps: number,
): void {
  for (let n = 0; n < N; n++) {
    let ss = 0;
    for (let i = 0; i < C; i++) ss += inp[n * C + i] * inp[n * C + i];
    const r = 1 / Math.sqrt(ss / C + eps);
    rstd[n] = r;
    for (let i = 0; i < C; i++) out[n * C + i] = w[i] * inp[n * C + i] * r;
  }
}

export function rmsnorm_backward(
  dinp: Float64Array, // (N, C)
  dw: Float64Array | null, // (C)
  dout: Float64Array, // (N, C)
  inp: Float64Array, // (N, C)
  w: Float64Array, // (C)
  rstd: Float64Array, // (N)
  N: number,
  C: number,
): void {
  for (let n = 0; n < N; n++) {
    const r = rstd[n];
    // d(rstd)/dx_i = -rstd³·x_i/C, so dx_i = rstd·w_i·dy_i − rstd³/C · x_i · Σ_j w_j·dy_j·x_j.
    let dot = 0;
    for (let j = 0; j < C; j++) dot += w[j] * dout[n * C + j] * inp[n * C + j];
    const c = (r * r * r * dot) / C;
    for (let i = 0; i < C; i++) {
      const x = inp[n * C + i];
      const dy = dout[n * C + i];
      dinp[n * C + i] += r * w[i] * dy - c * x;
      if (dw) dw[i] += dy * x * r;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// linear (no bias), W stored [out, in] as nn.Linear: y = W·x, plus optional LoRA scale·B·(A·x).

export interface LoraFactors {
  A: Float64Array; // (r, I)
  B: Float64Array; // (O, r)
  r: number;
  scale: number; // alpha / r
}

export function linear_forward(
  out: Float64Array, // (T, O)
  inp: Float64Array, // (T, I)
  W: Float64Array, // (O, I)
  T: number,
  I: number,
  O: number,
  lora?: LoraFactors,
): void {
  for (let t = 0; t < T; t++) {
    for (let o = 0; o < O; o++) {
      let s = 0;
      for (let i = 0; i < I; i++) s += W[o * I + i] * inp[t * I + i];
      out[t * O + o] = s;
    }
  }
  if (!lora) return;
  const u = lora_down(inp, lora, T, I); // (T, r)
  const { B, r, scale } = lora;
  for (let t = 0; t < T; t++) {
    for (let o = 0; o < O; o++) {
      let s = 0;
      for (let k = 0; k < r; k++) s += B[o * r + k] * u[t * r + k];
      out[t * O + o] += scale * s;
    }
  }
}

export function linear_backward(
  dinp: Float64Array, // (T, I)
  dW: Float64Array | null, // (O, I)
  dout: Float64Array, // (T, O)
  inp: Float64Array, // (T, I)
  W: Float64Array, // (O, I)
  T: number,
  I: number,
  O: number,
  lora?: LoraFactors,
  dA?: Float64Array, // (r, I)
  dB?: Float64Array, // (O, r)
): void {
  for (let t = 0; t < T; t++) {
    for (let o = 0; o < O; o++) {
      const g = dout[t * O + o];
      for (let i = 0; i < I; i++) {
        dinp[t * I + i] += g * W[o * I + i];
        if (dW) dW[o * I + i] += g * inp[t * I + i];
      }
    }
  }
  if (!lora) return;
  if (!dA || !dB) throw new Error('linear_backward: LoRA factors given without dA/dB buffers');
  const { A, B, r, scale } = lora;
  // u = A·x is cheap to recompute, so it is not saved by the forward pass.
  const u = lora_down(inp, lora, T, I); // (T, r)
  const du = new Float64Array(T * r); // (T, r) = scale · Bᵀ·dy
  for (let t = 0; t < T; t++) {
    for (let o = 0; o < O; o++) {
      const g = scale * dout[t * O + o];
      for (let k = 0; k < r; k++) {
        dB[o * r + k] += g * u[t * r + k];
        du[t * r + k] += g * B[o * r + k];
      }
    }
  }
  for (let t = 0; t < T; t++) {
    for (let k = 0; k < r; k++) {
      const g = du[t * r + k];
      for (let i = 0; i < I; i++) {
        dA[k * I + i] += g * inp[t * I + i];
        dinp[t * I + i] += g * A[k * I + i];
      }
    }
  }
}

/** u = A·x for every row: (T, I) → (T, r). */
function lora_down(inp: Float64Array, lora: LoraFactors, T: number, I: number): Float64Array {
  const { A, r } = lora;
  const u = new Float64Array(T * r);
  for (let t = 0; t < T; t++) {
    for (let k = 0; k < r; k++) {
      let s = 0;
      for (let i = 0; i < I; i++) s += A[k * I + i] * inp[t * I + i];
      u[t * r + k] = s;
    }
  }
  return u;
}

// ---------------------------------------------------------------------------------------------
// RoPE, default type, rotate-half (NOT interleaved pairs), on the first rd dims of each of nH heads of
// width d (rd = d unless partial_rotary_factor < 1, as Qwen3.5's attention layers; dims rd..d pass through):
//   x'[i]      = x[i]·cos a_i − x[i+rd/2]·sin a_i
//   x'[i+rd/2] = x[i+rd/2]·cos a_i + x[i]·sin a_i,   a_i = p(t, i) · θ^(−2i/rd), i < rd/2.
// Plain rope: p(t, i) = t. M-RoPE (a Qwen3.5 prompt with images): frequency i takes token t's temporal,
// height or width position id (mrope_axis), as transformers' interleaved Qwen3_5TextRotaryEmbedding.
// Angles are float64 here. transformers computes inv_freq and p·inv_freq in f32: two roundings of
// ≤ 2⁻²⁴ relative each, so its angles differ from these by up to ≈ 1.2e-7·p rad (1.2e-4 rad at
// p = 1024, 4.8e-3 at p = 40960). Compare an f32 engine with a tolerance that allows for it.

/** The axis (0 temporal, 1 height, 2 width) frequency i of an interleaved M-RoPE follows. */
export function mrope_axis(i: number, section: readonly number[]): 0 | 1 | 2 {
  if (i % 3 === 1 && i < 3 * section[1]!) return 1;
  if (i % 3 === 2 && i < 3 * section[2]!) return 2;
  return 0;
}

/** M-RoPE positions: 3 rows (temporal, height, width) of T position ids and the mrope_section. */
export interface MropePositions {
  rows: readonly [readonly number[], readonly number[], readonly number[]];
  section: readonly number[];
}

function rope(
  out: Float64Array, // (T, nH·d)
  inp: Float64Array, // (T, nH·d)
  T: number,
  nH: number,
  d: number,
  rd: number,
  theta: number,
  mrope: MropePositions | undefined,
  sign: 1 | -1, // +1 forward, −1 the inverse rotation (backward)
  accumulate: boolean,
): void {
  const half = rd / 2;
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) {
      const p = mrope ? mrope.rows[mrope_axis(i, mrope.section)][t]! : t;
      const a = p * (1 / Math.pow(theta, (2 * i) / rd));
      const c = Math.cos(a);
      const s = sign * Math.sin(a);
      for (let h = 0; h < nH; h++) {
        const base = (t * nH + h) * d;
        const x1 = inp[base + i];
        const x2 = inp[base + i + half];
        out[base + i] = (accumulate ? out[base + i] : 0) + x1 * c - x2 * s;
        out[base + i + half] = (accumulate ? out[base + i + half] : 0) + x2 * c + x1 * s;
      }
    }
    for (let h = 0; h < nH; h++) {
      const base = (t * nH + h) * d;
      for (let i = rd; i < d; i++) out[base + i] = (accumulate ? out[base + i] : 0) + inp[base + i];
    }
  }
}

export function rope_forward(
  out: Float64Array, // (T, nH·d)
  inp: Float64Array, // (T, nH·d)
  T: number,
  nH: number,
  d: number,
  theta: number,
  rd = d,
  mrope?: MropePositions, // rotate by the M-RoPE position ids instead of the token index
): void {
  rope(out, inp, T, nH, d, rd, theta, mrope, 1, false);
}

export function rope_backward(
  dinp: Float64Array, // (T, nH·d)
  dout: Float64Array, // (T, nH·d)
  T: number,
  nH: number,
  d: number,
  theta: number,
  rd = d,
  mrope?: MropePositions,
): void {
  // The rotation is orthogonal: its backward is the rotation by −a.
  rope(dinp, dout, T, nH, d, rd, theta, mrope, -1, true);
}

// ---------------------------------------------------------------------------------------------
// causal self-attention with GQA: query head h reads kv head ⌊h / (H/K)⌋, scores scaled by d^-½.

export function attention_forward(
  out: Float64Array, // (T, H·d)
  att: Float64Array, // (H, T, T) softmax probabilities, saved for backward (zero above the diagonal)
  q: Float64Array, // (T, H·d)
  k: Float64Array, // (T, K·d)
  v: Float64Array, // (T, K·d)
  T: number,
  H: number,
  K: number,
  d: number,
): void {
  const scale = 1 / Math.sqrt(d);
  const group = H / K;
  att.fill(0);
  for (let h = 0; h < H; h++) {
    const kvh = Math.floor(h / group);
    for (let t = 0; t < T; t++) {
      const row = (h * T + t) * T;
      let max = -Infinity;
      for (let s = 0; s <= t; s++) {
        let dot = 0;
        for (let i = 0; i < d; i++) dot += q[(t * H + h) * d + i] * k[(s * K + kvh) * d + i];
        att[row + s] = dot * scale;
        if (att[row + s] > max) max = att[row + s];
      }
      let sum = 0;
      for (let s = 0; s <= t; s++) {
        att[row + s] = Math.exp(att[row + s] - max);
        sum += att[row + s];
      }
      for (let s = 0; s <= t; s++) att[row + s] /= sum;
      for (let i = 0; i < d; i++) {
        let o = 0;
        for (let s = 0; s <= t; s++) o += att[row + s] * v[(s * K + kvh) * d + i];
        out[(t * H + h) * d + i] = o;
      }
    }
  }
}

export function attention_backward(
  dq: Float64Array, // (T, H·d)
  dk: Float64Array, // (T, K·d)
  dv: Float64Array, // (T, K·d)
  dout: Float64Array, // (T, H·d)
  q: Float64Array, // (T, H·d)
  k: Float64Array, // (T, K·d)
  v: Float64Array, // (T, K·d)
  att: Float64Array, // (H, T, T)
  T: number,
  H: number,
  K: number,
  d: number,
): void {
  const scale = 1 / Math.sqrt(d);
  const group = H / K;
  const dp = new Float64Array(T); // (T) dL/d probabilities of one query row
  for (let h = 0; h < H; h++) {
    const kvh = Math.floor(h / group);
    for (let t = 0; t < T; t++) {
      const row = (h * T + t) * T;
      // out_t = Σ_s p_ts·v_s
      let pdp = 0; // Σ_s p_ts·dp_ts
      for (let s = 0; s <= t; s++) {
        let dot = 0;
        for (let i = 0; i < d; i++) {
          const g = dout[(t * H + h) * d + i];
          dot += g * v[(s * K + kvh) * d + i];
          dv[(s * K + kvh) * d + i] += att[row + s] * g;
        }
        dp[s] = dot;
        pdp += att[row + s] * dot;
      }
      // softmax backward: dscore_ts = p_ts·(dp_ts − Σ p·dp); score = scale·q_t·k_s
      for (let s = 0; s <= t; s++) {
        const ds = att[row + s] * (dp[s] - pdp) * scale;
        for (let i = 0; i < d; i++) {
          dq[(t * H + h) * d + i] += ds * k[(s * K + kvh) * d + i];
          dk[(s * K + kvh) * d + i] += ds * q[(t * H + h) * d + i];
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// SwiGLU: out = silu(gate) ⊙ up, silu(x) = x·σ(x).

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

export function swiglu_forward(
  out: Float64Array, // (N)
  gate: Float64Array, // (N)
  up: Float64Array, // (N)
  N: number,
): void {
  for (let i = 0; i < N; i++) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

export function swiglu_backward(
  dgate: Float64Array, // (N)
  dup: Float64Array, // (N)
  dout: Float64Array, // (N)
  gate: Float64Array, // (N)
  up: Float64Array, // (N)
  N: number,
): void {
  for (let i = 0; i < N; i++) {
    const g = gate[i];
    const sg = sigmoid(g);
    // silu'(g) = σ(g)·(1 + g·(1 − σ(g)))
    dgate[i] += dout[i] * up[i] * sg * (1 + g * (1 - sg));
    dup[i] += dout[i] * g * sg;
  }
}

// ---------------------------------------------------------------------------------------------
// residual: out = a + b

export function residual_forward(
  out: Float64Array, // (N)
  a: Float64Array, // (N)
  b: Float64Array, // (N)
  N: number,
): void {
  for (let i = 0; i < N; i++) out[i] = a[i] + b[i];
}

export function residual_backward(
  da: Float64Array, // (N)
  db: Float64Array, // (N)
  dout: Float64Array, // (N)
  N: number,
): void {
  for (let i = 0; i < N; i++) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

// ---------------------------------------------------------------------------------------------
// log-softmax at temperature τ: logp = log_softmax(logits / τ), row by row; entropy of each row.

export function logsoftmax_forward(
  logp: Float64Array, // (N, V)
  logits: Float64Array, // (N, V)
  N: number,
  V: number,
  temperature: number,
): void {
  for (let n = 0; n < N; n++) {
    let max = -Infinity;
    for (let j = 0; j < V; j++) max = Math.max(max, logits[n * V + j] / temperature);
    let sum = 0;
    for (let j = 0; j < V; j++) sum += Math.exp(logits[n * V + j] / temperature - max);
    const lse = max + Math.log(sum);
    for (let j = 0; j < V; j++) logp[n * V + j] = logits[n * V + j] / temperature - lse;
  }
}

export function logsoftmax_backward(
  dlogits: Float64Array, // (N, V)
  dlogp: Float64Array, // (N, V)
  logp: Float64Array, // (N, V)
  N: number,
  V: number,
  temperature: number,
): void {
  for (let n = 0; n < N; n++) {
    // d logp_j / d z_k = δ_jk − p_k, with z = logits / τ
    let sum = 0;
    for (let j = 0; j < V; j++) sum += dlogp[n * V + j];
    for (let k = 0; k < V; k++) {
      const p = Math.exp(logp[n * V + k]);
      dlogits[n * V + k] += (dlogp[n * V + k] - p * sum) / temperature;
    }
  }
}

/** Entropy −Σ p·log p of each row of log-probabilities: (N, V) → (N). */
export function entropy_forward(
  entropy: Float64Array, // (N)
  logp: Float64Array, // (N, V)
  N: number,
  V: number,
): void {
  for (let n = 0; n < N; n++) {
    let h = 0;
    for (let j = 0; j < V; j++) {
      const lp = logp[n * V + j];
      h -= Math.exp(lp) * lp;
    }
    entropy[n] = h;
  }
}

/**
 * Entropy backward onto the log-probabilities: with p = exp(logp) and H = −Σ p·logp,
 * dH/dlogp_j = −p_j·(logp_j + 1). Accumulates dentropy[n]·dH/dlogp into dlogp; logsoftmax_backward
 * then turns it into dL/dz_j = −dentropy·p_j·(logp_j + H).
 */
export function entropy_backward(
  dlogp: Float64Array, // (N, V)
  dentropy: ArrayLike<number>, // (N)
  logp: Float64Array, // (N, V)
  N: number,
  V: number,
): void {
  for (let n = 0; n < N; n++) {
    const g = dentropy[n];
    if (g === 0) continue;
    for (let j = 0; j < V; j++) {
      const lp = logp[n * V + j];
      dlogp[n * V + j] -= g * Math.exp(lp) * (lp + 1);
    }
  }
}
