// half_to_float: widens IEEE halves (element 2i in the low half of word i: the engine's f16 weight
// layout) to f32. Full fine-tuning promotes f16-stored weights to f32 master weights with it, on the
// GPU, so AdamW updates them in f32. The halves are read as weightLoads (weight-loads.ts) says: unpacked
// from `array<u32>`, or native `array<f16>` with shader-f16. One invocation per pair; src_offset,
// dst_offset and count are element counts, src_offset and count even (matrix rows hold an even count).
{{ENABLE_F16}}

struct Params { count: u32, src_offset: u32, dst_offset: u32, _pad: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<{{W_ELEM}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

fn load_w(i: u32) -> f32 {
  return {{LOAD_W}};
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * 65535u * 64u; // pair index
  if (2u * i >= p.count) { return; }
  dst[p.dst_offset + 2u * i] = load_w(p.src_offset + 2u * i);
  dst[p.dst_offset + 2u * i + 1u] = load_w(p.src_offset + 2u * i + 1u);
}
