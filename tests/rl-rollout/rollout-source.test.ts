// envRolloutSource (the CLI's and the worker's rollout source): env games reseeded per generation, and
// the next generation's resets started by prefetch() — before its rollouts are asked for — then used
// as they are (no second reset), bounded to one generation ahead.

import { describe, expect, it } from 'vitest';
import type { DatasetRow, Tool, ToolEnv } from '../../src/rl/rollout/env.ts';
import { envRolloutSource } from '../../src/rl/rollout/rollout-source.ts';
import type { GenerationRequest } from '../../src/rl/grpo/trainer.ts';
import { FakeEngine } from './fake-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

const tok = qwen3Tokenizer();

/** Resets log the game seed they were opened with (the seeded-episodes counter at that moment). */
function seededWorld() {
  const resets: string[] = [];
  let start = 0;
  let k = 0;
  const episodes = { reseed: (next: number) => ((start = next), (k = 0)) };
  const factory = (): ToolEnv => {
    const tools: Tool[] = [];
    return {
      tools,
      reset: async (row: DatasetRow) => {
        const game = start + k++;
        resets.push(`${row.tag as string}:${game}`);
        return `\\ngame ${game}`;
      },
    };
  };
  return { resets, episodes, factory };
}

const rows = (tag: string): DatasetRow[] => [0, 1].map(() => ({ prompt: [{ role: 'user' as const, content: 'play' }], tag }));
const config = { max_completion_length: 8, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' as const };

describe('envRolloutSource', () => {
  it('prefetch starts the resets at once; rollouts then use them without resetting again', async () => {
    const world = seededWorld();
    const engine = new FakeEngine(tok, () => 'ok<|im_end|>');
    const source = envRolloutSource({ engine, tokenizer: tok, envFactory: world.factory, episodes: world.episodes, config, maxBatchSize: 4 });
    const g0: GenerationRequest = { rows: rows('g0'), seed: 10, step: 0 };
    const g1: GenerationRequest = { rows: rows('g1'), seed: 11, step: 1 };
    const first = await source.rollouts(g0);
    source.prefetch(g1);
    source.prefetch({ rows: rows('g2'), seed: 12, step: 2 }); // bounded: ignored while g1 is pending
    await new Promise((r) => setTimeout(r, 0));
    const before = [...world.resets];
    const second = await source.rollouts(g1);
    expect(world.resets).toEqual(before); // no second reset for g1
    expect(before.filter((r) => r.startsWith('g1'))).toHaveLength(2);
    expect(before.some((r) => r.startsWith('g2'))).toBe(false);
    // Games are a function of the generation's seed, prefetched or not.
    const fresh = seededWorld();
    const engine2 = new FakeEngine(tok, () => 'ok<|im_end|>');
    const plain = envRolloutSource({ engine: engine2, tokenizer: tok, envFactory: fresh.factory, episodes: fresh.episodes, config, maxBatchSize: 4 });
    await plain.rollouts({ rows: rows('g0'), seed: 10, step: 0 });
    const again = await plain.rollouts({ rows: rows('g1'), seed: 11, step: 1 });
    expect(again.map((r) => r.prompt)).toEqual(second.map((r) => r.prompt));
    expect(first.map((r) => r.prompt)).not.toEqual(second.map((r) => r.prompt));
  });

  it('a prefetch for another batch (e.g. after a resume) is finished, then the asked batch is reset anew', async () => {
    const world = seededWorld();
    const engine = new FakeEngine(tok, () => 'ok<|im_end|>');
    const source = envRolloutSource({ engine, tokenizer: tok, envFactory: world.factory, episodes: world.episodes, config, maxBatchSize: 4 });
    source.prefetch({ rows: rows('stale'), seed: 99, step: 5 });
    const out = await source.rollouts({ rows: rows('asked'), seed: 3, step: 0 });
    expect(world.resets.map((r) => r.split(':')[0])).toEqual(['stale', 'stale', 'asked', 'asked']);
    expect(out).toHaveLength(2);
    expect(out.every((r) => r.error === undefined)).toBe(true);
  });
});
