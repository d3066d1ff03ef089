// RoPE cos/sin per token, computed on the CPU exactly as transformers does it in f32:
// inv_freq[j] = 1 / θ^(2j/d) (f32), angle = f32(position · inv_freq[j]), then cos/sin rounded to f32.
// Doing this on the host avoids the GPU's imprecise sin/cos of large angles.

const invFreqCache = new Map<string, Float32Array>();

export function ropeInvFreq(headDim: number, theta: number): Float32Array {
  const key = `${headDim}|${theta}`;
  let inv = invFreqCache.get(key);
  if (!inv) {
    const half = headDim / 2;
    inv = new Float32Array(half);
    for (let j = 0; j < half; j++) {
      const exponent = Math.fround((2 * j) / headDim);
      inv[j] = Math.fround(1 / Math.fround(Math.pow(theta, exponent)));
    }
    invFreqCache.set(key, inv);
  }
  return inv;
}

/** (T, d/2, 2) f32: cos, sin of each token's angles. */
export function ropeTable(positions: ArrayLike<number>, headDim: number, theta: number): Float32Array<ArrayBuffer> {
  const inv = ropeInvFreq(headDim, theta);
  const half = headDim / 2;
  const out = new Float32Array(positions.length * half * 2);
  for (let t = 0; t < positions.length; t++) {
    const p = positions[t]!;
    for (let j = 0; j < half; j++) {
      const angle = Math.fround(p * inv[j]!);
      out[(t * half + j) * 2] = Math.cos(angle);
      out[(t * half + j) * 2 + 1] = Math.sin(angle);
    }
  }
  return out;
}
