// The layers Qwen3.5 adds to Qwen3 (docs/qwen3_5.md), as float64 forward/backward pairs, llm.c style,
// in the conventions of layers.ts: row-major buffers with their shapes in comments, every *_backward
// ACCUMULATES (+=) into its gradient outputs, and a null gradient output is not computed.
//
// Gated DeltaNet (transformers' Qwen3_5GatedDeltaNet), per token t and value head h:
//   qkv = conv1d_silu(in_proj_qkv(x))  → q, k (Hk heads of dk), v (Hv heads of dv)
//   q, k = l2norm(q), l2norm(k), repeated so value head h reads key head ⌊h / (Hv/Hk)⌋
//   β = σ(in_proj_b(x)),  g = −exp(A_log) · softplus(in_proj_a(x) + dt_bias)
//   S ← exp(g)·S;  S ← S + k ⊗ β·(v − Sᵀk);  o = Sᵀ(q/√dk)        (S is dk × dv)
//   out = out_proj(gated_rmsnorm(o, z = in_proj_z(x)))
// The delta rule is the plain recurrent form here (transformers' torch_recurrent_gated_delta_rule);
// its chunked form computes the same function, so the chunked engine kernels are checked against it.

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/** torch.nn.functional.softplus with its defaults (β = 1, threshold 20: linear above it). */
export const softplus = (x: number): number => (x > 20 ? x : Math.log1p(Math.exp(x)));

// ---------------------------------------------------------------------------------------------
// causal depthwise conv over time with SiLU: pre[t, c] = Σ_j w[c, j] · x[t − (W−1) + j, c] (x = 0 before
// t = 0), out = silu(pre). W = linear_conv_kernel_dim; w is conv1d.weight [C, 1, W] read as (C, W).

export function conv1d_silu_forward(
  out: Float64Array, // (T, C)
  pre: Float64Array, // (T, C) saved for backward
  inp: Float64Array, // (T, C)
  w: Float64Array, // (C, W)
  T: number,
  C: number,
  W: number,
): void {
  for (let t = 0; t < T; t++) {
    for (let c = 0; c < C; c++) {
      let s = 0;
      for (let j = 0; j < W; j++) {
        const src = t - (W - 1) + j;
        if (src >= 0) s += w[c * W + j] * inp[src * C + c];
      }
      pre[t * C + c] = s;
      out[t * C + c] = s * sigmoid(s);
    }
  }
}

