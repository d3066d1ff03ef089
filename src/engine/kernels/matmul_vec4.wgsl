// matmul_vec4: matmul.wgsl's contract (y = scale·x·Wᵀ, MODE 0/1/2, f32 or f16 W) for K a multiple
// of 4, with x and W read as 4-wide vectors (one load per 4 values: on software adapters every
// scalar load is a separate, bounds-checked gather). w_offset must be a multiple of 4.
// Each invocation owns 4 rows × 4 columns of y; clamped reads, unwritten out-of-range outputs.
{{ENABLE_F16}}
const MODE: u32 = {{MODE}}u;

struct Params {
  M: u32, N: u32, K: u32, w_offset: u32,
  ldy: u32, y_offset: u32, _pad0: u32, _pad1: u32,
  scale: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4f>;
@group(0) @binding(2) var<storage, read> w: array<{{W_VEC}}>;
@group(0) @binding(3) var<storage, read> r: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

// W[4i .. 4i+4) as f32. f32 storage: W_VEC = vec4u, W_LOAD4 = bitcast<vec4f>(v);
// f16 storage: W_VEC = vec2u (4 packed halves), W_LOAD4 = vec4f(unpack2x16float(v.x), unpack2x16float(v.y));
// or, with shader-f16, W_VEC = vec4<f16>, W_LOAD4 = vec4f(v) (the same bytes, read natively).
fn load_w4(i: u32) -> vec4f {
  let v = w[i];
  return {{W_LOAD4}};
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let n0 = gid.x * 4u;
  let m0 = gid.y * 4u;
  if (n0 >= p.N || m0 >= p.M) { return; }
  let K4 = p.K / 4u;
  let mlast = p.M - 1u;
  let nlast = p.N - 1u;
  let xr = vec4u(m0, min(m0 + 1u, mlast), min(m0 + 2u, mlast), min(m0 + 3u, mlast)) * K4;
  let wr = vec4u(n0, min(n0 + 1u, nlast), min(n0 + 2u, nlast), min(n0 + 3u, nlast)) * K4 + vec4u(p.w_offset / 4u);
  var acc0 = vec4f(0.0);
  var acc1 = vec4f(0.0);
  var acc2 = vec4f(0.0);
  var acc3 = vec4f(0.0);
  for (var k = 0u; k < K4; k++) {
    let w0 = load_w4(wr.x + k);
    let w1 = load_w4(wr.y + k);
    let w2 = load_w4(wr.z + k);
    let w3 = load_w4(wr.w + k);
    let x0 = x[xr.x + k];
    let x1 = x[xr.y + k];
    let x2 = x[xr.z + k];
    let x3 = x[xr.w + k];
    acc0 += vec4f(dot(x0, w0), dot(x0, w1), dot(x0, w2), dot(x0, w3));
    acc1 += vec4f(dot(x1, w0), dot(x1, w1), dot(x1, w2), dot(x1, w3));
    acc2 += vec4f(dot(x2, w0), dot(x2, w1), dot(x2, w2), dot(x2, w3));
    acc3 += vec4f(dot(x3, w0), dot(x3, w1), dot(x3, w2), dot(x3, w3));
  }
  let rows = array<vec4f, 4>(acc0, acc1, acc2, acc3);
  for (var i = 0u; i < 4u; i++) {
    let m = m0 + i;
    if (m >= p.M) { break; }
    for (var j = 0u; j < 4u; j++) {
      let n = n0 + j;
      if (n >= p.N) { break; }
      let idx = m * p.ldy + p.y_offset + n;
      var v = p.scale * rows[i][j];
      if (MODE == 1u) { v += y[idx]; }
      if (MODE == 2u) { v += r[idx]; }
      y[idx] = v;
    }
  }
}
