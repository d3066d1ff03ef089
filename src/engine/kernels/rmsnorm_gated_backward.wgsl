// rmsnorm_gated_backward: y = n ⊙ silu(z) with n = w ⊙ x·rstd (rmsnorm_gated.wgsl). Per element:
//   dn = dy · silu(z)                          → rmsnorm_backward.wgsl turns dn into dx and dw
//   dz = dy · n · σ(z)·(1 + z·(1 − σ(z)))
struct Params { count: u32, n: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;          // (rows, n) the norm's input
@group(0) @binding(2) var<storage, read> z: array<f32>;          // (rows, n)
@group(0) @binding(3) var<storage, read> w: array<f32>;          // (n)
@group(0) @binding(4) var<storage, read> rstd: array<f32>;       // (rows) from the forward
@group(0) @binding(5) var<storage, read> dy: array<f32>;         // (rows, n)
@group(0) @binding(6) var<storage, read_write> dn: array<f32>;   // (rows, n)
@group(0) @binding(7) var<storage, read_write> dz: array<f32>;   // (rows, n)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * 65535u * 64u;
  if (i >= p.count) { return; }
  let g = z[i];
  let sig = 1.0 / (1.0 + exp(-g));
  let d = dy[i];
  dn[i] = d * g * sig;
  dz[i] = d * w[i % p.n] * x[i] * rstd[i / p.n] * sig * (1.0 + g * (1.0 - sig));
}
