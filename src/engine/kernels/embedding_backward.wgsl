// embedding_backward: x[t] = E[ids[t]], so dE[ids[t]] += dx[t]. Several tokens can share an id and
// WGSL has no float atomics, so each invocation owns one column of E and walks all tokens in order.
// dE may be split by rows (like a large embedding): this dispatch updates rows [row_start, row_start + rows).

struct Params {
  tokens: u32,
  dim: u32,
  row_start: u32,   // first vocabulary row held by `de`
  rows: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;          // (T,)
@group(0) @binding(2) var<storage, read> dx: array<f32>;           // (T, D)
@group(0) @binding(3) var<storage, read_write> de: array<f32>;     // (rows, D)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let col = gid.x;
  if (col >= p.dim) { return; }
  for (var t = 0u; t < p.tokens; t++) {
    let id = ids[t];
    if (id >= p.row_start && id < p.row_start + p.rows) {
      let idx = (id - p.row_start) * p.dim + col;
      de[idx] += dx[t * p.dim + col];
    }
  }
}
