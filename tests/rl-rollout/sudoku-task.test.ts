// TRL's sudoku example as the `sudoku` task, against the built-in /envs/sudoku: `--env sudoku` resolves
// to it (and a TextArena server playing Sudoku-v0 too, by its game), the reset shows TRL's board and
// hints, `place` answers as TRL's class does, and the five reward functions score it.

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer } from '../../env-server/server.ts';
import { BUILTIN_ENVS } from '../../env-server/envs/index.ts';
import { taskFromMetadata } from '../../src/rl/tasks/env-task.ts';
import { openEnvEpisodes } from '../../src/rl/tasks/envs/episode-session.ts';
import { resolveTask } from '../../src/rl/tasks/resolve-task.ts';
import { envTools } from '../../src/rl/rollout/env.ts';
import { ClassEnv } from '../../src/rl/tasks/env-class.ts';
import { runRollouts } from '../../src/rl/rollout/rollout.ts';
import { callText, FakeEngine } from './fake-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

let server: { url: string; close(): Promise<void> };
const url = () => `${server.url}/envs/sudoku`;

beforeAll(async () => {
  server = await createEnvServer({ port: 0, envs: { sudoku: BUILTIN_ENVS.sudoku! } });
});
afterAll(async () => {
  await server.close();
});

describe('the sudoku task', () => {
  it("is examples/sudoku.mjs, carrying TRL's system prompt byte for byte", async () => {
    const { task } = await resolveTask({ env: 'sudoku' });
    expect(task.envFactory({ sudoku: url() })()).toBeInstanceOf(ClassEnv);
    const system = task.dataset(1)[0]!.prompt[0]!;
    expect(system.role).toBe('system');
    expect(createHash('sha256').update(system.content as string).digest('hex')).toBe('cb7a8b560591bbeb208a110788d6670652d356f025d900af2a412cc7fcc2989d');
  });

  it('--env sudoku and a URL ending in /envs/sudoku resolve to it; a TextArena server playing Sudoku-v0 is told by its game', async () => {
    expect((await resolveTask({ env: 'sudoku' })).name).toBe('sudoku');
    expect((await resolveTask({ env: url() })).name).toBe('sudoku');
    expect(await taskFromMetadata(url())).toBe('sudoku');
  });

  it("plays: the reset's board and hints, place's answers, TRL's five rewards", async () => {
    const { task } = await resolveTask({ env: 'sudoku' });
    const open = openEnvEpisodes({ timeoutMs: 10_000 });
    const factory = task.envFactory({ sudoku: url() }, open);
    const env = factory();
    const place = (row: number, col: number, number: number) => envTools(env)[0]!.call({ row, col, number }) as Promise<string>;
    const row = task.dataset(1)[0]!;
    expect(row.prompt.map((m) => m.role)).toEqual(['system', 'user']);
    const first = await env.reset(row);
    expect(first).toMatch(/^Step 0\. Progress: 0 cells filled\.\n\nBoard:\n {3}C1 C2 C3 {3}C4/);
    const guaranteed = /GUARANTEED MOVES: \[(\d) (\d) (\d)\]/.exec(String(first))!;
    expect(guaranteed).not.toBeNull();
    const [r, c, n] = guaranteed.slice(1).map(Number);
    const good = await place(r!, c!, n!);
    expect(good).toMatch(new RegExp(`^Move \\[${r} ${c} ${n}\\]: valid\\nStep 1\\. Progress: 1 cells filled\\.`));
    const again = await place(r!, c!, n!);
    expect(again).toMatch(/: invalid\n/);
    const scores = await Promise.all(task.rewardFuncs.map((f) => f({ prompts: [], completions: [], completion_ids: [], environments: [env], trainer_state: { global_step: 0 } })));
    expect(task.rewardFuncs.map((f) => f.name)).toEqual(['reward_empty_cell', 'reward_valid_moves', 'reward_correct', 'reward_repetition', 'reward_progress']);
    // empty: (+1 −1)/2; valid: (1 + −0.5)/2; correct: last step's reward; repetition: (0 + −1)/2; progress: one of the empty cells.
    expect(scores.map((s) => s[0])).toEqual([0, 0.25, 0, -0.5, expect.any(Number)]);
    expect(scores[4]![0]).toBeGreaterThan(0);
    await env.close?.();
  });

  it('a model that plays through the rollout loop gets the tool results', async () => {
    const { task } = await resolveTask({ env: 'sudoku' });
    const tok = qwen3Tokenizer();
    const policy = (context: string) => (context.includes('<tool_response>') ? 'Done.<|im_end|>' : callText('place', { row: 1, col: 1, number: 5 }) + '<|im_end|>');
    const open = openEnvEpisodes({ timeoutMs: 10_000 });
    const rollouts = await runRollouts({ engine: new FakeEngine(tok, policy), tokenizer: tok, rows: task.dataset(1), envFactory: task.envFactory({ sudoku: url() }, open), config: { max_completion_length: 2048, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' as const }, seed: 1 });
    const tool = rollouts[0]!.completion.find((m) => m.role === 'tool')!;
    expect(tool.content).toMatch(/^Move \[1 1 5\]: (valid|invalid)\n/);
    expect(rollouts[0]!.toolFailures).toBe(0);
  });
});
