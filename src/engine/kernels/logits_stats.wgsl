// logits_stats: streaming log-softmax statistics over vocabulary chunks, so that T×V logits never
// exist at once. For each row r and the chunk of z = logits (already divided by the temperature)
// covering vocab ids [col_start, col_start + cols):
//   m = running max, s = Σ exp(z − m), u = Σ exp(z − m)·z, zt = z of the row's target id.
// After the last chunk: logZ = m + log s, logprob = zt − logZ, entropy = logZ − u/s.
struct Params { rows: u32, cols: u32, ldz: u32, col_start: u32, first: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> z: array<f32>;        // (rows, ldz), this chunk in columns [0, cols)
@group(0) @binding(2) var<storage, read> targets: array<u32>;  // (rows)
@group(0) @binding(3) var<storage, read_write> stats: array<f32>; // (rows, 4): m, s, u, zt

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let r = gid.x + gid.y * 65535u * 64u;
  if (r >= p.rows) { return; }
  var m = -3.0e38;
  var s = 0.0;
  var u = 0.0;
  var zt = 0.0;
  if (p.first == 0u) {
    m = stats[r * 4u];
    s = stats[r * 4u + 1u];
    u = stats[r * 4u + 2u];
    zt = stats[r * 4u + 3u];
  }
  let base = r * p.ldz;
  var cm = -3.0e38;
  for (var c = 0u; c < p.cols; c++) { cm = max(cm, z[base + c]); }
  let m_new = max(m, cm);
  let corr = exp(m - m_new);
  s *= corr;
  u *= corr;
  // Summed in blocks of 256 columns: one running f32 sum over a whole vocabulary (152k columns for
  // Qwen3/3.5) loses ~1e-4 of log Z to rounding; blocks keep each sum short.
  var bs = 0.0;
  var bu = 0.0;
  for (var c = 0u; c < p.cols; c++) {
    let v = z[base + c];
    let e = exp(v - m_new);
    bs += e;
    bu += e * v;
    if ((c & 255u) == 255u) {
      s += bs;
      u += bu;
      bs = 0.0;
      bu = 0.0;
    }
  }
  s += bs;
  u += bu;
  let tgt = targets[r];
  if (tgt >= p.col_start && tgt < p.col_start + p.cols) { zt = z[base + tgt - p.col_start]; }
  stats[r * 4u] = m_new;
  stats[r * 4u + 1u] = s;
  stats[r * 4u + 2u] = u;
  stats[r * 4u + 3u] = zt;
}
