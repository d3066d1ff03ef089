// gated_delta_backward: the backward of gated_delta.wgsl over packed sequences that start from a
// zero state (scoring and training). Per token, with the pre-token state P (column j: p), α = exp(g):
//   u = α p;  r = v − uᵀk;  δ = β r;  s = u + k δ;  o = scale · sᵀq
// and dS the gradient flowing into the state after token t from later tokens, walking t backwards:
//   dS += scale · q doᵀ;   dδ = dSᵀk (per column)
//   dq = scale · S do           dk = dS δ − β U dδ       (sums over the columns j)
//   dv = β dδ;  dβ = Σ_j dδ r;  du = dS − β k dδᵀ;  dg = α Σ_ij du·P;  dS ← α du
// The pre-token states are recomputed: a first walk saves S at the start of every CHUNK tokens
// (`work`, (chunks, Hv, dk, dv)), then chunks are processed last to first, each replayed from its
// checkpoint into `work` at scratch_offset ((seqs, Hv, CHUNK, dk, dv)) and walked backwards.
// One workgroup per (sequence, value head), invocation j owns column j (DV invocations). The sums
// over j go through workgroup memory: TILE rows of i at a time, summed by the first TILE
// invocations (no float atomics in WGSL, and a fixed order keeps results reproducible).
const DK: u32 = {{DK}}u;
const DV: u32 = {{DV}}u;
const CHUNK: u32 = {{CHUNK}}u;
const TILE: u32 = {{TILE}}u;   // divides DK, ≤ DV

