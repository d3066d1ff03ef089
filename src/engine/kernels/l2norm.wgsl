// l2norm: Qwen3.5's query/key normalization in the linear-attention layers (transformers' l2norm,
// use_qk_l2norm_in_kernel): y = x · inv, inv = 1/sqrt(Σ x² + eps), over rows of n values.
// Row (t, h) is read from a strided view, x[offset + t·stride + h·n + i] (the q and k columns of
// the conv output), and written contiguous, y[(t·heads + h)·n + i]. One invocation per row; inv is
// kept for backward.
struct Params { rows: u32, heads: u32, n: u32, offset: u32, stride: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;    // (rows, n)
@group(0) @binding(3) var<storage, read_write> inv: array<f32>;  // (rows)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let row = gid.x + gid.y * 65535u * 64u;
  if (row >= p.rows) { return; }
  let base = p.offset + (row / p.heads) * p.stride + (row % p.heads) * p.n;
  var ss = 0.0;
  for (var i = 0u; i < p.n; i++) {
    let v = x[base + i];
    ss += v * v;
  }
  let r = inverseSqrt(ss + p.eps);
  inv[row] = r;
  for (var i = 0u; i < p.n; i++) { y[row * p.n + i] = x[base + i] * r; }
}
