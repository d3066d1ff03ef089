// rope: rotate-half RoPE in place on (T, heads, head_dim) rows, over the first 2·half dims of each
// head (all of them for Qwen3; partial_rotary_factor · head_dim for Qwen3.5, the rest pass through):
// for i < half,
//   x'[i] = x[i]·cos − x[i+half]·sin,  x'[i+half] = x[i+half]·cos + x[i]·sin
// with cos/sin of token t's angle j taken from the per-token table (T, half, 2) the host computed.
struct Params { T: u32, heads: u32, half: u32, head_dim: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> table: array<f32>; // (T, half, 2): cos, sin
@group(0) @binding(2) var<storage, read_write> x: array<f32>; // (T, heads, head_dim)

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u; // over T·heads·half
  if (idx >= p.T * p.heads * p.half) { return; }
  let j = idx % p.half;
  let th = idx / p.half; // t·heads + h
  let t = th / p.heads;
  let c = table[(t * p.half + j) * 2u];
  let s = table[(t * p.half + j) * 2u + 1u];
  let base = th * p.head_dim;
  let a = x[base + j];
  let b = x[base + j + p.half];
  x[base + j] = a * c - b * s;
  x[base + j + p.half] = b * c + a * s;
}
