// The one seeded uniform generator of the project (Math.random cannot be seeded): tiny-model
// weights, reference weights, LoRA init and the trainer's data order all draw from it, so the same
// seed gives the same numbers in Node and in the browser.

/** mulberry32: uniform floats in [0, 1) from a 32-bit seed; small, fast, good enough for init and data order. */
export function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
  };
}
