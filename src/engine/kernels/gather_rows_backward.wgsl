// gather_rows_backward: gather_rows copied out[i] = x[index[i]]; its backward adds each gathered
// row's gradient back into the full-size gradient: dx[index[i]] += dout[i]. Indices are distinct
// (each scored position appears once), so no two invocations write the same element.
struct Params { rows: u32, width: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> dout: array<f32>;      // (rows, width)
@group(0) @binding(2) var<storage, read> index: array<u32>;     // (rows)
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;  // (T, width)

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.rows * p.width) { return; }
  let r = idx / p.width;
  let i = idx % p.width;
  let j = index[r] * p.width + i;
  dx[j] = dx[j] + dout[idx];
}
