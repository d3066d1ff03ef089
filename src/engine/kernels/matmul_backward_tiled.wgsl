// matmul_backward_tiled: the same contract as matmul_backward.wgsl (C (+)= alpha·op(A)·op(B), either
// operand transposed, B f32 or f16 read as weightLoads in weight-loads.ts says: packed halves in u32 words
// or native `array<f16>`; f32 accumulation), tiled through workgroup memory for real GPUs: a
// 64×64 block of C per workgroup of 16×16 invocations, 4×4 outputs each, K in steps of 16.
// (Workgroup-memory tiling is the slowest choice on software adapters, so the train side picks
// matmul_backward.wgsl there.)
{{ENABLE_F16}}
const A_TRANSPOSED: bool = {{A_TRANSPOSED}};
const B_TRANSPOSED: bool = {{B_TRANSPOSED}};
const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;

struct Params {
  M: u32, N: u32, K: u32,
  a_offset: u32, lda: u32,
  b_offset: u32, ldb: u32,
  c_offset: u32, ldc: u32,
  accumulate: u32,
  alpha: f32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<{{B_ELEM}}>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

var<workgroup> a_tile: array<f32, 1024>; // (BM, BK)
var<workgroup> b_tile: array<f32, 1024>; // (BK, BN)

fn load_a(m: u32, k: u32) -> f32 {
  if (m >= p.M || k >= p.K) { return 0.0; }
  if (A_TRANSPOSED) { return a[p.a_offset + k * p.lda + m]; }
  return a[p.a_offset + m * p.lda + k];
}

fn load_b(k: u32, n: u32) -> f32 {
  if (k >= p.K || n >= p.N) { return 0.0; }
  var i = p.b_offset + k * p.ldb + n;
  if (B_TRANSPOSED) { i = p.b_offset + n * p.ldb + k; }
  return {{LOAD_B}};
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let tid = lid.y * 16u + lid.x;
  let m_base = wid.y * BM;
  let n_base = wid.x * BN;
  var acc: array<f32, 16>;
  for (var i = 0u; i < 16u; i++) { acc[i] = 0.0; }
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    for (var i = 0u; i < 4u; i++) {
      let e = tid + i * 256u;
      a_tile[e] = load_a(m_base + e / BK, k0 + e % BK);
      b_tile[e] = load_b(k0 + e / BN, n_base + e % BN);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      let bv = vec4f(b_tile[kk * BN + lid.x * 4u], b_tile[kk * BN + lid.x * 4u + 1u], b_tile[kk * BN + lid.x * 4u + 2u], b_tile[kk * BN + lid.x * 4u + 3u]);
      for (var i = 0u; i < 4u; i++) {
        let av = a_tile[(lid.y * 4u + i) * BK + kk];
        acc[i * 4u] += av * bv.x;
        acc[i * 4u + 1u] += av * bv.y;
        acc[i * 4u + 2u] += av * bv.z;
        acc[i * 4u + 3u] += av * bv.w;
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let m = m_base + lid.y * 4u + i;
    if (m >= p.M) { break; }
    for (var j = 0u; j < 4u; j++) {
      let n = n_base + lid.x * 4u + j;
      if (n >= p.N) { break; }
      let idx = p.c_offset + m * p.ldc + n;
      var value = p.alpha * acc[i * 4u + j];
      if (p.accumulate != 0u) { value += c[idx]; }
      c[idx] = value;
    }
  }
}
