// embedding_backward: x[t] = E[ids[t]], so dE[ids[t]] += dx[t]. Several tokens can share an id and
// WGSL has no float atomics, so each invocation owns one column of E and walks all tokens in order.

struct Params {
  tokens: u32,
  dim: u32,
  de_offset: u32,   // element offset of dE's row 0 in its buffer
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;          // (T,)
@group(0) @binding(2) var<storage, read> dx: array<f32>;           // (T, D)
@group(0) @binding(3) var<storage, read_write> de: array<f32>;     // (V, D)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let col = gid.x;
  if (col >= p.dim) { return; }
  for (var t = 0u; t < p.tokens; t++) {
    let idx = p.de_offset + ids[t] * p.dim + col;
    de[idx] += dx[t * p.dim + col];
  }
}
