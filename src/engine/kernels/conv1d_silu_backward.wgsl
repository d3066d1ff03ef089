// conv1d_silu_backward: conv1d_silu.wgsl without a state (scoring and training start every sequence
// fresh). With pre recomputed from x and w, lag m = K−1−k, within token t's sequence:
//   dpre[t,c] = dy[t,c] · σ(pre)·(1 + pre·(1 − σ(pre)))               PASS 0, per (t, c)
//   dx[t,c]   = Σ_k w[c,k] · dpre[t+m, c]                               PASS 1, per (t, c)
//   dw[c,k]  += Σ_t dpre[t,c] · x[t−m, c]                                PASS 2, per (c, k): walks all tokens
const K: u32 = {{KSIZE}}u;
const PASS: u32 = {{PASS}}u;

struct Params { T: u32, C: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;           // (T, C) the conv's input
@group(0) @binding(2) var<storage, read> w: array<f32>;           // (C, K)
@group(0) @binding(3) var<storage, read> bounds: array<vec2u>;    // (T) [first, last + 1) rows of the token's sequence
@group(0) @binding(4) var<storage, read> dy: array<f32>;          // (T, C)
@group(0) @binding(5) var<storage, read_write> dpre: array<f32>;  // (T, C) written by PASS 0
@group(0) @binding(6) var<storage, read_write> dx: array<f32>;    // (T, C)
@group(0) @binding(7) var<storage, read_write> dw: array<f32>;    // (C, K)

fn dpre_pass(i: u32) {
  if (i >= p.T * p.C) { return; }
  let t = i / p.C;
  let c = i % p.C;
  let first = bounds[t].x;
  var pre = 0.0;
  for (var k = 0u; k < K; k++) {
    let m = K - 1u - k;
    if (t >= first + m) { pre += w[c * K + k] * x[(t - m) * p.C + c]; }
  }
  let sig = 1.0 / (1.0 + exp(-pre));
  dpre[i] = dy[i] * sig * (1.0 + pre * (1.0 - sig));
}

fn dx_pass(i: u32) {
  if (i >= p.T * p.C) { return; }
  let t = i / p.C;
  let c = i % p.C;
  let end = bounds[t].y;
  var acc = 0.0;
  for (var k = 0u; k < K; k++) {
    let m = K - 1u - k;
    if (t + m < end) { acc += w[c * K + k] * dpre[(t + m) * p.C + c]; }
  }
  dx[i] = acc;
}

fn dw_pass(i: u32) {
  if (i >= p.C * K) { return; }
  let c = i / K;
  let m = K - 1u - i % K;
  var acc = 0.0;
  for (var t = 0u; t < p.T; t++) {
    if (t >= bounds[t].x + m) { acc += dpre[t * p.C + c] * x[(t - m) * p.C + c]; }
  }
  dw[i] += acc;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * 65535u * 64u;
  if (PASS == 0u) { dpre_pass(i); } else if (PASS == 1u) { dx_pass(i); } else { dw_pass(i); }
}
