// delta_gates: the per-(token, value head) gates of a Gated DeltaNet layer (transformers' Qwen3_5GatedDeltaNet):
//   g = −exp(A_log[h]) · softplus(a + dt_bias[h])   (log decay of the state, ≤ 0)
//   β = σ(b)                                        (write strength)
// from the in_proj_a / in_proj_b outputs a, b (T, Hv). Written interleaved as gb (T, Hv, 2).
struct Params { count: u32, hv: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;         // (T, Hv)
@group(0) @binding(2) var<storage, read> b: array<f32>;         // (T, Hv)
@group(0) @binding(3) var<storage, read> a_log: array<f32>;     // (Hv)
@group(0) @binding(4) var<storage, read> dt_bias: array<f32>;   // (Hv)
@group(0) @binding(5) var<storage, read_write> gb: array<vec2f>; // (T, Hv): g, β

// torch's softplus (threshold 20), with log1p(u) = log(1+u)·u/((1+u)−1) so that small u keep their digits.
fn softplus(x: f32) -> f32 {
  if (x > 20.0) { return x; }
  let u = exp(x);
  let w = 1.0 + u;
  if (w == 1.0) { return u; }
  return log(w) * u / (w - 1.0);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * 65535u * 64u;
  if (i >= p.count) { return; }
  let h = i % p.hv;
  gb[i] = vec2f(-exp(a_log[h]) * softplus(a[i] + dt_bias[h]), 1.0 / (1.0 + exp(-b[i])));
}
