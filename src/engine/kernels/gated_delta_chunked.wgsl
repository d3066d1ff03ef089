// gated_delta_chunked: gated_delta.wgsl's function (the gated delta rule of Qwen3.5's linear-attention
// layers) in the chunked (WY / UT-transform) form, for passes of many tokens per sequence (scoring,
// prefill, the backward's recompute); decode steps of one token keep the recurrent kernel.
// Within a chunk of n ≤ CHUNK tokens starting from state S0 (column j: s0), with G_t = Σ_{u≤t} g_u
// (cumulated inside the chunk), γ_t = e^{G_t}, E_ts = e^{G_t − G_s} (t ≥ s: ≤ 1, as g < 0), the
// token-by-token updates S ← αS; δ = β(v − Sᵀk); S ← S + kδᵀ; o = scale·Sᵀq unroll into
//   w_t = k_t·s0;  b_t = β_t (v_t − γ_t w_t);  (I + A) δ = b,  A_ts = β_t E_ts k_t·k_s  (s < t)
//   o_t = scale (γ_t q_t·s0 + Σ_{s≤t} E_ts (q_t·k_s) δ_s);  s_end = γ_{n−1} s0 + Σ_s E_{n−1,s} k_s δ_s
// (I + A) is unit lower triangular, so δ comes by forward substitution. The CHUNK² dot products
// k_t·k_s and q_t·k_s are shared by all columns: one workgroup per (sequence, value head) computes
// them once per chunk into workgroup memory, and invocation j then owns column j of the state
// (dk registers) through the chunk. Two barriers per chunk.
const DK: u32 = {{DK}}u;
const DV: u32 = {{DV}}u;
const CHUNK: u32 = {{CHUNK}}u;
const WITH_STATE: bool = {{WITH_STATE}};

struct Params { seqs: u32, T: u32, hk: u32, hv: u32, dv: u32, v_offset: u32, v_stride: u32, scale: f32 }

@group(0) @binding(0) var<uniform> p: Params;                      // dv: = DV (gated_delta.wgsl's layout)
@group(0) @binding(1) var<storage, read> qk: array<f32>;           // (T, 2·Hk, dk): l2-normalized q heads, then k heads
@group(0) @binding(2) var<storage, read> v: array<f32>;            // v[v_offset + t·v_stride + h·dv + j]
@group(0) @binding(3) var<storage, read> gb: array<vec2f>;         // (T, Hv): g, β
@group(0) @binding(4) var<storage, read> seqs: array<vec4u>;       // per sequence: first row, rows, state slot, _
@group(0) @binding(5) var<storage, read_write> state: array<f32>;  // (slots, Hv, dk, dv)
@group(0) @binding(6) var<storage, read_write> out: array<f32>;    // (T, Hv, dv)

var<workgroup> kk: array<f32, CHUNK * CHUNK>;  // [t·CHUNK + s] = k_t·k_s
var<workgroup> qks: array<f32, CHUNK * CHUNK>; // [t·CHUNK + s] = q_t·k_s
var<workgroup> cg: array<f32, CHUNK>;          // G_t
var<workgroup> cb: array<f32, CHUNK>;          // β_t

@compute @workgroup_size(DV)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) j: u32) {
  let wg = wid.x + wid.y * 65535u;
  // The whole workgroup returns together (and every loop below has uniform bounds), so barriers stay uniform.
  if (wg >= p.seqs * p.hv) { return; }
  let h = wg % p.hv;
  var sq = seqs[wg / p.hv];
  sq.y = min(sq.y, p.T - min(sq.x, p.T)); // T: rows of the pack, a bound on any table entry
  let q_at = h / (p.hv / p.hk) * DK;   // offset of the key head in a token's q (k: + Hk·dk)
  let k_at = q_at + p.hk * DK;
  let rw = 2u * p.hk * DK;            // floats per token row of qk
  let sbase = (sq.z * p.hv + h) * DK * DV + j;
  var s: array<f32, DK>;
  for (var e = 0u; e < DK; e++) { s[e] = select(0.0, state[sbase + e * DV], WITH_STATE); }
  var d: array<f32, CHUNK>;
  let chunks = (sq.y + CHUNK - 1u) / CHUNK;
  for (var c = 0u; c < chunks; c++) {
    let t0 = sq.x + c * CHUNK;
    let n = min(CHUNK, sq.y - c * CHUNK);
    for (var idx = j; idx < CHUNK * CHUNK; idx += DV) {
      let t = idx / CHUNK;
      let si = idx % CHUNK;
      var a = 0.0;
      var b = 0.0;
      if (t < n && si <= t) {
        for (var e = 0u; e < DK; e++) {
          let ks = qk[(t0 + si) * rw + k_at + e];
          a += qk[(t0 + t) * rw + k_at + e] * ks;
          b += qk[(t0 + t) * rw + q_at + e] * ks;
        }
      }
      kk[idx] = a;
      qks[idx] = b;
    }
    if (j == 0u) {
      var acc = 0.0;
      for (var t = 0u; t < n; t++) {
        let gbt = gb[(t0 + t) * p.hv + h];
        acc += gbt.x;
        cg[t] = acc;
        cb[t] = gbt.y;
      }
    }
    workgroupBarrier();
    for (var t = 0u; t < n; t++) {
      let row = (t0 + t) * rw;
      var w = 0.0;
      var qs = 0.0;
      for (var e = 0u; e < DK; e++) {
        w += qk[row + k_at + e] * s[e];
        qs += qk[row + q_at + e] * s[e];
      }
      let gt = cg[t];
      var b = v[p.v_offset + (t0 + t) * p.v_stride + h * DV + j] - exp(gt) * w;
      for (var u = 0u; u < t; u++) { b -= exp(gt - cg[u]) * kk[t * CHUNK + u] * d[u]; }
      d[t] = cb[t] * b;
      var o = exp(gt) * qs;
      for (var u = 0u; u <= t; u++) { o += exp(gt - cg[u]) * qks[t * CHUNK + u] * d[u]; }
      out[((t0 + t) * p.hv + h) * DV + j] = o * p.scale;
    }
    let gl = cg[n - 1u];
    for (var e = 0u; e < DK; e++) { s[e] *= exp(gl); }
    for (var t = 0u; t < n; t++) {
      let f = exp(gl - cg[t]) * d[t];
      let row = (t0 + t) * rw + k_at;
      for (var e = 0u; e < DK; e++) { s[e] += qk[row + e] * f; }
    }
    workgroupBarrier(); // kk, qks, cg, cb are reloaded next
  }
  if (WITH_STATE) {
    for (var e = 0u; e < DK; e++) { state[sbase + e * DV] = s[e]; }
  }
}
