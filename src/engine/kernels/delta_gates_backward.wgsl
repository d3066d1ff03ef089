// delta_gates_backward: delta_gates.wgsl's g = −exp(A_log)·softplus(a + dt_bias), β = σ(b):
//   da = dg · (−exp(A_log)) · σ(a + dt_bias),  db = dβ · β(1 − β)          PASS 0, per (t, h)
//   dA_log[h] += Σ_t dg·g,  ddt_bias[h] += Σ_t da                           PASS 1, per h (walks all tokens)
const PASS: u32 = {{PASS}}u;
struct Params { count: u32, hv: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;          // (T, Hv)
@group(0) @binding(2) var<storage, read> a_log: array<f32>;      // (Hv)
@group(0) @binding(3) var<storage, read> dt_bias: array<f32>;    // (Hv)
@group(0) @binding(4) var<storage, read> gb: array<vec2f>;       // (T, Hv) forward g, β
@group(0) @binding(5) var<storage, read> dgb: array<vec2f>;      // (T, Hv) dg, dβ
@group(0) @binding(6) var<storage, read_write> da: array<f32>;   // (T, Hv)
@group(0) @binding(7) var<storage, read_write> db: array<f32>;   // (T, Hv)
@group(0) @binding(8) var<storage, read_write> da_log: array<f32>;  // (Hv)
@group(0) @binding(9) var<storage, read_write> ddt_bias: array<f32>; // (Hv)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * 65535u * 64u;
  if (PASS == 0u) {
    if (i >= p.count) { return; }
    let h = i % p.hv;
    let d = dgb[i];
    let beta = gb[i].y;
    da[i] = -d.x * exp(a_log[h]) / (1.0 + exp(-(a[i] + dt_bias[h])));
    db[i] = d.y * beta * (1.0 - beta);
  } else {
    if (i >= p.hv) { return; }
    var dlog = 0.0;
    var ddt = 0.0;
    for (var r = i; r < p.count; r += p.hv) {
      dlog += dgb[r].x * gb[r].x;
      ddt += da[r];
    }
    da_log[i] += dlog;
    ddt_bias[i] += ddt;
  }
}
