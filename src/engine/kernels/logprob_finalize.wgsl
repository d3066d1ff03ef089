// logprob_finalize: per row, from the streamed statistics (m, s, u, zt) of logits_stats.wgsl:
//   out = (logprob of the target, entropy of the distribution, logZ)
struct Params { rows: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> stats: array<f32>;     // (rows, 4)
@group(0) @binding(2) var<storage, read_write> out: array<f32>; // (rows, 3)

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let r = gid.x + gid.y * 65535u * 64u;
  if (r >= p.rows) { return; }
  let m = stats[r * 4u];
  let s = stats[r * 4u + 1u];
  let u = stats[r * 4u + 2u];
  let zt = stats[r * 4u + 3u];
  let log_z = m + log(s);
  out[r * 3u] = zt - log_z;
  out[r * 3u + 1u] = log_z - u / s;
  out[r * 3u + 2u] = log_z;
}
