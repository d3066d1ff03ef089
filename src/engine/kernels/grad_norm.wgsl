// grad_norm: global L2 norm of all trainable gradients and PyTorch's clip coefficient,
// computed on the GPU so that only one scalar is read back per optimizer step.
//   PASS 0 `sumsq_partial`: each workgroup reduces a strided slice of one gradient tensor into partials[slot]
//   PASS 1 `finalize`:      norm = sqrt(Σ partials); coef = min(1, max_norm / (norm + 1e-6))  (clip_grad_norm_)

struct Params {
  count: u32,        // elements of this gradient tensor (sumsq_partial) / number of partials (finalize)
  slot: u32,         // first partial slot of this tensor
  max_norm: f32,     // <= 0: no clipping
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> grad: array<f32>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;
@group(0) @binding(3) var<storage, read_write> result: array<f32>;    // [norm, clip coefficient]

const PASS: u32 = {{PASS}}u;
const WG: u32 = 64u;
var<workgroup> red: array<f32, WG>;

fn sumsq_partial(group: u32, groups: u32, lane: u32) {
  var acc = 0.0;
  for (var i = group * WG + lane; i < p.count; i += groups * WG) {
    let g = grad[i];
    acc += g * g;
  }
  red[lane] = acc;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
    if (lane < stride) { red[lane] += red[lane + stride]; }
    workgroupBarrier();
  }
  if (lane == 0u) { partials[p.slot + group] = red[0]; }
}

fn finalize() {
  var total = 0.0;
  for (var i = 0u; i < p.count; i++) { total += partials[i]; }
  let norm = sqrt(total);
  var coef = 1.0;
  if (p.max_norm > 0.0) { coef = min(1.0, p.max_norm / (norm + 1e-6)); }
  result[0] = norm;
  result[1] = coef;
}

// PASS 0: grid (groups, 1, 1) per tensor; PASS 1: a single workgroup, lane 0 does the sum.
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lane: u32) {
  if (PASS == 0u) {
    sumsq_partial(wg.x, nwg.x, lane);
  } else if (lane == 0u) {
    finalize();
  }
}
