// embedding: out[t] = E[tokens[t]] for the tokens whose id falls in this row-chunk of the
// embedding, [row_start, row_start + rows). The engine dispatches once per chunk (a tensor larger
// than one storage binding is split by rows). E is f32 or f16, read as weightLoads (weight-loads.ts)
// says: f32 bits or packed halves (u32), or native f16.
{{ENABLE_F16}}

struct Params { T: u32, D: u32, row_start: u32, rows: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> tokens: array<u32>; // (T)
@group(0) @binding(2) var<storage, read> w: array<{{W_ELEM}}>; // (rows, D)
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // (T, D)

fn load_w(i: u32) -> f32 {
  return {{LOAD_W}};
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.T * p.D) { return; }
  let t = idx / p.D;
  let i = idx % p.D;
  let id = tokens[t];
  if (id < p.row_start || id >= p.row_start + p.rows) { return; }
  out[idx] = load_w((id - p.row_start) * p.D + i);
}
