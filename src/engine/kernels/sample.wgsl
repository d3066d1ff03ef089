// sample: one token per row of logits, entirely on the GPU; only (id, logprob) pairs are read back.
// Order of the warpers as in transformers: temperature, then top-k, then top-p. Both filters are
// exact thresholds found by a 32-step bitwise search over the order-preserving u32 key of z (no
// sort): top-k keeps the keys ≥ the k-th largest; top-p keeps the smallest high-probability set
// whose mass reaches top_p (ties at a threshold are all kept). The token is drawn by Gumbel-max,
// argmax(z + Gumbel) over the kept ids, with noise from a counter-based hash of
// (seed, stream, counter, token id): the same seed gives the same tokens on every run and adapter.
// logprob is that of the chosen id under the filtered, renormalized distribution. Greedy rows
// (temperature 0) take argmax(logits) and report its log-softmax at temperature 1.
// One workgroup per row.
const WG: u32 = {{WORKGROUP}}u;

struct Params { V: u32, ldz: u32, top_k: u32, greedy: u32, seed: u32, _pad0: u32, _pad1: u32, _pad2: u32, inv_temp: f32, top_p: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;   // (rows, ldz)
@group(0) @binding(2) var<storage, read> rowinfo: array<u32>;  // (rows, 2): stream, counter
@group(0) @binding(3) var<storage, read_write> out: array<u32>; // (rows, 2): id, bitcast<u32>(logprob)
// (rows): the ids again, as the next decode step's input tokens, so steps chain on the GPU without a read-back.
@group(0) @binding(4) var<storage, read_write> next_ids: array<u32>;

var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_u: array<u32, WG>;

fn pcg(v: u32) -> u32 {
  let s = v * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

// Order-preserving map f32 → u32 (larger float ↔ larger key).
fn key_of(v: f32) -> u32 {
  let b = bitcast<u32>(v);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn reduce_max(lid: u32, v: f32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var o = WG / 2u; o > 0u; o >>= 1u) {
    if (lid < o) { red_f[lid] = max(red_f[lid], red_f[lid + o]); }
    workgroupBarrier();
  }
  let r = red_f[0];
  workgroupBarrier();
  return r;
}

fn reduce_sum(lid: u32, v: f32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var o = WG / 2u; o > 0u; o >>= 1u) {
    if (lid < o) { red_f[lid] += red_f[lid + o]; }
    workgroupBarrier();
  }
  let r = red_f[0];
  workgroupBarrier();
  return r;
}

fn reduce_count(lid: u32, v: u32) -> u32 {
  red_u[lid] = v;
  workgroupBarrier();
  for (var o = WG / 2u; o > 0u; o >>= 1u) {
    if (lid < o) { red_u[lid] += red_u[lid + o]; }
    workgroupBarrier();
  }
  let r = red_u[0];
  workgroupBarrier();
  return r;
}

// (value, index) argmax with the smaller index winning ties.
fn reduce_argmax(lid: u32, v: f32, i: u32) -> u32 {
  red_f[lid] = v;
  red_u[lid] = i;
  workgroupBarrier();
  for (var o = WG / 2u; o > 0u; o >>= 1u) {
    if (lid < o) {
      let ov = red_f[lid + o];
      let oi = red_u[lid + o];
      if (ov > red_f[lid] || (ov == red_f[lid] && oi < red_u[lid])) {
        red_f[lid] = ov;
        red_u[lid] = oi;
      }
    }
    workgroupBarrier();
  }
  let r = red_u[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid3: vec3u) {
  let row = wid.x;
  let lid = lid3.x;
  let base = row * p.ldz;
  let V = p.V;

  if (p.greedy != 0u) {
    var best = -3.0e38;
    var best_i = 0u;
    var mx = -3.0e38;
    for (var i = lid; i < V; i += WG) {
      let v = logits[base + i];
      if (v > best) { best = v; best_i = i; }
    }
    let id = reduce_argmax(lid, best, best_i);
    mx = logits[base + id];
    var s = 0.0;
    for (var i = lid; i < V; i += WG) { s += exp(logits[base + i] - mx); }
    let total = reduce_sum(lid, s);
    if (lid == 0u) {
      out[row * 2u] = id;
      out[row * 2u + 1u] = bitcast<u32>(-log(total));
      next_ids[row] = id;
    }
    return;
  }

  // z = logits / temperature
  var lmax = -3.0e38;
  for (var i = lid; i < V; i += WG) { lmax = max(lmax, logits[base + i] * p.inv_temp); }
  let m = reduce_max(lid, lmax);

  // top-k: thr = the k-th largest key (largest t with count(key ≥ t) ≥ k).
  var thr = 0u;
  if (p.top_k > 0u && p.top_k < V) {
    for (var bit = 31i; bit >= 0i; bit--) {
      let cand = thr | (1u << u32(bit));
      var c = 0u;
      for (var i = lid; i < V; i += WG) { c += select(0u, 1u, key_of(logits[base + i] * p.inv_temp) >= cand); }
      if (reduce_count(lid, c) >= p.top_k) { thr = cand; }
    }
  }

  // top-p over the top-k survivors: largest t ≥ thr with mass(key ≥ t) ≥ top_p · mass(key ≥ thr).
  if (p.top_p < 1.0) {
    var zk = 0.0;
    for (var i = lid; i < V; i += WG) {
      let z = logits[base + i] * p.inv_temp;
      if (key_of(z) >= thr) { zk += exp(z - m); }
    }
    let goal = p.top_p * reduce_sum(lid, zk);
    var t2 = 0u;
    for (var bit = 31i; bit >= 0i; bit--) {
      let cand = t2 | (1u << u32(bit));
      let lim = max(cand, thr);
      var mass = 0.0;
      for (var i = lid; i < V; i += WG) {
        let z = logits[base + i] * p.inv_temp;
        if (key_of(z) >= lim) { mass += exp(z - m); }
      }
      if (reduce_sum(lid, mass) >= goal) { t2 = cand; }
    }
    thr = max(thr, t2);
  }

  // Gumbel-max over the kept ids; then the log-normalizer of the kept set.
  let stream = rowinfo[row * 2u];
  let counter = rowinfo[row * 2u + 1u];
  let key0 = pcg(p.seed ^ pcg(stream ^ pcg(counter)));
  var best = -3.0e38;
  var best_i = 0xffffffffu;
  var zs = 0.0;
  for (var i = lid; i < V; i += WG) {
    let z = logits[base + i] * p.inv_temp;
    if (key_of(z) >= thr) {
      zs += exp(z - m);
      let h = pcg(key0 ^ pcg(i));
      let u = (f32(h >> 8u) + 0.5) * (1.0 / 16777216.0);
      let g = z - log(-log(u));
      if (g > best) { best = g; best_i = i; }
    }
  }
  let total = reduce_sum(lid, zs);
  let id = reduce_argmax(lid, best, best_i);
  if (lid == 0u) {
    out[row * 2u] = id;
    out[row * 2u + 1u] = bitcast<u32>(logits[base + id] * p.inv_temp - m - log(total));
    next_ids[row] = id;
  }
}
