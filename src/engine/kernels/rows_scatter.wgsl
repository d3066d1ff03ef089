// rows_scatter: dst[rows[i], :] = src[i, :] for i < count rows of n values. Splices the vision
// tower's merged image embeddings into the text embeddings at the images' token spans (in order,
// as transformers' masked_scatter does).
struct Params { count: u32, n: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;      // (count, n)
@group(0) @binding(2) var<storage, read> rows: array<u32>;     // (count)
@group(0) @binding(3) var<storage, read_write> dst: array<f32>; // (T, n)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.count * p.n) { return; }
  dst[rows[idx / p.n] * p.n + idx % p.n] = src[idx];
}
