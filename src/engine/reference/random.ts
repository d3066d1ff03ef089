// Deterministic pseudo-random numbers for reference weights and tests: the same seed gives the
// same numbers on every machine (Math.random cannot be seeded).

/** Uniform [0, 1) from a 32-bit seed (mulberry32: small, fast, good enough for test data). */
export function seededUniform(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal N(0, 1) from a 32-bit seed (Box-Muller on seededUniform). */
export function seededNormal(seed: number): () => number {
  const uniform = seededUniform(seed);
  return () => {
    // 1 - u is in (0, 1], so the log is finite.
    const u1 = 1 - uniform();
    const u2 = uniform();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  };
}
