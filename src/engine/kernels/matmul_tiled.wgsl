// matmul_tiled: the same contract as matmul.wgsl (y = scale·x·Wᵀ, MODE 0/1/2, f32 or f16 W), with
// the classic 16×16 workgroup-memory tiling that suits real GPUs (it is the slowest choice on
// software adapters, so the engine picks matmul.wgsl there). One output per invocation.
// W is read as weightLoads (weight-loads.ts) says: f32 bits or packed halves (u32), or native f16.
{{ENABLE_F16}}
const MODE: u32 = {{MODE}}u;
const TILE: u32 = 16u;

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

var<workgroup> xs: array<array<f32, 16>, 16>; // [row][k]
var<workgroup> ws: array<array<f32, 16>, 16>; // [col][k]

fn load_w(i: u32) -> f32 {
  return {{LOAD_W}};
}

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n = wid.x * TILE + lid.x;
  let m = wid.y * TILE + lid.y;
  // Tile loads: invocation (lx, ly) loads x[row m, k0+lx] and W[row wid.x*16+ly, k0+lx].
  let wn = wid.x * TILE + lid.y;
  var acc = 0.0;
  for (var k0 = 0u; k0 < p.K; k0 += TILE) {
    let k = k0 + lid.x;
    // Clamped addresses keep every read in bounds; out-of-range values are zeroed by the select.
    let kc = min(k, p.K - 1u);
    xs[lid.y][lid.x] = select(0.0, x[min(m, p.M - 1u) * p.K + kc], m < p.M && k < p.K);
    ws[lid.y][lid.x] = select(0.0, load_w(p.w_offset + min(wn, p.N - 1u) * p.K + kc), wn < p.N && k < p.K);
    workgroupBarrier();
    for (var kk = 0u; kk < TILE; kk++) {
      acc += xs[lid.y][kk] * ws[lid.x][kk];
    }
    workgroupBarrier();
  }
  if (m >= p.M || n >= p.N) { return; }
  let idx = m * p.ldy + p.y_offset + n;
  var v = p.scale * acc;
  if (MODE == 1u) { v += y[idx]; }
  if (MODE == 2u) { v += r[idx]; }
  y[idx] = v;
}
