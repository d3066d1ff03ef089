// swiglu_backward: h = silu(g) ⊙ u with silu(g) = g·σ(g).
//   dg = dh ⊙ u ⊙ σ(g)·(1 + g·(1 − σ(g)))
//   du = dh ⊙ silu(g)

struct Params {
  count: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> gate: array<f32>;         // (T, F) gate_proj output
@group(0) @binding(2) var<storage, read> up: array<f32>;           // (T, F) up_proj output
@group(0) @binding(3) var<storage, read> dh: array<f32>;           // (T, F)
@group(0) @binding(4) var<storage, read_write> dgate: array<f32>;  // (T, F)
@group(0) @binding(5) var<storage, read_write> dup: array<f32>;    // (T, F)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * 65535u * 64u;
  if (i >= p.count) { return; }
  let g = gate[i];
  let sig = 1.0 / (1.0 + exp(-g));
  let d = dh[i];
  dgate[i] = d * up[i] * sig * (1.0 + g * (1.0 - sig));
  dup[i] = d * g * sig;
}
