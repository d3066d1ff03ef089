// l2norm_backward: y = x · r, r = 1/sqrt(Σ x² + eps) (l2norm.wgsl), so
//   dx = r · (dy − r² · x · (x·dy))
// written into the same strided view the forward read x from (the q/k columns of the conv's input
// gradient). The delta rule's value heads share key heads (transformers' repeat_interleave: value
// head h·group + r reads key head h), so a key head's dy is the sum of its group's rows:
//   dy(t, h) = Σ_{r<group} dy_v[(t·heads + h)·group + r].   One invocation per row (t, h).
struct Params { rows: u32, heads: u32, n: u32, offset: u32, stride: u32, group: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;          // strided, as in the forward
@group(0) @binding(2) var<storage, read> inv: array<f32>;        // (rows) from the forward
@group(0) @binding(3) var<storage, read> dy: array<f32>;         // (rows · group, n)
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;   // strided, as x

fn dy_at(row: u32, i: u32) -> f32 {
  var s = 0.0;
  for (var r = 0u; r < p.group; r++) { s += dy[(row * p.group + r) * p.n + i]; }
  return s;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let row = gid.x + gid.y * 65535u * 64u;
  if (row >= p.rows) { return; }
  let base = p.offset + (row / p.heads) * p.stride + (row % p.heads) * p.n;
  let r = inv[row];
  var dot = 0.0;
  for (var i = 0u; i < p.n; i++) { dot += x[base + i] * dy_at(row, i); }
  let c = r * r * dot;
  for (var i = 0u; i < p.n; i++) { dx[base + i] = r * (dy_at(row, i) - x[base + i] * c); }
}
