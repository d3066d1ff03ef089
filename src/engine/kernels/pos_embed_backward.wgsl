// pos_embed_backward: the gradient of pos_embed.wgsl's x[s, c] += Σ_k weight[s, k] · table[index[s, k], c]
// with respect to the learned table, dtable[j, c] += Σ weight[s, k] · dx[s, c] over the taps (s, k)
// that read row j. Gathered rather than scattered (no float atomics in WGSL): the host inverts the
// forward's (index, weight) taps into a per-row list (CSR: taps of row j are entries
// offsets[j] .. offsets[j + 1] of `tap_patch`/`weight`), and one invocation owns one (j, c).
struct Params { rows: u32, n: u32, taps: u32, _pad: u32 } // taps: entries of tap_patch/weight (the cost model's count)

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> dx: array<f32>;           // (patches, n) dL/d(x after the positions)
@group(0) @binding(2) var<storage, read> offsets: array<u32>;      // (rows + 1)
@group(0) @binding(3) var<storage, read> tap_patch: array<u32>;    // (taps) the patch s of each tap
@group(0) @binding(4) var<storage, read> weight: array<f32>;       // (taps) its bilinear weight
@group(0) @binding(5) var<storage, read_write> dtable: array<f32>; // (rows, n) = (num_position_embeddings, D)

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.rows * p.n) { return; }
  let j = idx / p.n;
  let c = idx % p.n;
  var acc = 0.0;
  for (var e = offsets[j]; e < offsets[j + 1u]; e++) { acc += weight[e] * dx[tap_patch[e] * p.n + c]; }
  dtable[idx] += acc;
}
