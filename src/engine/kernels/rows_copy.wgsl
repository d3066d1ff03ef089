// rows_copy: dst[dst_offset + r·dst_stride + i] = src[src_offset + r·src_stride + i] for rows r of n
// values. Qwen3.5's q_proj emits (query, gate) halves per head, (T, H, 2d): this takes the queries
// out for q_norm, and in backward puts their gradient back into the q_proj output's gradient.
struct Params { rows: u32, n: u32, src_offset: u32, src_stride: u32, dst_offset: u32, dst_stride: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.rows * p.n) { return; }
  let r = idx / p.n;
  let i = idx % p.n;
  dst[p.dst_offset + r * p.dst_stride + i] = src[p.src_offset + r * p.src_stride + i];
}
