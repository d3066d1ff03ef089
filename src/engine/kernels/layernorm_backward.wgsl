// layernorm_backward: the input gradient of layernorm.wgsl, y = (x − mean)·rstd ⊙ w + b over rows
// of n (biased variance, as torch.nn.LayerNorm), recomputing mean and rstd from x:
//   x̂ = (x − mean)·rstd,  g = dy ⊙ w
//   dx = rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂))
// The vision tower's norm1/norm2 and the merger's norm (their w and b frozen: LoRA on the tower).
// One invocation per row, as the forward; accumulate = 1 adds to dx (the residual stream's share).
struct Params { rows: u32, n: u32, accumulate: u32, _pad: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // (rows, n) the norm's input
@group(0) @binding(2) var<storage, read> w: array<f32>;        // (n)
@group(0) @binding(3) var<storage, read> dy: array<f32>;       // (rows, n)
@group(0) @binding(4) var<storage, read_write> dx: array<f32>; // (rows, n)

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let row = gid.x + gid.y * 65535u * 64u;
  if (row >= p.rows) { return; }
  let base = row * p.n;
  let nf = f32(p.n);
  var sum = 0.0;
  for (var i = 0u; i < p.n; i++) { sum += x[base + i]; }
  let mean = sum / nf;
  var ss = 0.0;
  for (var i = 0u; i < p.n; i++) {
    let c = x[base + i] - mean;
    ss += c * c;
  }
  let rstd = inverseSqrt(ss / nf + p.eps);
  var g_sum = 0.0;
  var gx_sum = 0.0;
  for (var i = 0u; i < p.n; i++) {
    let g = dy[base + i] * w[i];
    g_sum += g;
    gx_sum += g * (x[base + i] - mean) * rstd;
  }
  let g_mean = g_sum / nf;
  let gx_mean = gx_sum / nf;
  for (var i = 0u; i < p.n; i++) {
    let xhat = (x[base + i] - mean) * rstd;
    var d = rstd * (dy[base + i] * w[i] - g_mean - xhat * gx_mean);
    if (p.accumulate != 0u) { d += dx[base + i]; }
    dx[base + i] = d;
  }
}
