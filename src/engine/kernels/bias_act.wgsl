// bias_act: y[r, i] = act(y[r, i] + b[i]) in place, for the vision tower's biased linears:
// ACT 0 = none, 1 = GELU with the tanh approximation (transformers' "gelu_pytorch_tanh", the
// blocks' MLP), 2 = exact GELU x·Φ(x) (nn.GELU(), the patch merger's MLP). WGSL has no erf: it is
// Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below f32 rounding of the result's other terms).
const ACT: u32 = {{ACT}}u;

struct Params { rows: u32, n: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> b: array<f32>;       // (n)
@group(0) @binding(2) var<storage, read_write> y: array<f32>; // (rows, n)

// tanh from exp(−2|u|) ≤ 1: no overflow for large |u|.
fn tanh_safe(u: f32) -> f32 {
  let e = exp(-2.0 * abs(u));
  return sign(u) * (1.0 - e) / (1.0 + e);
}

fn erf_approx(x: f32) -> f32 {
  let a = abs(x);
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(x) * (1.0 - poly * exp(-a * a));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.rows * p.n) { return; }
  let v = y[idx] + b[idx % p.n];
  if (ACT == 1u) {
    y[idx] = 0.5 * v * (1.0 + tanh_safe(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  } else if (ACT == 2u) {
    y[idx] = 0.5 * v * (1.0 + erf_approx(v * 0.7071067811865476));
  } else {
    y[idx] = v;
  }
}
