// How a kernel reads f16-stored weights: the one switch (`halfLoads`) every weight-reading kernel
// follows, forward and backward, and the WGSL placeholders that implement each choice.

/** How kernels read f16 weights: 'native' binds them as `array<f16>` (needs shader-f16); 'u32' unpacks halves from u32 words. */
export type HalfLoads = 'native' | 'u32';

/**
 * The placeholders of a weight-reading kernel (matmul*.wgsl, embedding.wgsl, and on the training side
 * matmul_backward*.wgsl's B operand and half_to_float.wgsl): the storage element of the array named
 * `array` (W_ELEM) and the WGSL of a scalar load `LOAD_W` and a 4-wide load `LOAD_W4` at element i,
 * widened to f32. The three layouts hold the same bytes: f32 values, or IEEE halves with element 2i in
 * the low half of word i (which is exactly `array<f16>`'s layout, so 'native' needs no other upload).
 */
export function weightLoads(dtype: 'f16' | 'f32', halfLoads: HalfLoads, array = 'w'): Record<string, string | boolean> {
  const w = array;
  if (dtype === 'f32') {
    return {
      W_F16: false, ENABLE_F16: '', W_ELEM: 'u32', LOAD_W: `bitcast<f32>(${w}[i])`,
      LOAD_W4: `vec4f(bitcast<f32>(${w}[i]), bitcast<f32>(${w}[i + 1u]), bitcast<f32>(${w}[i + 2u]), bitcast<f32>(${w}[i + 3u]))`,
    };
  }
  if (halfLoads === 'native') {
    return {
      W_F16: true, ENABLE_F16: 'enable f16;', W_ELEM: 'f16', LOAD_W: `f32(${w}[i])`,
      LOAD_W4: `vec4f(f32(${w}[i]), f32(${w}[i + 1u]), f32(${w}[i + 2u]), f32(${w}[i + 3u]))`,
    };
  }
  return {
    W_F16: true, ENABLE_F16: '', W_ELEM: 'u32', LOAD_W: `unpack2x16float(${w}[i >> 1u])[i & 1u]`,
    LOAD_W4: `vec4f(unpack2x16float(${w}[i >> 1u]), unpack2x16float(${w}[(i >> 1u) + 1u]))`,
  };
}

/** matmul_backward*.wgsl's B operand (a frozen weight, or an f32 activation when bHalf is false). */
export function gemmBLoads(bHalf: boolean, halfLoads: HalfLoads): { ENABLE_F16: string; B_ELEM: string; LOAD_B: string } {
  const loads = weightLoads(bHalf ? 'f16' : 'f32', halfLoads, 'b');
  return { ENABLE_F16: String(loads.ENABLE_F16), B_ELEM: String(loads.W_ELEM), LOAD_B: String(loads.LOAD_W) };
}
