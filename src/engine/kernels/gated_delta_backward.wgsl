// gated_delta_backward: the backward of gated_delta.wgsl over packed sequences that start from a
// zero state (scoring and training), in the chunked (WY / UT-transform) form of the delta rule.
// Within a chunk of n ≤ CHUNK tokens starting from state S0 (column j: s0), with G_t = Σ_{u≤t} g_u
// (cumulated inside the chunk), γ_t = e^{G_t}, E_ts = e^{G_t − G_s} (t ≥ s: ≤ 1, g < 0), and per
// column j (columns of S never mix):
//   w_t = k_t·s0;  b_t = β_t (v_t − γ_t w_t);  (I + A) δ = b,  A_ts = β_t E_ts k_t·k_s  (s < t)
//   o_t = scale (γ_t q_t·s0 + Σ_{s≤t} E_ts (q_t·k_s) δ_s);  s_end = γ_{n−1} s0 + Σ_s E_{n−1,s} k_s δ_s
// which is the recurrence S ← αS; δ = β(v − Sᵀk); S ← S + kδᵀ; o = scale·Sᵀq token by token. Its
// backward, with do and ds (the gradient of s_end, from later chunks):
//   dδ_s = Σ_{t≥s} scale E_ts (q_t·k_s) do_t + E_{n−1,s} k_s·ds;   db = (I + A)⁻ᵀ dδ
//   dv = β db;  dw_t = −β_t γ_t db_t;  ds0 = γ_{n−1} ds + Σ_t (scale γ_t do_t q_t + dw_t k_t)
// and, summed over the columns (R1_ts = Σ_j do_tj δ_sj, R2_ts = Σ_j db_tj δ_sj, rows of S0 and dS):
//   dq_t = scale γ_t S0 do_t + scale Σ_{s≤t} E_ts R1_ts k_s
//   dk_t = scale Σ_{u≥t} E_ut R1_ut q_u + Σ_{s<t} K_ts k_s + Σ_{u>t} K_ut k_u + S0 dw_t + E_{n−1,t} dS δ_t
//          (K_ts = −β_t E_ts R2_ts, the gradient of k_t·k_s)
//   dβ_t = Σ_j db_tj (v_tj − γ_t w_tj) − Σ_{s<t} E_ts (k_t·k_s) R2_ts
//   dG_t = Σ_j (dw_tj w_tj + scale γ_t (q_t·s0) do_tj) + Σ_{s≤t} X_ts − Σ_{u≥t} X_ut + Σ_{s<t} Y_ts − Σ_{u>t} Y_ut − Z_t
//          (+ Σ_j γ_{n−1} s0·ds + Σ_s Z_s at t = n−1), X_ts = scale E_ts (q_t·k_s) R1_ts,
//          Y_ts = −β_t E_ts (k_t·k_s) R2_ts, Z_s = E_{n−1,s} Σ_j (k_s·ds) δ_s;   dg_u = Σ_{t≥u} dG_t
// A first walk over the chunks (the same forward form, no outputs) saves S0 of every SEG-th chunk
// (`work`, (checkpoints, Hv, dk, dv)); then chunks go last to first, and entering a segment of SEG
// chunks replays it from its saved state, saving S0 of its other chunks after the segment states:
// ⌈chunks/SEG⌉ + SEG − 1 states per (sequence, head) instead of one per chunk (SEG ≈ √chunks,
// linear-attention-plan.ts deltaSegment), for one more forward walk (none at SEG = 1). One workgroup per (sequence, value head)
// of NT = max(DK, DV) invocations: invocation j owns column j of the state (the per-column parts),
// invocation e row e (dq, dk), and the CHUNK² dot products are spread over all of them. Per-column
// values the rows need go through the workgroup's scratch in `work` at scratch_offset ((seqs, Hv,
// DK·DV + 6·CHUNK·DV): dS, then δ, db, dw and the three per-column gate partials), ordered by
// storage barriers. A handful of barriers per chunk, instead of several per token.
const DK: u32 = {{DK}}u;
const DV: u32 = {{DV}}u;
const CHUNK: u32 = {{CHUNK}}u;
const NT: u32 = {{NT}}u;   // max(DK, DV)
const SCR: u32 = DK * DV + 6u * CHUNK * DV; // floats of one workgroup's scratch

