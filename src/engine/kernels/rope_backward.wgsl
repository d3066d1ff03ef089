// rope_backward: RoPE ("rotate-half", specs/qwen3.md §1) rotates each pair (i, i + d/2) by the angle
// a_i = position · inv_freq[i], so its backward is the inverse rotation of the gradient, in place:
//   dx[i]     =  dy[i] · cos a_i + dy[i+h] · sin a_i
//   dx[i + h] = −dy[i] · sin a_i + dy[i+h] · cos a_i        h = d/2
// over the first 2·half dims of each head (rope.wgsl's partial rotary); cos/sin come from the packed
// batch's table, the very values the forward rotated with.

struct Params {
  tokens: u32,
  heads: u32,
  head_dim: u32,
  half: u32,          // rotated pairs per head (head_dim / 2 unless partial)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> grad: array<f32>;   // (T, heads, head_dim)
@group(0) @binding(2) var<storage, read> rope: array<vec2f>;       // (T, half): cos, sin

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let half = p.half;
  let i = gid.x + gid.y * 65535u * 64u;
  if (i >= p.tokens * p.heads * half) { return; }
  let j = i % half;
  let th = i / half;              // token · heads + head
  let t = th / p.heads;
  let cs = rope[t * half + j];
  let base = th * p.head_dim;
  let g1 = grad[base + j];
  let g2 = grad[base + j + half];
  grad[base + j] = g1 * cs.x + g2 * cs.y;
  grad[base + j + half] = g2 * cs.x - g1 * cs.y;
}
