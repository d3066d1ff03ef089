// attention_backward: causal GQA softmax attention over packed sequences, without any (T, T) buffer.
// Forward (per query token t, head h, kv head g = h / (H/K), keys j in t's sequence with j ≤ t;
// CAUSAL = false: every j of t's sequence, the vision tower's bidirectional attention per frame):
//   s_j = scale · q_t·k_j,  P = softmax_j(s),  o_t = Σ_j P_j v_j
// Backward, recomputing P from q and k:
//   dP_j = dO_t·v_j,  Dt = dO_t·o_t,  dS_j = P_j (dP_j − Dt)
//   dq_t = scale Σ_j dS_j k_j           (PASS 0, one invocation per (t, h); also stores lse and Dt)
//   dk_j = scale Σ_{h∈g, t≥j} dS q_t    (PASS 1, one invocation per (j, g), reads lse and Dt)
//   dv_j = Σ_{h∈g, t≥j} P dO_t          (t over the whole sequence when not CAUSAL)
// q/k/v/o/dO are (T, heads, HEAD_DIM) rows with a per-token row stride, so fused layouts work too.
const HEAD_DIM: u32 = {{HEAD_DIM}};
const PASS: u32 = {{PASS}}u;   // 0: dq (+ stats), 1: dk, dv
const CAUSAL: bool = {{CAUSAL}};
const NEG_BIG: f32 = -3.0e38;

struct Params {
  tokens: u32,
  heads: u32,        // H query heads
  kv_heads: u32,     // K kv heads
  scale: f32,        // head_dim^-0.5
  q_offset: u32, q_stride: u32,
  k_offset: u32, k_stride: u32,
  v_offset: u32, v_stride: u32,
  o_offset: u32, o_stride: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> o: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<f32>;            // (T, H, d) contiguous
@group(0) @binding(6) var<storage, read> bounds: array<vec2u>;        // (T,) [first, last + 1) packed index of the token's sequence
@group(0) @binding(7) var<storage, read_write> stats: array<vec2f>;   // (T, H): logsumexp of scores, Dt
@group(0) @binding(8) var<storage, read_write> dq: array<f32>;        // (T, H, d)
@group(0) @binding(9) var<storage, read_write> dk: array<f32>;        // (T, K, d)
@group(0) @binding(10) var<storage, read_write> dv: array<f32>;       // (T, K, d)

fn q_at(t: u32, h: u32) -> u32 { return p.q_offset + t * p.q_stride + h * HEAD_DIM; }
fn k_at(t: u32, g: u32) -> u32 { return p.k_offset + t * p.k_stride + g * HEAD_DIM; }
fn v_at(t: u32, g: u32) -> u32 { return p.v_offset + t * p.v_stride + g * HEAD_DIM; }
fn o_at(t: u32, h: u32) -> u32 { return p.o_offset + t * p.o_stride + h * HEAD_DIM; }
fn dout_at(t: u32, h: u32) -> u32 { return (t * p.heads + h) * HEAD_DIM; }

fn dq_pass(i: u32) {
  if (i >= p.tokens * p.heads) { return; }
  let t = i / p.heads;
  let h = i % p.heads;
  let g = h / (p.heads / p.kv_heads);
  let first = bounds[t].x;
  // the last key t attends to, plus one
  let stop = select(bounds[t].y, t + 1u, CAUSAL);
  var qv: array<f32, HEAD_DIM>;
  var gov: array<f32, HEAD_DIM>;
  var acc: array<f32, HEAD_DIM>;
  let qb = q_at(t, h);
  let db = dout_at(t, h);
  let ob = o_at(t, h);
  var big_d = 0.0;
  for (var e = 0u; e < HEAD_DIM; e++) {
    qv[e] = q[qb + e];
    gov[e] = dout[db + e];
    big_d += gov[e] * o[ob + e];
    acc[e] = 0.0;
  }
  var mx = NEG_BIG;
  var sm = 0.0;
  for (var j = first; j < stop; j++) {
    let kb = k_at(j, g);
    var s = 0.0;
    for (var e = 0u; e < HEAD_DIM; e++) { s += qv[e] * k[kb + e]; }
    s *= p.scale;
    let m = max(mx, s);
    sm = sm * exp(mx - m) + exp(s - m);
    mx = m;
  }
  let lse = mx + log(sm);
  for (var j = first; j < stop; j++) {
    let kb = k_at(j, g);
    let vb = v_at(j, g);
    var s = 0.0;
    var dp = 0.0;
    for (var e = 0u; e < HEAD_DIM; e++) {
      s += qv[e] * k[kb + e];
      dp += gov[e] * v[vb + e];
    }
    let prob = exp(s * p.scale - lse);
    let ds = prob * (dp - big_d) * p.scale;
    for (var e = 0u; e < HEAD_DIM; e++) { acc[e] += ds * k[kb + e]; }
  }
  let qo = (t * p.heads + h) * HEAD_DIM;
  for (var e = 0u; e < HEAD_DIM; e++) { dq[qo + e] = acc[e]; }
  stats[i] = vec2f(lse, big_d);
}

fn dkv_pass(i: u32) {
  if (i >= p.tokens * p.kv_heads) { return; }
  let j = i / p.kv_heads;
  let g = i % p.kv_heads;
  let group = p.heads / p.kv_heads;
  let last = bounds[j].y;
  // the first query that attends to key j
  let first_q = select(bounds[j].x, j, CAUSAL);
  var kv: array<f32, HEAD_DIM>;
  var vv: array<f32, HEAD_DIM>;
  var dkacc: array<f32, HEAD_DIM>;
  var dvacc: array<f32, HEAD_DIM>;
  let kb = k_at(j, g);
  let vb = v_at(j, g);
  for (var e = 0u; e < HEAD_DIM; e++) {
    kv[e] = k[kb + e];
    vv[e] = v[vb + e];
    dkacc[e] = 0.0;
    dvacc[e] = 0.0;
  }
  for (var h = g * group; h < (g + 1u) * group; h++) {
    for (var t = first_q; t < last; t++) {
      let qb = q_at(t, h);
      let db = dout_at(t, h);
      var s = 0.0;
      var dp = 0.0;
      for (var e = 0u; e < HEAD_DIM; e++) {
        s += q[qb + e] * kv[e];
        dp += dout[db + e] * vv[e];
      }
      let st = stats[t * p.heads + h];
      let prob = exp(s * p.scale - st.x);
      let ds = prob * (dp - st.y) * p.scale;
      for (var e = 0u; e < HEAD_DIM; e++) {
        dkacc[e] += ds * q[qb + e];
        dvacc[e] += prob * dout[db + e];
      }
    }
  }
  let ko = (j * p.kv_heads + g) * HEAD_DIM;
  for (var e = 0u; e < HEAD_DIM; e++) {
    dk[ko + e] = dkacc[e];
    dv[ko + e] = dvacc[e];
  }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * 65535u * 64u;
  if (PASS == 0u) { dq_pass(i); } else { dkv_pass(i); }
}