struct Params {
  seqs: u32, T: u32, hk: u32, hv: u32, scratch_offset: u32,
  v_offset: u32, v_stride: u32, dv_offset: u32, dv_stride: u32,
  scale: f32, seg: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qk: array<f32>;            // (T, 2·Hk, dk), as in the forward
@group(0) @binding(2) var<storage, read> v: array<f32>;             // strided, as in the forward
@group(0) @binding(3) var<storage, read> gb: array<vec2f>;          // (T, Hv): g, β
@group(0) @binding(4) var<storage, read> dout: array<f32>;          // (T, Hv, dv)
@group(0) @binding(5) var<storage, read> seqs: array<vec4u>;        // per sequence: first row, rows, _, first checkpoint
@group(0) @binding(6) var<storage, read_write> work: array<f32>;    // checkpoints, then per-workgroup scratch
@group(0) @binding(7) var<storage, read_write> dqk: array<f32>;     // (T, 2, Hv, dk): dq per value head, then dk
@group(0) @binding(8) var<storage, read_write> dvb: array<f32>;     // dvb[dv_offset + t·dv_stride + h·dv + j]
@group(0) @binding(9) var<storage, read_write> dgb: array<vec2f>;   // (T, Hv): dg, dβ

var<workgroup> kk: array<f32, CHUNK * CHUNK>;  // [t·CHUNK + s] = k_t·k_s
var<workgroup> qks: array<f32, CHUNK * CHUNK>; // [t·CHUNK + s] = q_t·k_s
var<workgroup> r1: array<f32, CHUNK * CHUNK>;  // R1_ts (s ≤ t)
var<workgroup> r2: array<f32, CHUNK * CHUNK>;  // R2_ts (s < t)
var<workgroup> cg: array<f32, CHUNK>;          // G_t
var<workgroup> cb: array<f32, CHUNK>;          // β_t
var<workgroup> red: array<f32, 3 * CHUNK>;     // Σ_j of the gate partials, then dG
var<workgroup> dgs: array<f32, CHUNK>;         // dG_t
var<workgroup> dbeta: array<f32, CHUNK>;       // dβ_t

var<private> q_at: u32;
var<private> k_at: u32;
var<private> h: u32;

fn kq(t: u32, e: u32) -> f32 { return qk[t * 2u * p.hk * DK + k_at + e]; }
fn qq(t: u32, e: u32) -> f32 { return qk[t * 2u * p.hk * DK + q_at + e]; }

// Column j of the state across the loaded chunk [t0, t0 + n): S ← γ_{n−1} S + Σ_t E_{n−1,t} k_t δ_t.
fn advance(t0: u32, n: u32, j: u32, s: ptr<function, array<f32, DK>>) {
  var d: array<f32, CHUNK>;
  for (var t = 0u; t < n; t++) {
    var w = 0.0;
    for (var e = 0u; e < DK; e++) { w += kq(t0 + t, e) * (*s)[e]; }
    var b = cb[t] * (vv(t0 + t, j) - exp(cg[t]) * w);
    for (var u = 0u; u < t; u++) { b -= cb[t] * exp(cg[t] - cg[u]) * kk[t * CHUNK + u] * d[u]; }
    d[t] = b;
  }
  let gl = cg[n - 1u];
  for (var e = 0u; e < DK; e++) { (*s)[e] *= exp(gl); }
  for (var t = 0u; t < n; t++) {
    let f = exp(gl - cg[t]) * d[t];
    for (var e = 0u; e < DK; e++) { (*s)[e] += kq(t0 + t, e) * f; }
  }
}

// Column j of the state as checkpoint `index` of value head h.
fn save(index: u32, j: u32, s: ptr<function, array<f32, DK>>) {
  let base = index * DK * DV * p.hv + h * DK * DV + j;
  for (var e = 0u; e < DK; e++) { work[base + e * DV] = (*s)[e]; }
}

// The chunk [t0, t0 + n) into workgroup memory: k·k and q·k of every pair, G, β. Ends on a barrier.
fn load_chunk(t0: u32, n: u32, i: u32) {
  for (var idx = i; idx < CHUNK * CHUNK; idx += NT) {
    let t = idx / CHUNK;
    let s = idx % CHUNK;
    var a = 0.0;
    var b = 0.0;
    if (t < n && s < n) {
      for (var e = 0u; e < DK; e++) {
        let ks = kq(t0 + s, e);
        a += kq(t0 + t, e) * ks;
        b += qq(t0 + t, e) * ks;
      }
    }
    kk[idx] = a;
    qks[idx] = b;
  }
  if (i == 0u) {
    var acc = 0.0;
    for (var t = 0u; t < CHUNK; t++) {
      var gbt = vec2f(0.0);
      if (t < n) { gbt = gb[(t0 + t) * p.hv + h]; }
      acc += gbt.x;
      cg[t] = acc;
      cb[t] = gbt.y;
    }
  }
  workgroupBarrier();
}

fn vv(t: u32, j: u32) -> f32 { return v[p.v_offset + t * p.v_stride + h * DV + j]; }

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) i: u32) {
  let wg = wid.x + wid.y * 65535u;
  // The whole workgroup returns together (and every loop below has uniform bounds), so barriers stay uniform.
  if (wg >= p.seqs * p.hv) { return; }
  let si = wg / p.hv;
  h = wg % p.hv;
  var sq = seqs[si];
  sq.y = min(sq.y, p.T - min(sq.x, p.T)); // T: rows of the pack, a bound on any table entry
  q_at = h / (p.hv / p.hk) * DK;
  k_at = q_at + p.hk * DK;
  let ckf = DK * DV * p.hv; // floats per checkpoint
  let scr = p.scratch_offset + (si * p.hv + h) * SCR;
  let j = i; // as a column
  let chunks = (sq.y + CHUNK - 1u) / CHUNK;

  // ---- first walk: S0 of every SEG-th chunk ----
  var s: array<f32, DK>;
  var d: array<f32, CHUNK>;
  for (var e = 0u; e < DK; e++) { s[e] = 0.0; }
  for (var c = 0u; c < chunks; c++) {
    let t0 = sq.x + c * CHUNK;
    let n = min(CHUNK, sq.y - c * CHUNK);
    load_chunk(t0, n, i);
    if (j < DV) {
      if (c % p.seg == 0u) { save(sq.w + c / p.seg, j, &s); }
      advance(t0, n, j, &s);
    }
    workgroupBarrier(); // kk/cg are reloaded next
  }
  storageBarrier(); // the checkpoints are read across invocations below
  let segs = (chunks + p.seg - 1u) / p.seg; // the chunk states of the current segment follow the segment states

  // ---- chunks last to first ----
  var ds: array<f32, DK>;
  var wv: array<f32, CHUNK>;
  var dd: array<f32, CHUNK>;
  var db: array<f32, CHUNK>;
  var aq: array<f32, CHUNK>;
  var ak: array<f32, CHUNK>;
  for (var e = 0u; e < DK; e++) { ds[e] = 0.0; }
  for (var c = chunks; c > 0u; c--) {
    let cc = c - 1u;
    let c0 = cc - cc % p.seg; // first chunk of cc's segment
    if (cc > c0 && (c == chunks || cc % p.seg == p.seg - 1u)) {
      // Entering a segment of several chunks (its last first): replay it from its saved state, saving
      // S0 of its chunks after the first (whose S0 is the segment's).
      var s2: array<f32, DK>;
      if (j < DV) {
        let sb = (sq.w + c0 / p.seg) * ckf + h * DK * DV + j;
        for (var e = 0u; e < DK; e++) { s2[e] = work[sb + e * DV]; }
      }
      for (var cx = c0; cx < cc; cx++) {
        let tx = sq.x + cx * CHUNK;
        load_chunk(tx, min(CHUNK, sq.y - cx * CHUNK), i);
        if (j < DV) {
          advance(tx, min(CHUNK, sq.y - cx * CHUNK), j, &s2);
          save(sq.w + segs + cx - c0, j, &s2);
        }
        workgroupBarrier(); // kk/cg are reloaded next
      }
      storageBarrier(); // the chunk states are read across invocations below
    }
    let t0 = sq.x + cc * CHUNK;
    let n = min(CHUNK, sq.y - cc * CHUNK);
    let ck = select(sq.w + segs + cc - c0 - 1u, sq.w + c0 / p.seg, cc == c0) * ckf + h * DK * DV;
    load_chunk(t0, n, i);
    let gl = cg[n - 1u];

    // per column j: δ again, dδ, db, dv, dw, the gate partials; ds → ds0
    if (j < DV) {
      for (var e = 0u; e < DK; e++) { s[e] = work[ck + e * DV + j]; }
      var se = 0.0;
      for (var e = 0u; e < DK; e++) {
        work[scr + e * DV + j] = ds[e];
        se += s[e] * ds[e];
      }
      for (var t = 0u; t < n; t++) {
        var w = 0.0;
        for (var e = 0u; e < DK; e++) { w += kq(t0 + t, e) * s[e]; }
        wv[t] = w;
        var b = cb[t] * (vv(t0 + t, j) - exp(cg[t]) * w);
        for (var u = 0u; u < t; u++) { b -= cb[t] * exp(cg[t] - cg[u]) * kk[t * CHUNK + u] * d[u]; }
        d[t] = b;
      }
      for (var t = 0u; t < n; t++) {
        var kd = 0.0;
        for (var e = 0u; e < DK; e++) { kd += kq(t0 + t, e) * ds[e]; }
        dd[t] = exp(gl - cg[t]) * kd;
        work[scr + DK * DV + 5u * CHUNK * DV + t * DV + j] = dd[t] * d[t]; // Z_t's column share
      }
      var pg: array<f32, CHUNK>;
      for (var t = 0u; t < n; t++) {
        let go = p.scale * dout[((t0 + t) * p.hv + h) * DV + j];
        var qs = 0.0;
        for (var e = 0u; e < DK; e++) { qs += qq(t0 + t, e) * s[e]; }
        pg[t] = exp(cg[t]) * qs * go;
        for (var u = 0u; u <= t; u++) { dd[u] += exp(cg[t] - cg[u]) * qks[t * CHUNK + u] * go; }
      }
      for (var u = n; u > 0u; u--) {
        let sI = u - 1u;
        var x = dd[sI];
        for (var t = u; t < n; t++) { x -= cb[t] * exp(cg[t] - cg[sI]) * kk[t * CHUNK + sI] * db[t]; }
        db[sI] = x;
      }
      for (var t = 0u; t < n; t++) {
        let g = exp(cg[t]);
        let dw = -cb[t] * g * db[t];
        dvb[p.dv_offset + (t0 + t) * p.dv_stride + h * DV + j] = cb[t] * db[t];
        let o = scr + DK * DV + t * DV + j;
        work[o] = d[t];
        work[o + CHUNK * DV] = db[t];
        work[o + 2u * CHUNK * DV] = dw;
        work[o + 3u * CHUNK * DV] = pg[t] + dw * wv[t] + select(0.0, exp(gl) * se, t == n - 1u);
        work[o + 4u * CHUNK * DV] = db[t] * (vv(t0 + t, j) - g * wv[t]);
      }
    }
    storageBarrier();
    workgroupBarrier();

    // sums over the columns: R1, R2 and the gate partials
    for (var idx = i; idx < CHUNK * CHUNK; idx += NT) {
      let t = idx / CHUNK;
      let sI = idx % CHUNK;
      var a = 0.0;
      var b = 0.0;
      if (t < n && sI <= t) {
        for (var jj = 0u; jj < DV; jj++) {
          let dl = work[scr + DK * DV + sI * DV + jj];
          a += dout[((t0 + t) * p.hv + h) * DV + jj] * dl;
          b += work[scr + DK * DV + CHUNK * DV + t * DV + jj] * dl;
        }
      }
      r1[idx] = a;
      r2[idx] = select(0.0, b, sI < t);
    }
    for (var idx = i; idx < 3u * CHUNK; idx += NT) {
      let t = idx % CHUNK;
      let r = idx / CHUNK; // 0: dG partials, 1: dβ partials, 2: Z
      var a = 0.0;
      if (t < n) {
        for (var jj = 0u; jj < DV; jj++) { a += work[scr + DK * DV + (3u + r) * CHUNK * DV + t * DV + jj]; }
      }
      red[idx] = a;
    }
    workgroupBarrier();

    // per row e: dq, dk
    if (i < DK) {
      let e = i;
      for (var t = 0u; t < CHUNK; t++) { aq[t] = 0.0; ak[t] = 0.0; }
      for (var jj = 0u; jj < DV; jj++) {
        let s0 = work[ck + e * DV + jj];
        let dse = work[scr + e * DV + jj];
        for (var t = 0u; t < n; t++) {
          aq[t] += s0 * dout[((t0 + t) * p.hv + h) * DV + jj];
          ak[t] += s0 * work[scr + DK * DV + 2u * CHUNK * DV + t * DV + jj] + exp(gl - cg[t]) * dse * work[scr + DK * DV + t * DV + jj];
        }
      }
      for (var t = 0u; t < n; t++) {
        var dq = exp(cg[t]) * aq[t];
        var dk = ak[t];
        for (var u = 0u; u < n; u++) {
          let ku = kq(t0 + u, e);
          if (u <= t) { dq += exp(cg[t] - cg[u]) * r1[t * CHUNK + u] * ku; }
          if (u >= t) { dk += p.scale * exp(cg[u] - cg[t]) * r1[u * CHUNK + t] * qq(t0 + u, e); }
          if (u < t) { dk -= cb[t] * exp(cg[t] - cg[u]) * r2[t * CHUNK + u] * ku; }
          if (u > t) { dk -= cb[u] * exp(cg[u] - cg[t]) * r2[u * CHUNK + t] * ku; }
        }
        dqk[((t0 + t) * 2u * p.hv + h) * DK + e] = p.scale * dq;
        dqk[(((t0 + t) * 2u + 1u) * p.hv + h) * DK + e] = dk;
      }
    }
    // per token t: dG_t and dβ_t
    for (var t = i; t < n; t += NT) {
      var dG = red[t] - red[2u * CHUNK + t];
      var dB = red[CHUNK + t];
      for (var u = 0u; u < n; u++) {
        if (u <= t) { dG += p.scale * exp(cg[t] - cg[u]) * qks[t * CHUNK + u] * r1[t * CHUNK + u]; }
        if (u >= t) { dG -= p.scale * exp(cg[u] - cg[t]) * qks[u * CHUNK + t] * r1[u * CHUNK + t]; }
        if (u < t) {
          let y = exp(cg[t] - cg[u]) * kk[t * CHUNK + u] * r2[t * CHUNK + u];
          dG -= cb[t] * y;
          dB -= y;
        }
        if (u > t) { dG += cb[u] * exp(cg[u] - cg[t]) * kk[u * CHUNK + t] * r2[u * CHUNK + t]; }
        if (t == n - 1u) { dG += red[2u * CHUNK + u]; }
      }
      dgs[t] = dG;
      dbeta[t] = dB;
    }
    workgroupBarrier();
    for (var u = i; u < n; u += NT) {
      var acc = 0.0;
      for (var t = u; t < n; t++) { acc += dgs[t]; }
      dgb[(t0 + u) * p.hv + h] = vec2f(acc, dbeta[u]);
    }

    // ds ← ds0 for the chunk before (column j)
    if (j < DV) {
      for (var e = 0u; e < DK; e++) { ds[e] *= exp(gl); }
      for (var t = 0u; t < n; t++) {
        let fq = p.scale * exp(cg[t]) * dout[((t0 + t) * p.hv + h) * DV + j];
        let fk = -cb[t] * exp(cg[t]) * db[t];
        for (var e = 0u; e < DK; e++) { ds[e] += fq * qq(t0 + t, e) + fk * kq(t0 + t, e); }
      }
    }
    storageBarrier();
    workgroupBarrier();
  }
}
