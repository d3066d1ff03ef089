// attention: causal softmax attention of packed tokens, GQA. Token t (query head h) attends to the
// keys at rows kvBase .. kvBase+position of the K/V buffer (the packed k/v when scoring, the KV
// cache when generating; see internals.ts PackedBatch), with kv head h / (H/K):
//   out[t,h] = Σ_j softmax_j(q·k_j·scale) v_j,  lse[t,h] = log Σ_j exp(q·k_j·scale)
// One invocation per (token, head), online softmax in registers (no T×T scores in memory).
// K and V rows are KV_ELEM (f16 in an f16 KV cache), read into f32: every sum accumulates in f32.
{{ENABLE_F16}}
const HEAD_DIM: u32 = {{HEAD_DIM}}u;

struct Params { T: u32, H: u32, KV: u32, _pad: u32, scale: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;     // (T, H, d)
@group(0) @binding(2) var<storage, read> kb: array<{{KV_ELEM}}>;    // (rows, KV, d)
@group(0) @binding(3) var<storage, read> vb: array<{{KV_ELEM}}>;    // (rows, KV, d)
@group(0) @binding(4) var<storage, read> tok_meta: array<u32>;  // (T, 4): kvBase, position, kvSlot, seq
@group(0) @binding(5) var<storage, read_write> out: array<f32>; // (T, H, d)
@group(0) @binding(6) var<storage, read_write> lse: array<f32>; // (T, H)

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let th = gid.x + gid.y * 65535u * 64u;
  if (th >= p.T * p.H) { return; }
  let t = th / p.H;
  let h = th % p.H;
  let g = h / (p.H / p.KV);
  let kv_base = tok_meta[t * 4u];
  let pos = tok_meta[t * 4u + 1u];
  var qv: array<f32, HEAD_DIM>;
  var acc: array<f32, HEAD_DIM>;
  let qbase = th * HEAD_DIM;
  for (var i = 0u; i < HEAD_DIM; i++) {
    qv[i] = q[qbase + i] * p.scale;
    acc[i] = 0.0;
  }
  var m = -3.0e38;
  var s = 0.0;
  for (var j = 0u; j <= pos; j++) {
    let kbase = ((kv_base + j) * p.KV + g) * HEAD_DIM;
    var score = 0.0;
    for (var i = 0u; i < HEAD_DIM; i++) { score += qv[i] * f32(kb[kbase + i]); }
    let m_new = max(m, score);
    let corr = exp(m - m_new);
    let e = exp(score - m_new);
    s = s * corr + e;
    for (var i = 0u; i < HEAD_DIM; i++) { acc[i] = acc[i] * corr + e * f32(vb[kbase + i]); }
    m = m_new;
  }
  let inv = 1.0 / s;
  for (var i = 0u; i < HEAD_DIM; i++) { out[qbase + i] = acc[i] * inv; }
  lse[th] = m + log(s);
}
