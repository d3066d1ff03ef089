// Randomness for the built-in envs. `reset(seed)` is a webgrpo extension: a seeded episode must
// replay identically on every machine, so seeded streams use SplitMix64 (exact 64-bit integer
// arithmetic via BigInt, no floating point). Unseeded episodes use the platform CSPRNG.

export interface Rng {
  /** A uniform integer in [0, n), n ≥ 1. */
  int(n: number): number;
}

const MASK64 = (1n << 64n) - 1n;
const GOLDEN_GAMMA = 0x9e3779b97f4a7c15n;

/** 32-bit outputs of SplitMix64 seeded with `seed` (taken modulo 2^64). */
function splitMix64Words(seed: bigint): () => number {
  let state = seed & MASK64;
  return () => {
    state = (state + GOLDEN_GAMMA) & MASK64;
    let z = state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
    z ^= z >> 31n;
    return Number(z >> 32n); // high half: the best-mixed bits
  };
}

function cryptoWords(): () => number {
  const word = new Uint32Array(1);
  return () => {
    globalThis.crypto.getRandomValues(word);
    return word[0]!;
  };
}

/** Uniform integers by rejection (no modulo bias) from a stream of uint32 words. */
function fromWords(nextWord: () => number): Rng {
  return {
    int(n: number): number {
      if (!Number.isInteger(n) || n < 1 || n > 2 ** 32) throw new Error(`Rng.int: n must be an integer in [1, 2^32], got ${n}`);
      const limit = Math.floor(2 ** 32 / n) * n;
      for (;;) {
        const word = nextWord();
        if (word < limit) return word % n;
      }
    },
  };
}

export function seededRng(seed: number): Rng {
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`seed must be a non-negative integer, got ${seed}`);
  return fromWords(splitMix64Words(BigInt(seed)));
}

export function cryptoRng(): Rng {
  return fromWords(cryptoWords());
}

/**
 * The RNG for a reset frame's `seed` kwarg: absent or null → crypto randomness; a non-negative
 * integer → a reproducible stream; anything else is bad input and throws (EXECUTION_ERROR on /ws).
 */
export function rngForSeed(seed: unknown): Rng {
  if (seed === undefined || seed === null) return cryptoRng();
  if (typeof seed !== 'number' || !Number.isSafeInteger(seed) || seed < 0) {
    throw new Error(`seed must be a non-negative integer or null, got ${JSON.stringify(seed)}`);
  }
  return seededRng(seed);
}
