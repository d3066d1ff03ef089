// matmul: y = scale · x·Wᵀ as nn.Linear computes it (W stored [out, in]), with three write modes:
//   MODE 0: y  = scale·x·Wᵀ        MODE 1: y += scale·x·Wᵀ        MODE 2: y = r + scale·x·Wᵀ (residual)
// x (M, K) f32, W (N, K) at element offset w_offset, stored f32 or f16 (W_F16), y (M, ldy) f32
// written at columns [y_offset, y_offset + N). How W is read comes from the engine (weightLoads in
// weight-loads.ts): f32 bits or packed halves as `array<u32>`, or native `array<f16>` with shader-f16;
// every load widens to f32 and all accumulation is f32.
// Register-blocked without workgroup memory: each invocation owns 4 rows × 4 columns of y, the
// fastest layout on software adapters (specs/webgpu-without-a-gpu.md §5). Out-of-range rows and
// columns read a clamped valid address and are not written, so the inner loop has no branches.
{{ENABLE_F16}}
const W_F16: bool = {{W_F16}};
const MODE: u32 = {{MODE}}u;

struct Params {
  M: u32, N: u32, K: u32, w_offset: u32,
  ldy: u32, y_offset: u32, _pad0: u32, _pad1: u32,
  scale: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<{{W_ELEM}}>;
@group(0) @binding(3) var<storage, read> r: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

fn load_w(i: u32) -> f32 {
  return {{LOAD_W}};
}

// Four consecutive weights starting at element i (i is even whenever W_F16: rows have even length).
fn load_w4(i: u32) -> vec4f {
  return {{LOAD_W4}};
}

fn load_x4(i: u32) -> vec4f {
  return vec4f(x[i], x[i + 1u], x[i + 2u], x[i + 3u]);
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let n0 = gid.x * 4u;
  let m0 = gid.y * 4u;
  if (n0 >= p.N || m0 >= p.M) { return; }
  let mlast = p.M - 1u;
  let nlast = p.N - 1u;
  // Row starts of the 4 x rows and the 4 W rows this invocation reads (clamped).
  let xr = vec4u(m0, min(m0 + 1u, mlast), min(m0 + 2u, mlast), min(m0 + 3u, mlast)) * p.K;
  let wr = vec4u(n0, min(n0 + 1u, nlast), min(n0 + 2u, nlast), min(n0 + 3u, nlast)) * p.K + vec4u(p.w_offset);
  // acc[i][j] = dot(x row i, W row j)
  var acc0 = vec4f(0.0);
  var acc1 = vec4f(0.0);
  var acc2 = vec4f(0.0);
  var acc3 = vec4f(0.0);
  let K4 = p.K & ~3u;
  // f16 needs even element offsets for the paired load: true when K is even (checked on load).
  let vec_ok = !W_F16 || (p.K & 1u) == 0u;
  var k = 0u;
  if (vec_ok) {
    for (; k < K4; k += 4u) {
      let w0 = load_w4(wr.x + k);
      let w1 = load_w4(wr.y + k);
      let w2 = load_w4(wr.z + k);
      let w3 = load_w4(wr.w + k);
      let x0 = load_x4(xr.x + k);
      let x1 = load_x4(xr.y + k);
      let x2 = load_x4(xr.z + k);
      let x3 = load_x4(xr.w + k);
      acc0 += vec4f(dot(x0, w0), dot(x0, w1), dot(x0, w2), dot(x0, w3));
      acc1 += vec4f(dot(x1, w0), dot(x1, w1), dot(x1, w2), dot(x1, w3));
      acc2 += vec4f(dot(x2, w0), dot(x2, w1), dot(x2, w2), dot(x2, w3));
      acc3 += vec4f(dot(x3, w0), dot(x3, w1), dot(x3, w2), dot(x3, w3));
    }
  }
  for (; k < p.K; k++) {
    let wv = vec4f(load_w(wr.x + k), load_w(wr.y + k), load_w(wr.z + k), load_w(wr.w + k));
    acc0 += x[xr.x + k] * wv;
    acc1 += x[xr.y + k] * wv;
    acc2 += x[xr.z + k] * wv;
    acc3 += x[xr.w + k] * wv;
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
