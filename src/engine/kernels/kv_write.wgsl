// kv_write: scatter each token's k and v rows (K·d wide) into the KV cache at its meta.kvSlot row,
// rounded to the cache's element type (KV_ELEM: f32, or f16 where shader-f16 exists; kv-cache.ts).
{{ENABLE_F16}}
struct Params { T: u32, width: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> k: array<f32>;      // (T, width)
@group(0) @binding(2) var<storage, read> v: array<f32>;      // (T, width)
@group(0) @binding(3) var<storage, read> tok_meta: array<u32>;   // (T, 4): kvBase, position, kvSlot, seq
@group(0) @binding(4) var<storage, read_write> cache_k: array<{{KV_ELEM}}>; // (rows, width)
@group(0) @binding(5) var<storage, read_write> cache_v: array<{{KV_ELEM}}>; // (rows, width)

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.T * p.width) { return; }
  let t = idx / p.width;
  let i = idx % p.width;
  let dst = tok_meta[t * 4u + 2u] * p.width + i;
  cache_k[dst] = {{KV_ELEM}}(k[idx]);
  cache_v[dst] = {{KV_ELEM}}(v[idx]);
}
