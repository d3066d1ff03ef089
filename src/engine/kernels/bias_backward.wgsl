// bias_backward: the gradient of an added bias (bias_act.wgsl's y = act(x·Wᵀ + b), taken after the
// activation's backward) or of LayerNorm's β: db += Σ_rows dy, one invocation per column summing
// down its rows (no float atomics in WGSL). The vision tower's linears and LayerNorms under full
// fine-tuning; the language model's linears have no bias.
struct Params { rows: u32, n: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> dy: array<f32>;       // (rows, n)
@group(0) @binding(2) var<storage, read_write> db: array<f32>; // (n)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * 65535u * 64u;
  if (i >= p.n) { return; }
  var acc = 0.0;
  for (var row = 0u; row < p.rows; row++) { acc += dy[row * p.n + i]; }
  db[i] += acc;
}