struct Params {
  seqs: u32, T: u32, hk: u32, hv: u32, scratch_offset: u32,
  v_offset: u32, v_stride: u32, dv_offset: u32, dv_stride: u32,
  scale: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qk: array<f32>;            // (T, 2·Hk, dk), as in the forward
@group(0) @binding(2) var<storage, read> v: array<f32>;             // strided, as in the forward
@group(0) @binding(3) var<storage, read> gb: array<vec2f>;          // (T, Hv): g, β
@group(0) @binding(4) var<storage, read> dout: array<f32>;          // (T, Hv, dv)
@group(0) @binding(5) var<storage, read> seqs: array<vec4u>;        // per sequence: first row, rows, _, first checkpoint
@group(0) @binding(6) var<storage, read_write> work: array<f32>;    // checkpoints, then replay scratch
@group(0) @binding(7) var<storage, read_write> dqk: array<f32>;     // (T, 2, Hv, dk): dq per value head, then dk
@group(0) @binding(8) var<storage, read_write> dvb: array<f32>;     // dvb[dv_offset + t·dv_stride + h·dv + j]
@group(0) @binding(9) var<storage, read_write> dgb: array<vec2f>;   // (T, Hv): dg, dβ

var<workgroup> tile_q: array<f32, TILE * DV>;
var<workgroup> tile_k: array<f32, TILE * DV>;
var<workgroup> red: array<vec2f, DV>;

// One forward step of token t on column j of the state (gated_delta.wgsl's loop body).
fn step(s: ptr<function, array<f32, DK>>, t: u32, h: u32, k_at: u32, j: u32) {
  let row = t * 2u * p.hk * DK;
  let gbt = gb[t * p.hv + h];
  let alpha = exp(gbt.x);
  var kv = 0.0;
  for (var e = 0u; e < DK; e++) {
    (*s)[e] *= alpha;
    kv += (*s)[e] * qk[row + k_at + e];
  }
  let delta = gbt.y * (v[p.v_offset + t * p.v_stride + h * DV + j] - kv);
  for (var e = 0u; e < DK; e++) { (*s)[e] += qk[row + k_at + e] * delta; }
}

@compute @workgroup_size(DV)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) j: u32) {
  let wg = wid.x + wid.y * 65535u;
  // The whole workgroup returns together (and every loop below has uniform bounds), so barriers stay uniform.
  if (wg >= p.seqs * p.hv) { return; }
  let si = wg / p.hv;
  let h = wg % p.hv;
  var sq = seqs[si];
  sq.y = min(sq.y, p.T - min(sq.x, p.T)); // T: rows of the pack, a bound on any table entry
  let q_at = h / (p.hv / p.hk) * DK;
  let k_at = q_at + p.hk * DK;
  let ck = DK * DV * p.hv; // floats per checkpoint
  let scratch = p.scratch_offset + (si * p.hv + h) * CHUNK * DK * DV + j;

  var s: array<f32, DK>;
  for (var e = 0u; e < DK; e++) { s[e] = 0.0; }
  for (var tt = 0u; tt < sq.y; tt++) {
    if (tt % CHUNK == 0u) {
      let cb = (sq.w + tt / CHUNK) * ck + h * DK * DV + j;
      for (var e = 0u; e < DK; e++) { work[cb + e * DV] = s[e]; }
    }
    step(&s, sq.x + tt, h, k_at, j);
  }

  var ds: array<f32, DK>;
  var sp: array<f32, DK>;
  for (var e = 0u; e < DK; e++) { ds[e] = 0.0; }
  let chunks = (sq.y + CHUNK - 1u) / CHUNK;
  for (var c = chunks; c > 0u; c--) {
    let c0 = (c - 1u) * CHUNK;
    let c1 = min(sq.y, c0 + CHUNK);
    let cb = (sq.w + c - 1u) * ck + h * DK * DV + j;
    for (var e = 0u; e < DK; e++) { s[e] = work[cb + e * DV]; }
    for (var tt = c0; tt < c1; tt++) {
      for (var e = 0u; e < DK; e++) { work[scratch + ((tt - c0) * DK + e) * DV] = s[e]; }
      step(&s, sq.x + tt, h, k_at, j);
    }
    for (var tt = c1; tt > c0; tt--) {
      let t = sq.x + tt - 1u;
      let row = t * 2u * p.hk * DK;
      for (var e = 0u; e < DK; e++) { sp[e] = work[scratch + ((tt - 1u - c0) * DK + e) * DV]; }
      let gbt = gb[t * p.hv + h];
      let alpha = exp(gbt.x);
      let beta = gbt.y;
      var kv = 0.0;
      for (var e = 0u; e < DK; e++) { kv += alpha * sp[e] * qk[row + k_at + e]; }
      let r = v[p.v_offset + t * p.v_stride + h * DV + j] - kv;
      let delta = beta * r;
      let go = dout[(t * p.hv + h) * DV + j];
      var ddelta = 0.0;
      for (var e = 0u; e < DK; e++) {
        ds[e] += p.scale * qk[row + q_at + e] * go;
        ddelta += ds[e] * qk[row + k_at + e];
      }
      var da = 0.0;
      for (var i0 = 0u; i0 < DK; i0 += TILE) {
        for (var ii = 0u; ii < TILE; ii++) {
          let e = i0 + ii;
          let ke = qk[row + k_at + e];
          let u = alpha * sp[e];
          tile_q[ii * DV + j] = p.scale * (u + ke * delta) * go;
          tile_k[ii * DV + j] = ds[e] * delta - ddelta * beta * u;
          let du = ds[e] - ddelta * beta * ke;
          da += du * sp[e];
          ds[e] = alpha * du;
        }
        workgroupBarrier();
        if (j < TILE) {
          var sq_ = 0.0;
          var sk = 0.0;
          for (var jj = 0u; jj < DV; jj++) {
            sq_ += tile_q[j * DV + jj];
            sk += tile_k[j * DV + jj];
          }
          dqk[(t * 2u * p.hv + h) * DK + i0 + j] = sq_;
          dqk[((t * 2u + 1u) * p.hv + h) * DK + i0 + j] = sk;
        }
        workgroupBarrier();
      }
      dvb[p.dv_offset + t * p.dv_stride + h * DV + j] = beta * ddelta;
      red[j] = vec2f(alpha * da, ddelta * r);
      workgroupBarrier();
      if (j == 0u) {
        var sum = vec2f(0.0);
        for (var jj = 0u; jj < DV; jj++) { sum += red[jj]; }
        dgb[t * p.hv + h] = sum;
      }
      workgroupBarrier();
    }
  }
}
