// matmul_backward: C (+)= alpha · op(A) · op(B), the one GEMM every backward step is made of.
//   linear dX      = dY · W         A = dY (T, out)           B = W (out, in)
//   linear dW     += dYᵀ · X        A = dY (T, out), transposed B = X (T, in)
//   LM head logits = h · E_chunkᵀ   B = E rows, transposed
//   LoRA dA, dB, dX, u = A·x        the same shapes with r in place of out/in
// op(A) is (M, K), op(B) is (K, N), C is (M, N) row-major with leading dimension ldc.
// Register-blocked without workgroup memory: each invocation owns a 4×4 block of C, which is the
// fastest layout on software adapters (specs/webgpu-without-a-gpu.md §5) and correct on all.
// Out-of-range rows/columns read a clamped (valid) address and are simply not written back, so the
// inner loop has no branches.
// B may be a stored weight: it is read as weightLoads (weight-loads.ts) says, f32 bits or packed halves
// (element 2i in the low half of word i) as `array<u32>`, or native `array<f16>` with shader-f16;
// every load widens to f32 and all accumulation is f32.
{{ENABLE_F16}}
const A_TRANSPOSED: bool = {{A_TRANSPOSED}};
const B_TRANSPOSED: bool = {{B_TRANSPOSED}};

struct Params {
  M: u32, N: u32, K: u32,
  a_offset: u32, lda: u32,   // element offset of op(A)'s (0,0) and row stride of A as stored
  b_offset: u32, ldb: u32,
  c_offset: u32, ldc: u32,
  accumulate: u32,           // 1: C += alpha·AB, 0: C = alpha·AB
  alpha: f32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<{{B_ELEM}}>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

// Address of op(A)[m, k] and op(B)[k, n] inside their buffers.
fn a_index(m: u32, k: u32) -> u32 {
  if (A_TRANSPOSED) { return p.a_offset + k * p.lda + m; }
  return p.a_offset + m * p.lda + k;
}
fn b_index(k: u32, n: u32) -> u32 {
  if (B_TRANSPOSED) { return p.b_offset + n * p.ldb + k; }
  return p.b_offset + k * p.ldb + n;
}
fn load_b(i: u32) -> f32 {
  return {{LOAD_B}};
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let m0 = gid.y * 4u;
  let n0 = gid.x * 4u;
  if (m0 >= p.M || n0 >= p.N) { return; }
  let mlast = p.M - 1u;
  let nlast = p.N - 1u;
  let m = vec4u(m0, min(m0 + 1u, mlast), min(m0 + 2u, mlast), min(m0 + 3u, mlast));
  let n = vec4u(n0, min(n0 + 1u, nlast), min(n0 + 2u, nlast), min(n0 + 3u, nlast));
  var acc0 = vec4f(0.0);
  var acc1 = vec4f(0.0);
  var acc2 = vec4f(0.0);
  var acc3 = vec4f(0.0);
  for (var k = 0u; k < p.K; k++) {
    let av = vec4f(a[a_index(m.x, k)], a[a_index(m.y, k)], a[a_index(m.z, k)], a[a_index(m.w, k)]);
    let bv = vec4f(load_b(b_index(k, n.x)), load_b(b_index(k, n.y)), load_b(b_index(k, n.z)), load_b(b_index(k, n.w)));
    acc0 += av.x * bv;
    acc1 += av.y * bv;
    acc2 += av.z * bv;
    acc3 += av.w * bv;
  }
  let rows = array<vec4f, 4>(acc0, acc1, acc2, acc3);
  for (var i = 0u; i < 4u; i++) {
    let mi = m0 + i;
    if (mi >= p.M) { break; }
    for (var j = 0u; j < 4u; j++) {
      let nj = n0 + j;
      if (nj >= p.N) { break; }
      let idx = p.c_offset + mi * p.ldc + nj;
      var value = p.alpha * rows[i][j];
      if (p.accumulate != 0u) { value += c[idx]; }
      c[idx] = value;
    }
  }
}
