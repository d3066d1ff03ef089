// The trainer's rollout source over a task's envs, shared by the CLI and the app's worker: reseeds the
// env games per generation (a run's games are a function of (seed, generation)), plays the batch with
// runRollouts, and can start the NEXT generation's first resets while the current one trains (prefetch;
// at most one generation ahead, and only the resets of the episodes that will play first, so no more
// sessions are open than episodes playing), so env connection and reset latency overlap the optimizer step.

import type { TextTokenizer } from '../../model/tokenizer.ts';
import type { EnvFactory } from './env.ts';
import { hashInts } from '../seeds.ts';
import { prepareResets, runRollouts, type PreparedResets, type Rollout, type RolloutConfig, type RolloutEngine, type RolloutProgress } from './rollout.ts';
import type { GenerationRequest } from '../grpo/trainer.ts';
import type { ImageTokenizer } from './image-tokens.ts';

export interface RolloutSourceOptions {
  engine: RolloutEngine;
  tokenizer: TextTokenizer;
  envFactory: EnvFactory;
  /** Seeded env episodes (solvers.ts seededEpisodes): reseeded per generation. */
  episodes?: { reseed(next: number): void };
  config: RolloutConfig;
  template?: string;
  /** Decode slots of both schedulers: the sequence count the memory plan was checked for (run.ts plannedWorkload). */
  maxBatchSize: number;
  /** Each batch's live counts (runRollouts onProgress). */
  onProgress?: (p: RolloutProgress) => void;
  /** A vision-language model's image placeholder expansion (runRollouts imageTokenizer). */
  imageTokenizer?: ImageTokenizer;
}

export interface EnvRolloutSource {
  rollouts(req: GenerationRequest): Promise<Rollout[]>;
  /**
   * Starts the first resets of `next` now — as many as will play at once (envSlots) — (the trainer
   * calls it once the current generation's rewards are in); the others start when their episode does.
   */
  prefetch(next: GenerationRequest): void;
  /** Closes the sessions of a prefetch that was never played (the run stopped). */
  close(): Promise<void>;
}

export function envRolloutSource(opts: RolloutSourceOptions): EnvRolloutSource {
  let ahead: { seed: number; resets: PreparedResets } | null = null;
  const start = (req: GenerationRequest): PreparedResets => {
    opts.episodes?.reseed(hashInts(req.seed, 0x5eed));
    return prepareResets(opts.envFactory, req.rows, opts.config, opts.maxBatchSize);
  };
  return {
    prefetch(next) {
      if (ahead) return; // bounded: one generation ahead at most
      ahead = { seed: next.seed, resets: start(next) };
    },
    async close() {
      const pending = ahead;
      ahead = null;
      await pending?.resets.discard();
    },
    async rollouts(req) {
      const pending = ahead;
      ahead = null;
      let resets: PreparedResets;
      if (pending && pending.seed === req.seed && pending.resets.rows === req.rows) resets = pending.resets;
      else {
        // A prefetch for another batch runs on the same pooled env instances: let it finish and close its
        // sessions, then reset anew.
        if (pending) await pending.resets.discard();
        resets = start(req);
      }
      const { engine, tokenizer, config, template } = opts;
      return runRollouts({ engine, tokenizer, rows: req.rows, envFactory: opts.envFactory, config, seed: req.seed, template, prefetched: resets, maxBatchSize: opts.maxBatchSize, onProgress: opts.onProgress, ...(opts.imageTokenizer ? { imageTokenizer: opts.imageTokenizer } : {}) });
    },
  };
}
