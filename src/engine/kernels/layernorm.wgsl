// layernorm: y = (x − mean)·rstd ⊙ w + b over rows of n values, rstd = 1/sqrt(var + eps) (biased
// variance, as torch.nn.LayerNorm). The vision tower's norm1/norm2 and the patch merger's norm.
// One invocation per row (rows = patches, n = the tower's hidden size); two passes over the row
// (mean, then centred squares) so that a large mean does not cancel digits.
struct Params { rows: u32, n: u32, _pad0: u32, _pad1: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;   // (rows, n)
@group(0) @binding(2) var<storage, read> w: array<f32>;   // (n)
@group(0) @binding(3) var<storage, read> b: array<f32>;   // (n)
@group(0) @binding(4) var<storage, read_write> y: array<f32>; // (rows, n)

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let row = gid.x + gid.y * 65535u * 64u;
  if (row >= p.rows) { return; }
  let base = row * p.n;
  var sum = 0.0;
  for (var i = 0u; i < p.n; i++) { sum += x[base + i]; }
  let mean = sum / f32(p.n);
  var ss = 0.0;
  for (var i = 0u; i < p.n; i++) {
    let c = x[base + i] - mean;
    ss += c * c;
  }
  let rstd = inverseSqrt(ss / f32(p.n) + p.eps);
  for (var i = 0u; i < p.n; i++) { y[base + i] = (x[base + i] - mean) * rstd * w[i] + b[i]; }
}
