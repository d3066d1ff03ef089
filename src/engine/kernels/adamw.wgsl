// adamw: one decoupled-weight-decay Adam step, PyTorch's torch.optim.AdamW (non-fused) order:
//   w ← w·(1 − lr·wd);  m ← β1 m + (1−β1) g;  v ← β2 v + (1−β2) g²
//   w ← w − (lr / bc1) · m / (sqrt(v) / sqrt(bc2) + eps),   bc_i = 1 − β_i^step
// g is the accumulated gradient times the clip coefficient written by grad_norm.wgsl.

struct Params {
  count: u32,
  lr: f32,
  beta1: f32,
  beta2: f32,
  eps: f32,
  weight_decay: f32,
  step_size: f32,       // lr / bc1
  sqrt_bc2: f32,        // sqrt(1 − β2^step)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> w: array<f32>;
@group(0) @binding(2) var<storage, read> grad: array<f32>;
@group(0) @binding(3) var<storage, read_write> m: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;
@group(0) @binding(5) var<storage, read> norm_result: array<f32>;   // [norm, clip coefficient]

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * 65535u * 64u;
  if (i >= p.count) { return; }
  let g = grad[i] * norm_result[1];
  let wi = w[i] * (1.0 - p.lr * p.weight_decay);
  let mi = p.beta1 * m[i] + (1.0 - p.beta1) * g;
  let vi = p.beta2 * v[i] + (1.0 - p.beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  w[i] = wi - p.step_size * mi / (sqrt(vi) / p.sqrt_bc2 + p.eps);
}
