// Training never resets a held-out game, seen from the env-server's side: a run's tasks (bindTask,
// reseeded per generation as the rollout source does) reset catch and wordle with training seeds only,
// and wordle never deals one of its 30 eval words; the held-out binding resets with the eval seeds,
// wordle's eval words in order. (On the code before the split, 320 wordle resets meet an eval word
// with probability 0.9997.)
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer } from '../../env-server/server.ts';
import { catchEnv } from '../../env-server/envs/catch.ts';
import { wordleEnv } from '../../env-server/envs/wordle.ts';
import type { AnyEnvInstance, EnvDefinition } from '../../env-server/envs/types.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { loadCheckpointTokenizer, type TextTokenizer } from '../../src/model/tokenizer.ts';
import { EVAL_SEED_BASE, WORDLE_EVAL_WORDS } from '../../src/openenv/eval-split.ts';
import type { Split } from '../../src/rl/eval/seed-space.ts';
import { hashInts, Purpose } from '../../src/rl/seeds.ts';
import { bindTask, builtinEnvUrls, resolveTask } from '../../src/rl/tasks/resolve-task.ts';

const DEMO_MODEL = fileURLToPath(new URL('../../models/demo', import.meta.url));

/** Every reset the server sees: its seed, and the wordle secret it dealt. */
const resets: { env: string; seed: unknown; secret?: string }[] = [];

function recording(def: EnvDefinition): EnvDefinition<AnyEnvInstance> {
  return {
    ...def,
    create() {
      const inst = def.create();
      const reset = inst.reset.bind(inst);
      inst.reset = (kwargs) => {
        const out = reset(kwargs);
        resets.push({ env: def.name, seed: kwargs.seed, secret: (inst as unknown as { secret?: string }).secret });
        return out;
      };
      return inst;
    },
  };
}

let server: Awaited<ReturnType<typeof createEnvServer>>;
let tokenizer: TextTokenizer;
beforeAll(async () => {
  server = await createEnvServer({ port: 0, envs: { catch: recording(catchEnv), wordle: recording(wordleEnv) } });
  tokenizer = await loadCheckpointTokenizer(await openCheckpoint(DEMO_MODEL), DEMO_MODEL);
});
afterAll(async () => {
  await server?.close();
});

/** Resets `perGeneration` envs of the task in each of `generations` generations, reseeded as envRolloutSource does. */
async function play(env: 'catch' | 'wordle', split: Split, generations: number, perGeneration: number): Promise<void> {
  const resolved = await resolveTask({ env, tier: 'full-size' });
  const task = bindTask(resolved, { tokenizer, builtinUrls: builtinEnvUrls(server.url), split });
  for (let g = 0; g < generations; g++) {
    if (split === 'train') task.episodes.reseed(hashInts(hashInts(42, Purpose.sampling, g), 0x5eed));
    else task.episodes.reseed(g * perGeneration);
    for (let k = 0; k < perGeneration; k++) {
      const e = task.envFactory();
      await e.reset(task.dataset[0]!);
      await e.close?.();
    }
  }
}

describe('resets the env-server sees', () => {
  it('training (catch, wordle): 32-bit seeds only, and no wordle eval word in 320 games', async () => {
    resets.length = 0;
    await play('catch', 'train', 10, 8);
    await play('wordle', 'train', 20, 16);
    expect(resets).toHaveLength(400);
    for (const r of resets) expect(r.seed as number).toBeLessThan(EVAL_SEED_BASE);
    const held = new Set(WORDLE_EVAL_WORDS);
    expect(resets.filter((r) => r.env === 'wordle' && held.has(r.secret!))).toEqual([]);
  }, 120_000);

  it('the held-out split: seeds from 2^32; wordle deals its eval words in order', async () => {
    resets.length = 0;
    await play('catch', 'eval', 1, 4);
    await play('wordle', 'eval', 2, 15);
    expect(resets.filter((r) => r.env === 'catch').map((r) => r.seed)).toEqual([0, 1, 2, 3].map((i) => EVAL_SEED_BASE + i));
    expect(resets.filter((r) => r.env === 'wordle').map((r) => r.secret)).toEqual(WORDLE_EVAL_WORDS);
  }, 120_000);
});
