// conv1d_silu: Qwen3.5's causal depthwise conv of the linear-attention layers, then SiLU, over packed
// tokens (transformers' causal_conv1d_fn / causal_conv1d_update). Channel c of token t, lag m = K−1−k:
//   pre[t,c] = Σ_k w[c,k] · x[t−m, c],  out[t,c] = silu(pre[t,c])
// where inputs before the sequence's first token of this call come from its conv state (the last
// K−1 inputs of earlier calls, oldest first; zeros for a new sequence) when WITH_STATE, else are 0.
// PASS 0 writes out (one invocation per (t, c)). PASS 1 (WITH_STATE only, dispatched after PASS 0)
// shifts this call's inputs into the state (one invocation per (sequence, c)).
const K: u32 = {{KSIZE}}u;
const PASS: u32 = {{PASS}}u;
const WITH_STATE: bool = {{WITH_STATE}};

struct Params { T: u32, C: u32, seqs: u32, _pad: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;          // (T, C)
@group(0) @binding(2) var<storage, read> w: array<f32>;          // (C, K)
@group(0) @binding(3) var<storage, read> tok_meta: array<u32>;   // (T, 4) the packed batch's meta: word 3 = index of the token's sequence in `seqs`
@group(0) @binding(4) var<storage, read> seqs: array<vec4u>;     // per sequence: first row, rows, state slot, _
@group(0) @binding(5) var<storage, read_write> state: array<f32>; // (slots, C, K−1)
@group(0) @binding(6) var<storage, read_write> out: array<f32>;  // (T, C)

fn conv(i: u32) {
  if (i >= p.T * p.C) { return; }
  let t = i / p.C;
  let c = i % p.C;
  let sq = seqs[tok_meta[t * 4u + 3u]];
  let at = t - sq.x; // index of t among this call's rows of its sequence
  var acc = 0.0;
  for (var k = 0u; k < K; k++) {
    let m = K - 1u - k;
    if (m <= at) {
      acc += w[c * K + k] * x[(t - m) * p.C + c];
    } else if (WITH_STATE) {
      acc += w[c * K + k] * state[(sq.z * p.C + c) * (K - 1u) + (K - 1u) + at - m];
    }
  }
  out[i] = acc / (1.0 + exp(-acc));
}

// New state = the last K−1 of (old state ++ this call's rows). Entry e reads entry e + rows (or a
// row of x), never one this loop already overwrote, so one invocation per (sequence, c) updates in place.
fn shift_state(i: u32) {
  if (i >= p.seqs * p.C) { return; }
  let sq = seqs[i / p.C];
  let c = i % p.C;
  let base = (sq.z * p.C + c) * (K - 1u);
  for (var e = 0u; e < K - 1u; e++) {
    let src_row = i32(sq.y) - i32(K - 1u) + i32(e); // row of this call, negative: an old state entry
    if (src_row >= 0) {
      state[base + e] = x[(sq.x + u32(src_row)) * p.C + c];
    } else {
      state[base + e] = state[base + u32(i32(K - 1u) + src_row)];
    }
  }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * 65535u * 64u;
  if (PASS == 0u) { conv(i); } else if (WITH_STATE) { shift_state(i); }
}
