// sigmoid_gate: Qwen3.5's attention output gate, y = x ⊙ σ(gate), on rows of n values (rows =
// T·heads, n = head_dim); the gate is read from a strided view (the second half of each head's
// q_proj output: offset head_dim, stride 2·head_dim).
struct Params { rows: u32, n: u32, g_offset: u32, g_stride: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // (rows, n)
@group(0) @binding(2) var<storage, read> gate: array<f32>;     // gate[g_offset + r·g_stride + i]
@group(0) @binding(3) var<storage, read_write> y: array<f32>;  // (rows, n)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.rows * p.n) { return; }
  let g = gate[p.g_offset + (idx / p.n) * p.g_stride + idx % p.n];
  y[idx] = x[idx] / (1.0 + exp(-g));
}
