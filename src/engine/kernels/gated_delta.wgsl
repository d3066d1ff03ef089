// gated_delta: the gated delta rule of Qwen3.5's linear-attention layers in its recurrent form
// (transformers' torch_recurrent_gated_delta_rule; the chunked form computes the same function).
// Per sequence and value head h, the state S (dk × dv) starts at zero (or at the sequence's saved
// state when WITH_STATE) and for each token t, with q = scale·l2norm(q), k = l2norm(k) of key head
// h / (Hv/Hk), α = exp(g), β:
//   S ← α S;  δ = β (v − Sᵀk);  S ← S + k δᵀ;  o = Sᵀq
// Columns of S never mix, so one invocation owns column j of S (dk registers) and walks the
// sequence's tokens in order: exact, and parallel over (sequence, head, column). With WITH_STATE
// the final state is written back (prefill and decode: it replaces the KV cache of these layers).
const DK: u32 = {{DK}}u;
const WITH_STATE: bool = {{WITH_STATE}};

struct Params { seqs: u32, T: u32, hk: u32, hv: u32, dv: u32, v_offset: u32, v_stride: u32, scale: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qk: array<f32>;           // (T, 2·Hk, dk): l2-normalized q heads, then k heads
@group(0) @binding(2) var<storage, read> v: array<f32>;            // v[v_offset + t·v_stride + h·dv + j]
@group(0) @binding(3) var<storage, read> gb: array<vec2f>;         // (T, Hv): g, β
@group(0) @binding(4) var<storage, read> seqs: array<vec4u>;       // per sequence: first row, rows, state slot, _
@group(0) @binding(5) var<storage, read_write> state: array<f32>;  // (slots, Hv, dk, dv)
@group(0) @binding(6) var<storage, read_write> out: array<f32>;    // (T, Hv, dv)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * 65535u * 64u;
  if (i >= p.seqs * p.hv * p.dv) { return; }
  let j = i % p.dv;
  let h = (i / p.dv) % p.hv;
  let sq = seqs[i / (p.dv * p.hv)];
  let q_at = h / (p.hv / p.hk) * DK;   // offset of the key head in a token's q (k: + Hk·dk)
  let k_at = q_at + p.hk * DK;
  let sbase = (sq.z * p.hv + h) * DK * p.dv + j;
  var s: array<f32, DK>;
  for (var e = 0u; e < DK; e++) { s[e] = select(0.0, state[sbase + e * p.dv], WITH_STATE); }
  for (var t = sq.x; t < min(sq.x + sq.y, p.T); t++) { // T: rows of the pack, a bound on any table entry
    let row = t * 2u * p.hk * DK;
    let gbt = gb[t * p.hv + h];
    let alpha = exp(gbt.x);
    var kv = 0.0;
    for (var e = 0u; e < DK; e++) {
      s[e] *= alpha;
      kv += s[e] * qk[row + k_at + e];
    }
    let delta = gbt.y * (v[p.v_offset + t * p.v_stride + h * p.dv + j] - kv);
    var o = 0.0;
    for (var e = 0u; e < DK; e++) {
      s[e] += qk[row + k_at + e] * delta;
      o += s[e] * qk[row + q_at + e];
    }
    out[(t * p.hv + h) * p.dv + j] = o * p.scale;
  }
  if (WITH_STATE) {
    for (var e = 0u; e < DK; e++) { state[sbase + e * p.dv] = s[e]; }
  }
}
