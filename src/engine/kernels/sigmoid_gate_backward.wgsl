// sigmoid_gate_backward: y = x ⊙ σ(g) (sigmoid_gate.wgsl), so
//   dx = dy ⊙ σ(g),  dg = dy ⊙ x ⊙ σ(g)(1 − σ(g))   (dg written into the same strided view as g)
struct Params { rows: u32, n: u32, g_offset: u32, g_stride: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;          // (rows, n)
@group(0) @binding(2) var<storage, read> gate: array<f32>;       // strided
@group(0) @binding(3) var<storage, read> dy: array<f32>;         // (rows, n)
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;   // (rows, n)
@group(0) @binding(5) var<storage, read_write> dgate: array<f32>; // strided, as gate

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.rows * p.n) { return; }
  let gi = p.g_offset + (idx / p.n) * p.g_stride + idx % p.n;
  let sig = 1.0 / (1.0 + exp(-gate[gi]));
  let d = dy[idx];
  dx[idx] = d * sig;
  dgate[gi] = d * x[idx] * sig * (1.0 - sig);
}
