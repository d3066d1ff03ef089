// Every built-in task's held-out split is disjoint from what training draws: env seeds (catch, wordle,
// echo, multi: 32-bit for training, from 2^32 for held-out; browsergym: [0, 2^31) vs [2^31, 2^32)),
// wordle's 30 eval words (never a training game's secret), echo's held-out messages, a MiniWoB++
// folder's held-out tasks, and --eval_dataset rows that overlap the training rows are refused.
import { describe, expect, it } from 'vitest';
import { createWordleEnvironment, loadShippedWords } from '../../env-server/envs/wordle.ts';
import { EVAL_SEED_BASE, WORDLE_EVAL_WORDS } from '../../src/openenv/eval-split.ts';
import { seedSpace } from '../../src/rl/eval/seed-space.ts';
import { checkDisjoint, ECHO_EVAL_PROMPTS, miniwobTaskSplit, splitRows } from '../../src/rl/eval/eval-rows.ts';
import { hashInts, Purpose } from '../../src/rl/seeds.ts';
import { trainingSeed } from '../../src/rl/tasks/play-episode.ts';
import { parseBrowserGymMix } from '../../src/rl/tasks/browsergym-task.ts';
import { ECHO_PROMPTS } from '../rl-rollout/trl-prompts.ts';
import { echoTarget } from '../../src/rl/tasks/solvers.ts';
import { resolveTask } from '../../src/rl/tasks/resolve-task.ts';

/** Episode numbers a run meets: base + k, the base a 32-bit hash of (seed, generation) as the rollout source reseeds. */
function episodeNumbers(): number[] {
  const out = [0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 5, -1];
  for (let g = 0; g < 300; g++) {
    const base = hashInts(hashInts(42, Purpose.sampling, g), 0x5eed);
    for (let k = 0; k < 70; k += 7) out.push(base + k);
  }
  return out;
}

describe('held-out env seeds', () => {
  for (const env of ['catch', 'wordle', 'echo', null, 'browsergym']) {
    it(`${env ?? 'multi/mcp'}: no training seed is a held-out seed`, () => {
      const train = new Set(episodeNumbers().map(seedSpace(env, 'train')));
      const held = Array.from({ length: 5000 }, (_, i) => seedSpace(env, 'eval')(i));
      expect(held.filter((s) => train.has(s))).toEqual([]);
      // The ranges themselves are apart, whatever number a run reaches.
      const maxTrain = Math.max(...train);
      expect(Math.min(...held)).toBeGreaterThan(maxTrain);
      if (env === 'browsergym') expect(Math.max(...held)).toBeLessThan(2 ** 32); // BrowserGym's gym seeds are 32-bit
    });
  }

  it("the default training seed (seededEpisodes') is 32-bit, below EVAL_SEED_BASE", () => {
    for (const n of episodeNumbers()) expect(trainingSeed(n)).toBeLessThan(EVAL_SEED_BASE);
    expect(seedSpace('catch', 'eval')(0)).toBe(EVAL_SEED_BASE);
  });
});

describe('wordle: the 30 eval words', () => {
  const words = loadShippedWords();
  const secret = (seed: number): string => {
    const env = createWordleEnvironment(words);
    env.reset({ seed });
    return (env as unknown as { secret: string }).secret;
  };

  it('are 30 distinct words of the shipped answer list', () => {
    expect(new Set(WORDLE_EVAL_WORDS).size).toBe(30);
    for (const w of WORDLE_EVAL_WORDS) expect(words.answers).toContain(w);
  });

  it('no training seed plays one (3,000 training resets); held-out episode i plays word i mod 30', () => {
    const held = new Set(WORDLE_EVAL_WORDS);
    const drawn = episodeNumbers().slice(0, 3000).map((n) => secret(seedSpace('wordle', 'train')(n)));
    expect(drawn.filter((w) => held.has(w))).toEqual([]);
    expect(new Set(drawn).size).toBeGreaterThan(500); // still the whole rest of the list
    const evalSeed = seedSpace('wordle', 'eval');
    expect(Array.from({ length: 31 }, (_, i) => secret(evalSeed(i)))).toEqual([...WORDLE_EVAL_WORDS, WORDLE_EVAL_WORDS[0]]);
  });

  it('an unseeded game never plays one either', () => {
    const held = new Set(WORDLE_EVAL_WORDS);
    for (let i = 0; i < 500; i++) {
      const env = createWordleEnvironment(words);
      env.reset({});
      expect(held.has((env as unknown as { secret: string }).secret)).toBe(false);
    }
  });
});

