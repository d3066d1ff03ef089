// Which env reset seeds each split plays, per built-in env: the held-out split's seeds lie outside
// every seed training (GRPO generations and scripted warm-ups) resets with, by construction.
//  - catch, wordle, echo, multi, any other env: training seeds are 32-bit, held-out ones start at 2^32
//    (src/openenv/eval-split.ts; the built-in envs take any safe integer seed);
//  - browsergym: BrowserGym takes gym seeds below 2^32 only (NumPy's seeding), so the range is halved —
//    training plays [0, 2^31), the held-out split [2^31, 2^32).

import { EVAL_SEED_BASE } from '../../openenv/eval-split.ts';
import { trainingSeed, type SeedOf } from '../tasks/play-episode.ts';

export type Split = 'train' | 'eval';

export const SPLITS: readonly Split[] = ['train', 'eval'];

const HALF = 2 ** 31;

/** The reset seed of episode number n (base + k, any integer) of a split, for an env. */
export function seedSpace(env: string | null, split: Split): SeedOf {
  if (env === 'browsergym') return split === 'train' ? (n) => (n >>> 0) % HALF : (n) => HALF + ((n >>> 0) % HALF);
  return split === 'train' ? trainingSeed : (n) => EVAL_SEED_BASE + (n >>> 0);
}
