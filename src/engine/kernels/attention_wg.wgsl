// attention_wg: attention.wgsl's contract (same bindings, outputs and packed-token metadata) with
// one WORKGROUP per (token, head) instead of one invocation, for real GPUs: decode serves only
// B·H (token, head) pairs, far too few invocations to fill a GPU. Keys are processed in blocks:
// the workgroup computes a block's scores together (one key per invocation), takes their max and
// sum with a tree reduction, then each invocation accumulates its own slice of the head dims
// over the block. Online softmax across blocks, as in attention.wgsl.
// K and V rows are KV_ELEM (f16 in an f16 KV cache), read into f32: every sum accumulates in f32.
{{ENABLE_F16}}
const HEAD_DIM: u32 = {{HEAD_DIM}}u;
const WG: u32 = 64u;
const BLOCK: u32 = 256u;
// head dims owned by each invocation: i = lid + c·WG
const OWN: u32 = (HEAD_DIM + WG - 1u) / WG;

struct Params { T: u32, H: u32, KV: u32, _pad: u32, scale: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;     // (T, H, d)
@group(0) @binding(2) var<storage, read> kb: array<{{KV_ELEM}}>;    // (rows, KV, d)
@group(0) @binding(3) var<storage, read> vb: array<{{KV_ELEM}}>;    // (rows, KV, d)
@group(0) @binding(4) var<storage, read> tok_meta: array<u32>;  // (T, 4): kvBase, position, kvSlot, seq
@group(0) @binding(5) var<storage, read_write> out: array<f32>; // (T, H, d)
@group(0) @binding(6) var<storage, read_write> lse: array<f32>; // (T, H)

var<workgroup> qs: array<f32, HEAD_DIM>;
var<workgroup> scores: array<f32, BLOCK>;
var<workgroup> red: array<f32, WG>;

fn reduce(lid: u32, v: f32, is_max: bool) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var o = WG / 2u; o > 0u; o >>= 1u) {
    if (lid < o) {
      red[lid] = select(red[lid] + red[lid + o], max(red[lid], red[lid + o]), is_max);
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid3: vec3u) {
  let th = wid.x + wid.y * 65535u;
  if (th >= p.T * p.H) { return; }
  let lid = lid3.x;
  let t = th / p.H;
  let h = th % p.H;
  let g = h / (p.H / p.KV);
  let kv_base = tok_meta[t * 4u];
  let nkeys = tok_meta[t * 4u + 1u] + 1u;
  for (var i = lid; i < HEAD_DIM; i += WG) { qs[i] = q[th * HEAD_DIM + i] * p.scale; }
  workgroupBarrier();
  var acc: array<f32, OWN>;
  for (var c = 0u; c < OWN; c++) { acc[c] = 0.0; }
  var m = -3.0e38;
  var s = 0.0;
  for (var b0 = 0u; b0 < nkeys; b0 += BLOCK) {
    let n = min(BLOCK, nkeys - b0);
    var local_max = -3.0e38;
    for (var j = lid; j < n; j += WG) {
      let kbase = ((kv_base + b0 + j) * p.KV + g) * HEAD_DIM;
      var score = 0.0;
      for (var i = 0u; i < HEAD_DIM; i++) { score += qs[i] * f32(kb[kbase + i]); }
      scores[j] = score;
      local_max = max(local_max, score);
    }
    let m_new = max(m, reduce(lid, local_max, true));
    var local_sum = 0.0;
    for (var j = lid; j < n; j += WG) {
      let e = exp(scores[j] - m_new);
      scores[j] = e;
      local_sum += e;
    }
    let block_sum = reduce(lid, local_sum, false); // its barriers also publish scores[]
    let corr = exp(m - m_new);
    s = s * corr + block_sum;
    for (var c = 0u; c < OWN; c++) {
      let i = lid + c * WG;
      if (i < HEAD_DIM) {
        var a = acc[c] * corr;
        for (var j = 0u; j < n; j++) { a += scores[j] * f32(vb[((kv_base + b0 + j) * p.KV + g) * HEAD_DIM + i]); }
        acc[c] = a;
      }
    }
    m = m_new;
    workgroupBarrier(); // scores[] is rewritten by the next block
  }
  let inv = 1.0 / s;
  for (var c = 0u; c < OWN; c++) {
    let i = lid + c * WG;
    if (i < HEAD_DIM) { out[th * HEAD_DIM + i] = acc[c] * inv; }
  }
  if (lid == 0u) { lse[th] = m + log(s); }
}