export function conv1d_silu_backward(
  dinp: Float64Array, // (T, C)
  dw: Float64Array | null, // (C, W)
  dout: Float64Array, // (T, C)
  pre: Float64Array, // (T, C)
  inp: Float64Array, // (T, C)
  w: Float64Array, // (C, W)
  T: number,
  C: number,
  W: number,
): void {
  for (let t = 0; t < T; t++) {
    for (let c = 0; c < C; c++) {
      const p = pre[t * C + c];
      const sp = sigmoid(p);
      const dpre = dout[t * C + c] * sp * (1 + p * (1 - sp)); // silu'(p)
      for (let j = 0; j < W; j++) {
        const src = t - (W - 1) + j;
        if (src < 0) continue;
        dinp[src * C + c] += dpre * w[c * W + j];
        if (dw) dw[c * W + j] += dpre * inp[src * C + c];
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// l2norm of each of N rows of C (FLA's and transformers' form): y = x · (Σ x² + 1e-6)^-½.

export const L2NORM_EPS = 1e-6;

export function l2norm_forward(
  out: Float64Array, // (N, C)
  rnorm: Float64Array, // (N) saved for backward
  inp: Float64Array, // (N, C)
  N: number,
  C: number,
): void {
  for (let n = 0; n < N; n++) {
    let ss = 0;
    for (let i = 0; i < C; i++) ss += inp[n * C + i] * inp[n * C + i];
    const r = 1 / Math.sqrt(ss + L2NORM_EPS);
    rnorm[n] = r;
    for (let i = 0; i < C; i++) out[n * C + i] = inp[n * C + i] * r;
  }
}

export function l2norm_backward(
  dinp: Float64Array, // (N, C)
  dout: Float64Array, // (N, C)
  inp: Float64Array, // (N, C)
  rnorm: Float64Array, // (N)
  N: number,
  C: number,
): void {
  for (let n = 0; n < N; n++) {
    // dx_i = r·dy_i − r³·x_i·Σ_j dy_j·x_j
    const r = rnorm[n];
    let dot = 0;
    for (let j = 0; j < C; j++) dot += dout[n * C + j] * inp[n * C + j];
    for (let i = 0; i < C; i++) dinp[n * C + i] += r * dout[n * C + i] - r * r * r * inp[n * C + i] * dot;
  }
}

// ---------------------------------------------------------------------------------------------
// the DeltaNet gates, per token and value head: β = σ(b), g = −exp(A_log) · softplus(a + dt_bias).

export function deltanet_gates_forward(
  beta: Float64Array, // (T, Hv)
  g: Float64Array, // (T, Hv) log of the state's decay, ≤ 0
  b: Float64Array, // (T, Hv) in_proj_b output
  a: Float64Array, // (T, Hv) in_proj_a output
  Alog: Float64Array, // (Hv)
  dtBias: Float64Array, // (Hv)
  T: number,
  Hv: number,
): void {
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < Hv; h++) {
      beta[t * Hv + h] = sigmoid(b[t * Hv + h]);
      g[t * Hv + h] = -Math.exp(Alog[h]) * softplus(a[t * Hv + h] + dtBias[h]);
    }
  }
}

export function deltanet_gates_backward(
  db: Float64Array, // (T, Hv)
  da: Float64Array, // (T, Hv)
  dAlog: Float64Array | null, // (Hv)
  ddtBias: Float64Array | null, // (Hv)
  dbeta: Float64Array, // (T, Hv)
  dg: Float64Array, // (T, Hv)
  beta: Float64Array, // (T, Hv)
  g: Float64Array, // (T, Hv)
  a: Float64Array, // (T, Hv)
  Alog: Float64Array, // (Hv)
  dtBias: Float64Array, // (Hv)
  T: number,
  Hv: number,
): void {
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < Hv; h++) {
      const i = t * Hv + h;
      db[i] += dbeta[i] * beta[i] * (1 - beta[i]);
      // g = −e^A_log·softplus(u): dg/dA_log = g, dg/du = −e^A_log·σ(u) (softplus' = σ; 1 above the threshold)
      const u = a[i] + dtBias[h];
      const du = dg[i] * -Math.exp(Alog[h]) * (u > 20 ? 1 : sigmoid(u));
      da[i] += du;
      if (ddtBias) ddtBias[h] += du;
      if (dAlog) dAlog[h] += dg[i] * g[i];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// the gated delta rule, recurrent form, from a zero state. q and k are already l2-normalized and
// repeated to Hv heads; q is scaled by dk^-½ here, as transformers does inside the kernel.
//   A_t = exp(g_t)·S_{t−1};  m_t = A_tᵀk_t;  δ_t = β_t·(v_t − m_t);  S_t = A_t + k_t δ_tᵀ;  o_t = S_tᵀ q_t/√dk

export function gated_delta_forward(
  out: Float64Array, // (T, Hv·dv)
  states: Float64Array, // (T+1, Hv, dk, dv) S_0 = 0 … S_T, saved for backward
  q: Float64Array, // (T, Hv·dk)
  k: Float64Array, // (T, Hv·dk)
  v: Float64Array, // (T, Hv·dv)
  g: Float64Array, // (T, Hv)
  beta: Float64Array, // (T, Hv)
  T: number,
  Hv: number,
  dk: number,
  dv: number,
): void {
  const scale = 1 / Math.sqrt(dk);
  const SS = dk * dv;
  states.fill(0, 0, Hv * SS);
  const m = new Float64Array(dv);
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < Hv; h++) {
      const prev = (t * Hv + h) * SS;
      const cur = ((t + 1) * Hv + h) * SS;
      const decay = Math.exp(g[t * Hv + h]);
      const bt = beta[t * Hv + h];
      const kt = (t * Hv + h) * dk;
      const vt = (t * Hv + h) * dv;
      for (let x = 0; x < SS; x++) states[cur + x] = decay * states[prev + x];
      m.fill(0);
      for (let i = 0; i < dk; i++) for (let j = 0; j < dv; j++) m[j] += states[cur + i * dv + j] * k[kt + i];
      for (let j = 0; j < dv; j++) {
        const delta = bt * (v[vt + j] - m[j]);
        for (let i = 0; i < dk; i++) states[cur + i * dv + j] += k[kt + i] * delta;
      }
      for (let j = 0; j < dv; j++) {
        let o = 0;
        for (let i = 0; i < dk; i++) o += states[cur + i * dv + j] * q[kt + i];
        out[vt + j] = o * scale;
      }
    }
  }
}

export function gated_delta_backward(
  dq: Float64Array, // (T, Hv·dk)
  dk_: Float64Array, // (T, Hv·dk)
  dv_: Float64Array, // (T, Hv·dv)
  dg: Float64Array, // (T, Hv)
  dbeta: Float64Array, // (T, Hv)
  dout: Float64Array, // (T, Hv·dv)
  states: Float64Array, // (T+1, Hv, dk, dv)
  q: Float64Array, // (T, Hv·dk)
  k: Float64Array, // (T, Hv·dk)
  v: Float64Array, // (T, Hv·dv)
  g: Float64Array, // (T, Hv)
  beta: Float64Array, // (T, Hv)
  T: number,
  Hv: number,
  dk: number,
  dv: number,
): void {
  const scale = 1 / Math.sqrt(dk);
  const SS = dk * dv;
  const m = new Float64Array(dv);
  const ddelta = new Float64Array(dv);
  const dm = new Float64Array(dv);
  for (let h = 0; h < Hv; h++) {
    const dS = new Float64Array(SS); // (dk, dv) dL/dS_t, carried backwards through time
    const Adec = new Float64Array(SS); // (dk, dv) A_t = exp(g_t)·S_{t−1}
    for (let t = T - 1; t >= 0; t--) {
      const prev = (t * Hv + h) * SS;
      const cur = ((t + 1) * Hv + h) * SS;
      const decay = Math.exp(g[t * Hv + h]);
      const bt = beta[t * Hv + h];
      const kt = (t * Hv + h) * dk;
      const vt = (t * Hv + h) * dv;
      // o = scale·Sᵀq: dS += scale·q ⊗ do; dq = scale·S·do
      for (let i = 0; i < dk; i++) {
        let s = 0;
        for (let j = 0; j < dv; j++) {
          const go = dout[vt + j];
          dS[i * dv + j] += scale * q[kt + i] * go;
          s += states[cur + i * dv + j] * go;
        }
        dq[kt + i] += scale * s;
      }
      for (let x = 0; x < SS; x++) Adec[x] = decay * states[prev + x];
      m.fill(0);
      for (let i = 0; i < dk; i++) for (let j = 0; j < dv; j++) m[j] += Adec[i * dv + j] * k[kt + i];
      // S_t = A + k δᵀ: dδ = dSᵀk, dk += dS·δ
      ddelta.fill(0);
      for (let i = 0; i < dk; i++) {
        let s = 0;
        for (let j = 0; j < dv; j++) {
          const delta = bt * (v[vt + j] - m[j]);
          ddelta[j] += dS[i * dv + j] * k[kt + i];
          s += dS[i * dv + j] * delta;
        }
        dk_[kt + i] += s;
      }
      // δ = β(v − m): dv = β·dδ, dβ = Σ dδ·(v − m), dm = −β·dδ
      let dbt = 0;
      for (let j = 0; j < dv; j++) {
        dv_[vt + j] += bt * ddelta[j];
        dbt += ddelta[j] * (v[vt + j] - m[j]);
        dm[j] = -bt * ddelta[j];
      }
      dbeta[t * Hv + h] += dbt;
      // m = Aᵀk: dA = dS + k ⊗ dm, dk += A·dm
      for (let i = 0; i < dk; i++) {
        let s = 0;
        for (let j = 0; j < dv; j++) {
          s += Adec[i * dv + j] * dm[j];
          dS[i * dv + j] += k[kt + i] * dm[j];
        }
        dk_[kt + i] += s;
      }
      // A = e^g·S_{t−1}: dg = Σ dA ⊙ A, dS_{t−1} = e^g·dA
      let dgt = 0;
      for (let x = 0; x < SS; x++) {
        dgt += dS[x] * Adec[x];
        dS[x] *= decay;
      }
      dg[t * Hv + h] += dgt;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// gated rmsnorm (Qwen3_5RMSNormGated) over each of N rows of C: y = w ⊙ x·rstd ⊙ silu(z). Its weight
// multiplies as is (init 1), unlike Qwen3_5RMSNorm's (1 + w).

export function gated_rmsnorm_forward(
  out: Float64Array, // (N, C)
  rstd: Float64Array, // (N) saved for backward
  inp: Float64Array, // (N, C)
  z: Float64Array, // (N, C)
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
    for (let i = 0; i < C; i++) {
      const zi = z[n * C + i];
      out[n * C + i] = w[i] * inp[n * C + i] * r * zi * sigmoid(zi);
    }
  }
}

export function gated_rmsnorm_backward(
  dinp: Float64Array, // (N, C)
  dz: Float64Array, // (N, C)
  dw: Float64Array | null, // (C)
  dout: Float64Array, // (N, C)
  inp: Float64Array, // (N, C)
  z: Float64Array, // (N, C)
  w: Float64Array, // (C)
  rstd: Float64Array, // (N)
  N: number,
  C: number,
): void {
  const gn = new Float64Array(C); // dL/d(x·rstd)
  for (let n = 0; n < N; n++) {
    const r = rstd[n];
    let dot = 0;
    for (let i = 0; i < C; i++) {
      const zi = z[n * C + i];
      const sz = sigmoid(zi);
      const x = inp[n * C + i];
      const dy = dout[n * C + i];
      gn[i] = dy * w[i] * zi * sz;
      dz[n * C + i] += dy * w[i] * x * r * sz * (1 + zi * (1 - sz));
      if (dw) dw[i] += dy * x * r * zi * sz;
      dot += gn[i] * x;
    }
    const c = (r * r * r * dot) / C;
    for (let i = 0; i < C; i++) dinp[n * C + i] += r * gn[i] - c * inp[n * C + i];
  }
}

// ---------------------------------------------------------------------------------------------
// partial RoPE: rotate-half on the first `rd` dims of each of nH heads of width d, angle
// p(t, i) · θ^(−2i/rd) for i < rd/2; dims rd..d pass through. With rd = d it is layers.ts's rope.
// Plain rope: p(t, i) = t. M-RoPE (a prompt with images): frequency i takes token t's temporal,
// height or width position id (mrope_axis), as transformers' interleaved Qwen3_5TextRotaryEmbedding.

/** Position of token t that frequency i of the rotary reads. */
type RopePosition = (t: number, i: number) => number;

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

function ropePosition(m: MropePositions | undefined): RopePosition {
  if (!m) return (t) => t;
  return (t, i) => m.rows[mrope_axis(i, m.section)][t]!;
}

function partial_rope(
  out: Float64Array, // (T, nH·d)
  inp: Float64Array, // (T, nH·d)
  T: number,
  nH: number,
  d: number,
  rd: number,
  theta: number,
  pos: RopePosition,
  sign: 1 | -1, // +1 forward, −1 the inverse rotation (backward)
  accumulate: boolean,
): void {
  const half = rd / 2;
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) {
      const a = pos(t, i) / Math.pow(theta, (2 * i) / rd);
      const c = Math.cos(a);
      const s = sign * Math.sin(a);
      for (let h = 0; h < nH; h++) {
        const base = (t * nH + h) * d;
        const x1 = inp[base + i];
        const x2 = inp[base + i + half];
        const y1 = x1 * c - x2 * s;
        const y2 = x2 * c + x1 * s;
        if (accumulate) {
          out[base + i] += y1;
          out[base + i + half] += y2;
        } else {
          out[base + i] = y1;
          out[base + i + half] = y2;
        }
      }
    }
    for (let h = 0; h < nH; h++) {
      const base = (t * nH + h) * d;
      for (let i = rd; i < d; i++) out[base + i] = (accumulate ? out[base + i] : 0) + inp[base + i];
    }
  }
}

/** Rotates by the token index, or by the M-RoPE position ids when `mrope` is given. */
export function partial_rope_forward(
  out: Float64Array, // (T, nH·d)
  inp: Float64Array, // (T, nH·d)
  T: number, nH: number, d: number, rd: number, theta: number,
  mrope?: MropePositions,
): void {
  partial_rope(out, inp, T, nH, d, rd, theta, ropePosition(mrope), 1, false);
}

export function partial_rope_backward(
  dinp: Float64Array, // (T, nH·d)
  dout: Float64Array, // (T, nH·d)
  T: number, nH: number, d: number, rd: number, theta: number,
  mrope?: MropePositions,
): void {
  // The rotation is orthogonal: its backward is the rotation by −a.
  partial_rope(dinp, dout, T, nH, d, rd, theta, ropePosition(mrope), -1, true);
}

// ---------------------------------------------------------------------------------------------
// sigmoid output gate of the gated attention: out = x ⊙ σ(gate).

export function sigmoid_gate_forward(
  out: Float64Array, // (N)
  x: Float64Array, // (N)
  gate: Float64Array, // (N)
  N: number,
): void {
  for (let i = 0; i < N; i++) out[i] = x[i] * sigmoid(gate[i]);
}

export function sigmoid_gate_backward(
  dx: Float64Array, // (N)
  dgate: Float64Array, // (N)
  dout: Float64Array, // (N)
  x: Float64Array, // (N)
  gate: Float64Array, // (N)
  N: number,
): void {
  for (let i = 0; i < N; i++) {
    const s = sigmoid(gate[i]);
    dx[i] += dout[i] * s;
    dgate[i] += dout[i] * x[i] * s * (1 - s);
  }
}
