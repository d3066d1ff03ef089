// pos_embed: the vision tower's learned position table resampled to each image's patch grid and
// added to the patch embeddings: x[s, c] += Σ_k weight[s, k] · table[index[s, k], c] over the 4
// bilinear taps the host computed (vision-inputs.ts, as transformers' interpolation indices/weights).
struct Params { rows: u32, n: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> table: array<f32>;    // (num_position_embeddings, n)
@group(0) @binding(2) var<storage, read> index: array<u32>;    // (rows, 4)
@group(0) @binding(3) var<storage, read> weight: array<f32>;   // (rows, 4)
@group(0) @binding(4) var<storage, read_write> x: array<f32>;  // (rows, n)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.rows * p.n) { return; }
  let s = idx / p.n;
  let c = idx % p.n;
  var acc = 0.0;
  for (var k = 0u; k < 4u; k++) { acc += weight[s * 4u + k] * table[index[s * 4u + k] * p.n + c]; }
  x[idx] += acc;
}
