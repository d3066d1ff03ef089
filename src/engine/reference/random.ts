// Deterministic pseudo-random numbers for reference weights and tests: the same seed gives the
// same numbers on every machine.
import { mulberry32 } from '../../random.ts';

/** Standard normal N(0, 1) from a 32-bit seed (Box-Muller on mulberry32). */
export function seededNormal(seed: number): () => number {
  const uniform = mulberry32(seed);
  return () => {
    // 1 - u is in (0, 1], so the log is finite.
    const u1 = 1 - uniform();
    const u2 = uniform();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  };
}
