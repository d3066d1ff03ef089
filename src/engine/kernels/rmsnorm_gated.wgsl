// rmsnorm_gated: Qwen3.5's gated RMSNorm of the linear-attention output (transformers'
// Qwen3_5RMSNormGated, norm before gate), per row of n = linear_value_head_dim values:
//   y = w ⊙ (x · rstd) ⊙ silu(z),  rstd = 1/sqrt(mean(x²) + eps)
// with z the in_proj_z output of the same (token, head). One invocation per row; rstd is kept for
// backward (rmsnorm_gated_backward.wgsl, then rmsnorm_backward.wgsl).
struct Params { rows: u32, n: u32, _pad0: u32, _pad1: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;          // (rows, n)
@group(0) @binding(2) var<storage, read> z: array<f32>;          // (rows, n)
@group(0) @binding(3) var<storage, read> w: array<f32>;          // (n)
@group(0) @binding(4) var<storage, read_write> y: array<f32>;    // (rows, n)
@group(0) @binding(5) var<storage, read_write> rstd: array<f32>; // (rows)

@compute @workgroup_size(64)
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
    let g = z[base + i];
    y[base + i] = w[i] * (x[base + i] * s) * (g / (1.0 + exp(-g)));
  }
}
