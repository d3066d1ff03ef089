// log_softmax_backward: from per-token dL/dlogp (and optionally dL/dentropy) to dL/dlogits, one
// vocabulary chunk at a time so no (T, V) buffer ever exists. For a scored row t with target y_t,
// temperature τ, z = logits / τ, p = softmax(z_t), H = −Σ p log p:
//   logp_t = z[t, y_t] − logsumexp_v z[t, v]
//   dH/dz[t, v] = −p_v·(log p_v + H) = −p_v·(z[t, v] − z̄_t),   z̄_t = Σ p_v z[t, v]
//   dL/dlogits[t, v] = (g_t·(1[v = y_t] − p_v) − e_t·p_v·(z[t, v] − z̄_t)) / τ
// with g = dL/dlogp and e = dL/dentropy (zeros when the caller has no entropy term).
// PASS 0 (`lse_update`, once per chunk) folds each chunk into a running (max m, Σ exp(z − m),
// Σ exp(z − m)·z) per row, so that z̄ = third / second at the end;
// PASS 1 (`dlogits`, once per chunk, on the recomputed chunk) overwrites the logits in place.
const PASS: u32 = {{PASS}}u;

struct Params {
  rows: u32,          // scored rows Ts
  chunk_start: u32,   // first vocabulary id of this chunk
  chunk_size: u32,    // Vc: columns of the logits chunk
  inv_temperature: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;     // (Ts, Vc)
@group(0) @binding(2) var<storage, read_write> lse_state: array<f32>;  // (Ts, 3): running max, Σ exp(z − max), Σ exp(z − max)·z
@group(0) @binding(3) var<storage, read> targets: array<u32>;          // (Ts,) target token ids
@group(0) @binding(4) var<storage, read> grad_logp: array<f32>;        // (Ts,) dL/dlogp
@group(0) @binding(5) var<storage, read> grad_entropy: array<f32>;     // (Ts,) dL/dentropy

const WG: u32 = 64u;
const NEG_BIG: f32 = -3.0e38;
var<workgroup> red_max: array<f32, WG>;
var<workgroup> red_sum: array<f32, WG>;
var<workgroup> red_zsum: array<f32, WG>;

// One workgroup per row: each lane scans a strided slice, then a tree reduction merges (max, sum, zsum).
fn lse_update(row: u32, lane: u32) {
  let base = row * p.chunk_size;
  var mx = NEG_BIG;
  for (var v = lane; v < p.chunk_size; v += WG) { mx = max(mx, logits[base + v] * p.inv_temperature); }
  var sm = 0.0;
  var zs = 0.0;
  for (var v = lane; v < p.chunk_size; v += WG) {
    let z = logits[base + v] * p.inv_temperature;
    let e = exp(z - mx);
    sm += e;
    zs += e * z;
  }
  red_max[lane] = mx;
  red_sum[lane] = sm;
  red_zsum[lane] = zs;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
    if (lane < stride) {
      let m1 = red_max[lane];
      let m2 = red_max[lane + stride];
      let m = max(m1, m2);
      let c1 = exp(m1 - m);
      let c2 = exp(m2 - m);
      red_sum[lane] = red_sum[lane] * c1 + red_sum[lane + stride] * c2;
      red_zsum[lane] = red_zsum[lane] * c1 + red_zsum[lane + stride] * c2;
      red_max[lane] = m;
    }
    workgroupBarrier();
  }
  if (lane == 0u) {
    let old_max = lse_state[row * 3u];
    let m = max(old_max, red_max[0]);
    let c_old = exp(old_max - m);
    let c_new = exp(red_max[0] - m);
    lse_state[row * 3u] = m;
    lse_state[row * 3u + 1u] = lse_state[row * 3u + 1u] * c_old + red_sum[0] * c_new;
    lse_state[row * 3u + 2u] = lse_state[row * 3u + 2u] * c_old + red_zsum[0] * c_new;
  }
}

// lse_state must hold the finished (max, sum, zsum) of the whole vocabulary here.
fn dlogits(i: u32) {
  if (i >= p.rows * p.chunk_size) { return; }
  let row = i / p.chunk_size;
  let col = i % p.chunk_size;
  let sum = lse_state[row * 3u + 1u];
  let lse = lse_state[row * 3u] + log(sum);
  let z_mean = lse_state[row * 3u + 2u] / sum;
  let z = logits[i] * p.inv_temperature;
  let prob = exp(z - lse);
  let onehot = select(0.0, 1.0, targets[row] == p.chunk_start + col);
  logits[i] = p.inv_temperature * (grad_logp[row] * (onehot - prob) - grad_entropy[row] * prob * (z - z_mean));
}

// PASS 0: one workgroup per row (grid (rows, 1, 1)); PASS 1: one invocation per logit (groups1d).
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) lane: u32) {
  if (PASS == 0u) {
    let row = wg.x + wg.y * 65535u;
    if (row < p.rows) { lse_update(row, lane); }
  } else {
    dlogits(gid.x + gid.y * 65535u * 64u);
  }
}
