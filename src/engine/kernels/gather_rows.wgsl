// gather_rows: out[i] = x[index[i]] for rows of `width` values (the hidden states whose logits are
// needed: scored positions, or the last token of each generating sequence).
struct Params { rows: u32, width: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;       // (T, width)
@group(0) @binding(2) var<storage, read> index: array<u32>;   // (rows)
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // (rows, width)

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.rows * p.width) { return; }
  let r = idx / p.width;
  let i = idx % p.width;
  out[idx] = x[index[r] * p.width + i];
}