describe('held-out rows', () => {
  it("echo: the held-out prompts ask for messages none of training's asks for", async () => {
    const trained = new Set(ECHO_PROMPTS.map(echoTarget));
    expect(ECHO_EVAL_PROMPTS.map(echoTarget).filter((m) => trained.has(m))).toEqual([]);
    const r = await resolveTask({ env: 'echo' });
    const rows = splitRows(r, 'eval');
    expect(rows.map((row) => row.prompt[0]!.content)).toEqual(ECHO_EVAL_PROMPTS);
    expect(() => checkDisjoint(r.task.dataset(), rows)).not.toThrow();
  });

  it('wordle and catch: as many held-out rows as games (wordle: its 30 words)', async () => {
    expect(splitRows(await resolveTask({ env: 'wordle' }), 'eval')).toHaveLength(30);
    expect(splitRows(await resolveTask({ env: 'catch' }), 'eval').length).toBeGreaterThan(1);
  });

  it('a MiniWoB++ folder: held-out tasks are never in the training mix; every task is evaluated', async () => {
    const names = Array.from({ length: 23 }, (_, i) => `task-${String(i).padStart(2, '0')}`);
    const { train, eval: heldOut } = miniwobTaskSplit(names);
    expect(heldOut.length).toBe(4);
    expect(train.filter((n) => heldOut.includes(n))).toEqual([]);
    expect([...train, ...heldOut].sort()).toEqual(names);
    expect(parseBrowserGymMix('mix', names)).toEqual(train);
    const r = await resolveTask({ env: 'browsergym:mix', miniwobNames: names });
    const trainedTasks = new Set(r.task.dataset(200).map((row) => row.task_name));
    for (const t of heldOut) expect(trainedTasks.has(t)).toBe(false);
    const evalTasks = splitRows(r, 'eval', { miniwobNames: names }).map((row) => row.task_name);
    expect(evalTasks.slice(0, 4)).toEqual(heldOut);
    expect(new Set(evalTasks).size).toBe(23);
  });

  it('a MiniWoB++ folder, named tasks: the held-out tasks, then the named ones (not the folder\'s other training tasks)', async () => {
    const names = Array.from({ length: 23 }, (_, i) => `task-${String(i).padStart(2, '0')}`);
    const { eval: heldOut } = miniwobTaskSplit(names);
    const tasks = async (env: string) => splitRows(await resolveTask({ env, miniwobNames: names }), 'eval', { miniwobNames: names }).map((row) => row.task_name);
    expect(await tasks('browsergym:task-00,task-01')).toEqual([...heldOut, 'task-00', 'task-01']);
    // A held-out task the run names is one it trains on: played as its own, not as a held-out one.
    expect(await tasks(`browsergym:task-00,${heldOut[0]}`)).toEqual([...heldOut.slice(1), 'task-00', heldOut[0]]);
  });

  it('--eval_dataset: a row that is also a training row is refused, by number', () => {
    const row = (content: string) => ({ prompt: [{ role: 'user' as const, content }] });
    expect(() => checkDisjoint([row('a'), row('b')], [row('c'), row('b')])).toThrow(/--eval_dataset row 2 is also a training row/);
    expect(() => checkDisjoint([row('a')], [row('c')])).not.toThrow();
  });

  it('the mcp task has no split of its own: --eval_dataset is asked for', () => {
    const r = { name: 'mcp', task: { dataset: () => [{ prompt: [{ role: 'user', content: 'x' }] }] } } as never;
    expect(() => splitRows(r, 'eval')).toThrow(/--eval_dataset/);
  });
});
