// Gym seed → MiniWoB page seed (specs/browsergym.md Appendix A): NumPy's legacy
// `RandomState(seed).randint(0, 1000000)`, i.e. MT19937 seeded with init_genrand, 20-bit draws
// rejected above 999 999. 42 → 121958.

const N = 624;
const M = 397;

function mt19937(seed: number): () => number {
  const mt = new Uint32Array(N);
  mt[0] = seed >>> 0;
  for (let i = 1; i < N; i++) {
    const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
    // 1812433253 * prev + i mod 2^32, split to stay exact in doubles.
    mt[i] = (((((prev & 0xffff0000) >>> 16) * 1812433253) << 16) + (prev & 0x0000ffff) * 1812433253 + i) >>> 0;
  }
  let index = N;
  return () => {
    if (index >= N) {
      for (let k = 0; k < N; k++) {
        const y = (mt[k]! & 0x80000000) | (mt[(k + 1) % N]! & 0x7fffffff);
        mt[k] = mt[(k + M) % N]! ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      index = 0;
    }
    let y = mt[index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  };
}

/** The page seed for a gym seed (an integer in 0 … 2^32−1). */
export function pageSeed(gymSeed: number): number {
  if (!Number.isInteger(gymSeed) || gymSeed < 0 || gymSeed > 0xffffffff) {
    throw new Error(`seed must be an integer between 0 and 2**32 - 1, got ${gymSeed}`);
  }
  const next = mt19937(gymSeed);
  for (;;) {
    const v = next() & 0xfffff;
    if (v <= 999999) return v;
  }
}
