// rmsnorm: y = w ⊙ x·rstd, rstd = 1/sqrt(mean(x²) + eps), over rows of n values. Used for the
// input/post-attention/final norms (n = D) and, with rows = T·heads and n = d, for the per-head
// q_norm/k_norm. One invocation per row: rows are short and many. rstd is kept for backward.
// unit_offset = 1 scales by (1 + w) instead (Qwen3.5's zero-centered Qwen3_5RMSNorm weights).
struct Params { rows: u32, n: u32, unit_offset: u32, _pad1: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;     // (rows, n)
@group(0) @binding(2) var<storage, read> w: array<f32>;     // (n)
@group(0) @binding(3) var<storage, read_write> y: array<f32>;    // (rows, n)
@group(0) @binding(4) var<storage, read_write> rstd: array<f32>; // (rows)

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let row = gid.x + gid.y * 65535u * 64u;
  if (row >= p.rows) { return; }
  let base = row * p.n;
  var ss = 0.0;
  for (var i = 0u; i < p.n; i++) {
    let v = x[base + i];
    ss += v * v;
  }
  let s = inverseSqrt(ss / f32(p.n) + p.eps);
  rstd[row] = s;
  for (var i = 0u; i < p.n; i++) {
    y[base + i] = select(w[i], 1.0 + w[i], p.unit_offset != 0u) * (x[base + i] * s);
  }
}
