// layernorm_backward: the gradients of layernorm.wgsl, y = (x − mean)·rstd ⊙ w + b over rows of n
// (biased variance, as torch.nn.LayerNorm):
//   x̂ = (x − mean)·rstd,  g = dy ⊙ w
//   dx = rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂))          PASS 0, one invocation per row
//   dw += Σ_rows dy ⊙ x̂                                   PASS 1, one invocation per column
//   (db += Σ_rows dy is bias_backward.wgsl's column sum.)
// The vision tower's norm1/norm2 and the merger's norm: dx for LoRA on the tower, dw too when full
// fine-tuning trains the tower. PASS 0 keeps each row's (mean, rstd) in `stats` for PASS 1.
// accumulate = 1 adds to dx (the residual stream's share).
const PASS: u32 = {{PASS}}u;
struct Params { rows: u32, n: u32, accumulate: u32, _pad: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;           // (rows, n) the norm's input
@group(0) @binding(2) var<storage, read> w: array<f32>;           // (n)
@group(0) @binding(3) var<storage, read> dy: array<f32>;          // (rows, n)
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;    // (rows, n)
@group(0) @binding(5) var<storage, read_write> stats: array<f32>; // (rows, 2) mean, rstd: written by PASS 0, read by PASS 1
@group(0) @binding(6) var<storage, read_write> dw: array<f32>;    // (n) only used by PASS 1

fn dx_pass(row: u32) {
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
  stats[2u * row] = mean;
  stats[2u * row + 1u] = rstd;
}

// Sums over all rows in one invocation per weight element (no float atomics in WGSL).
fn dweight_pass(i: u32) {
  if (i >= p.n) { return; }
  var acc = 0.0;
  for (var row = 0u; row < p.rows; row++) {
    acc += dy[row * p.n + i] * (x[row * p.n + i] - stats[2u * row]) * stats[2u * row + 1u];
  }
  dw[i] += acc;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  if (PASS == 0u) {
    let row = gid.x + gid.y * 65535u * 64u;
    if (row < p.rows) { dx_pass(row); }
  } else {
    dweight_pass(gid.x + gid.y * 65535u * 64u);
  }
}
