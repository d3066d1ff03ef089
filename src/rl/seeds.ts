// Counter-based randomness for the trainer: every random choice is a pure function of
// (seed, purpose, index), so a resumed run recomputes the same data order and sampling seeds
// from the step counters alone — no generator state to save.

import { mulberry32 } from '../random.ts';

/** A 32-bit hash of a seed and some integers (murmur3's finalizer over a running mix). */
export function hashInts(...xs: number[]): number {
  let h = 0x9e3779b9;
  for (const x of xs) {
    h = Math.imul(h ^ (x >>> 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** A Fisher–Yates permutation of 0..n-1 determined by the seed. */
export function permutation(n: number, seed: number): number[] {
  const rand = mulberry32(seed);
  const p = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [p[i], p[j]] = [p[j]!, p[i]!];
  }
  return p;
}

/** Purposes, so different uses of one seed never collide. */
export const Purpose = { dataOrder: 1, sampling: 2, microBatchOrder: 3, sftOrder: 4 } as const;
