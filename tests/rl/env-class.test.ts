// Environment classes (TRL's environment_factory in JS, specs/environment-classes.md): tool schemas from
// JSDoc equal transformers' get_json_schema of the same Python method; the example classes render TRL's
// exact first prompts (the transformers-checked texts of tests/rl-rollout/prompts.test.ts) against the
// real built-in env-server; dataset columns reach reset; a throwing tool is a counted failure; reward
// functions with null, weights and unscorable rollouts; and hostile classes stay bounded.

import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { rolloutChatTemplate } from '../../src/rl/rollout/templates/select.ts';
import { envTools, envToolSchemas, type DatasetRow } from '../../src/rl/rollout/env.ts';
import { promptWithObservation, renderPrompt, runRollouts, type RolloutConfig } from '../../src/rl/rollout/rollout.ts';
import { pyJsonDumps } from '../../src/rl/rollout/schema.ts';
import { computeRewardMatrix, rewardWeights, weightedRewardSum, type RewardArgs } from '../../src/rl/grpo/rewards.ts';
import { groupAdvantages } from '../../src/rl/grpo/advantages.ts';
import { stepWarnings, toolMetrics } from '../../src/rl/grpo/metrics.ts';
import { envClassTask, loadEnvClassModule, MAX_CLASS_TEXT, parseEnvClassDataset, type EnvClassModule } from '../../src/rl/tasks/env-class.ts';
import { importModuleText } from '../../src/rl/tasks/env-class-module.ts';
import { loadEnvClassFile } from '../../src/rl/tasks/env-class-file.ts';
import { callText, FakeEngine } from '../rl-rollout/fake-engine.ts';
import { qwen3Tokenizer } from '../rl-rollout/qwen3-tokenizer.ts';

const tok = qwen3Tokenizer();
const KWARGS = { enable_thinking: false };
const EOS = '<|im_end|>';

// transformers' get_json_schema of TRL's example methods (tests/rl-rollout/schema.test.ts, prompts.test.ts).
const ECHO_SCHEMA =
  '{"type": "function", "function": {"name": "echo", "description": "Echo the message back from the environment.", "parameters": {"type": "object", "properties": {"message": {"type": "string", "description": "The message to echo"}}, "required": ["message"]}, "return": {"type": "string", "description": "The echoed message."}}}';
const MOVE_SCHEMA =
  '{"type": "function", "function": {"name": "move", "description": "Move the paddle left or right.", "parameters": {"type": "object", "properties": {"direction": {"type": "string", "description": "Direction to move, either \\"left\\" or \\"right\\"."}}, "required": ["direction"]}, "return": {"type": "string", "description": "The observation after moving."}}}';
const STAY_SCHEMA =
  '{"type": "function", "function": {"name": "stay", "description": "Do nothing and let the ball fall one step.", "parameters": {"type": "object", "properties": {}}, "return": {"type": "string", "description": "The observation after staying."}}}';
const GUESS_SCHEMA =
  '{"type": "function", "function": {"name": "guess", "description": "Make a guess in the Wordle environment.", "parameters": {"type": "object", "properties": {"guess": {"type": "string", "description": "The guessed word, formatted as \'[abcde]\'"}}, "required": ["guess"]}, "return": {"type": "string", "description": "The feedback message from the environment."}}}';

/**
 * transformers 5.x get_json_schema of this Python method (its rules: Literal → type + enum, Optional[X] →
 * nullable, a default → not required, list[int] → items, dict[str, float] → additionalProperties):
 *
 *     def place(self, cells: list[int], side: Literal["left", "right"], note: Optional[str] = None,
 *               weights: dict[str, float] = {}) -> bool:
 *         """Place pieces on the board.
 *
 *         Args:
 *             cells: Cell indices, 0-80.
 *             side: Which side plays.
 *             note: A note for the log,
 *                 kept short.
 *             weights: Per-piece weights.
 *
 *         Returns:
 *             Whether the move was legal.
 *         """
 */
const PLACE_SCHEMA =
  '{"type": "function", "function": {"name": "place", "description": "Place pieces on the board.", "parameters": {"type": "object", "properties": {"cells": {"type": "array", "items": {"type": "integer"}, "description": "Cell indices, 0-80."}, "side": {"type": "string", "enum": ["left", "right"], "description": "Which side plays."}, "note": {"type": "string", "nullable": true, "description": "A note for the log, kept short."}, "weights": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Per-piece weights."}}, "required": ["cells", "side"]}, "return": {"type": "boolean", "description": "Whether the move was legal."}}}';

const PLACE_MODULE = `
export default class Board {
  reset() { return null; }

  /**
   * Place pieces on the board.
   *
   * @param {integer[]} cells Cell indices, 0-80.
   * @param {'left'|'right'} side Which side plays.
   * @param {string|null} [note] A note for the log,
   *   kept short.
   * @param {Record<string, number>} [weights={}] Per-piece weights.
   * @returns {boolean} Whether the move was legal.
   */
  place(cells, side, note, weights = {}) { return true; }

  getReward() { return 1; }
}`;

function rollConfig(over: Partial<RolloutConfig> = {}): RolloutConfig {
  return { max_completion_length: 512, max_tool_calling_iterations: null, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: KWARGS, rollout_scheduler: 'lockstep', ...over };
}

function load(text: string, source = 'test.mjs'): Promise<EnvClassModule> {
  return loadEnvClassModule(text, { source, timeoutMs: 5_000 });
}

function example(name: string): Promise<EnvClassModule> {
  return loadEnvClassFile(fileURLToPath(new URL(`../../examples/${name}`, import.meta.url)));
}

function rows(...contents: (string | Record<string, unknown>)[]): DatasetRow[] {
  return contents.map((c) => (typeof c === 'string' ? { prompt: [{ role: 'user', content: c }] } : ({ prompt: [{ role: 'user', content: 'go' }], ...c } as DatasetRow)));
}

function rewardArgs(environments: unknown[]): RewardArgs {
  const n = environments.length;
  const empty = () => Array.from({ length: n }, () => []);
  return { prompts: empty(), completions: empty(), completion_ids: empty(), environments, trainer_state: { global_step: 1 } };
}

describe('tool schemas from JSDoc equal transformers get_json_schema', () => {
  it('a method with list, Literal, Optional, dict and defaults', async () => {
    const task = envClassTask(await load(PLACE_MODULE));
    const env = task.envFactory({})();
    expect(envToolSchemas(env).map(pyJsonDumps)).toEqual([PLACE_SCHEMA]);
  });

  it('a static toolSchemas entry is rendered as given', async () => {
    const task = envClassTask(await load(`export default class S { static toolSchemas = { go: { description: 'Go.', parameters: { type: 'object', properties: { to: { type: 'string', description: 'Where' } }, required: ['to'] } } };
      reset() { return null; } go(to) { return 'at ' + to; } getReward() { return 0; } }`));
    const env = task.envFactory({})();
    expect(envToolSchemas(env).map(pyJsonDumps)).toEqual(['{"type": "function", "function": {"name": "go", "description": "Go.", "parameters": {"type": "object", "properties": {"to": {"type": "string", "description": "Where"}}, "required": ["to"]}}}']);
  });

  it('an undocumented public method, a type with no JSON schema and @params that miss a parameter are refused by name', async () => {
    await expect(async () => envClassTask(await load('export default class A { reset() { return null; } act(x) {} getReward() { return 0; } }'))).rejects.toThrow(/class A, tool 'act' has no JSDoc/);
    await expect(async () => envClassTask(await load('export default class A { reset() { return null; }\n/** Act.\n * @param {Map} x The x\n */\nact(x) {} getReward() { return 0; } }'))).rejects.toThrow(/cannot turn the type \{Map\}/);
    await expect(async () => envClassTask(await load('export default class A { reset() { return null; }\n/** Act.\n * @param {string} x The x\n */\nact(x, y) {} getReward() { return 0; } }'))).rejects.toThrow(/@param tags \(x\) do not match its parameters \(x, y\)/);
  });
});

describe('the example classes over the built-in env-server', () => {
  let server: EnvServer;
  beforeAll(async () => {
    server = await createEnvServer({ port: 0, maxConcurrentEnvs: 8 });
  });
  afterAll(async () => {
    await server.close();
  });
  const urls = () => ({ echo: `${server.url}/envs/echo`, catch: `${server.url}/envs/catch`, wordle: `${server.url}/envs/wordle` });

  async function firstPrompt(name: string, rowIndex = 0) {
    const task = envClassTask(await example(name));
    const env = task.envFactory(urls())();
    const row = task.dataset()[rowIndex]!;
    try {
      const observation = await env.reset(row);
      const tools = envTools(env);
      return { observation, ...renderPrompt({ tokenizer: tok, template: rolloutChatTemplate(tok, { hasTools: true }), prompt: promptWithObservation(row, observation), tools, chatTemplateKwargs: KWARGS }), schemas: tools.map((t) => pyJsonDumps(envToolSchemas({ tools: [t], reset: () => null })[0])) };
    } finally {
      await env.close?.();
    }
  }

  it("echo.mjs: TRL's echo prompt, token-identical (189 ids, the transformers-checked text)", async () => {
    const { text, ids, schemas } = await firstPrompt('echo.mjs');
    expect(schemas).toEqual([ECHO_SCHEMA]);
    expect(ids).toHaveLength(189);
    expect(text).toContain(`<tools>\n${ECHO_SCHEMA}\n</tools>`);
    expect(text.endsWith("<|im_start|>user\nTry to echo 'Hello World!' in the environment.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")).toBe(true);
    expect(tok.decode(ids)).toBe(text);
  });

  it('catch.mjs, wordle.mjs, multi_env.mjs: the tools sorted by name as getmembers sorts them, observations folded in', async () => {
    const c = await firstPrompt('catch.mjs');
    expect(c.schemas).toEqual([MOVE_SCHEMA, STAY_SCHEMA]);
    expect(c.observation).toMatch(/^Ball: row 1\/10, column \d\/5\nPaddle: column 3\/5/);
    const w = await firstPrompt('wordle.mjs');
    expect(w.schemas).toEqual([GUESS_SCHEMA]);
    expect(w.observation).toContain('[GAME] You are Playing Wordle.');
    const m = await firstPrompt('multi_env.mjs', 500);
    expect(m.schemas).toEqual([GUESS_SCHEMA, MOVE_SCHEMA, STAY_SCHEMA]);
    expect(m.observation).toMatch(/^Ball: row 1\/10/);
  });

  it('the built-in catch task is catch.mjs: its episodes reset with the run\'s seeds (the same games the seeded opener plays); TRL\'s error text', async () => {
    const { resolveTask } = await import('../../src/rl/tasks/resolve-task.ts');
    const { ClassEnv } = await import('../../src/rl/tasks/env-class.ts');
    const { seededEpisodes } = await import('../../src/rl/tasks/play-episode.ts');
    const openenv = (await import('../../src/openenv/index.ts')) as unknown as Record<string, unknown>;
    const { describeGrid } = (await importModuleText((await example('catch.mjs')).text, { hostModules: { 'webgrpo/openenv': openenv } })) as { describeGrid: (info: number[]) => string };
    const r = await resolveTask({ env: 'catch' });
    expect([r.name, r.env, r.preset, r.solver]).toEqual(['catch', 'catch', 'catch', 'catch']);
    const url = `${server.url}/envs/catch`;
    const seeded = seededEpisodes(700);
    const expected: string[] = [];
    for (let k = 0; k < 8; k++) {
      const episode = await seeded(url);
      expected.push(describeGrid(episode.first.observation.info_state as number[]));
      await episode.close();
    }
    const envs = r.task.envFactory({ catch: url }, seededEpisodes(700));
    const got: string[] = [];
    for (let k = 0; k < 8; k++) {
      const env = envs();
      expect(env).toBeInstanceOf(ClassEnv);
      got.push(String(await env.reset(r.task.dataset(1)[0]!)));
      if (k === 0) await expect(envTools(env).find((t) => t.declaration.name === 'move')!.call({ direction: 'up' })).rejects.toThrow("Invalid direction 'up': must be 'left' or 'right'.");
      await env.close?.();
    }
    expect(got).toEqual(expected);
    expect(new Set(got).size).toBeGreaterThan(1);
  });

  it("the built-in wordle task is wordle.mjs: a guess gets the feedback of the run's seeded game", async () => {
    const { resolveTask } = await import('../../src/rl/tasks/resolve-task.ts');
    const { ClassEnv } = await import('../../src/rl/tasks/env-class.ts');
    const { seededEpisodes } = await import('../../src/rl/tasks/play-episode.ts');
    // TextArena's observation: the whole game log in its one message.
    const wordleLog = (r: { observation: Record<string, unknown> }) => (r.observation.messages as { content: string }[])[0]!.content;
    const r = await resolveTask({ env: 'wordle' });
    expect([r.name, r.env, r.preset, r.solver]).toEqual(['wordle', 'wordle', 'wordle', 'wordle']);
    const url = `${server.url}/envs/wordle`;
    const seeded = seededEpisodes(300);
    const expected: string[] = [];
    for (let k = 0; k < 6; k++) {
      const episode = await seeded(url);
      const before = wordleLog(episode.first);
      expected.push(wordleLog(await episode.step({ message: '[crane]' })).slice(before.length));
      await episode.close();
    }
    const envs = r.task.envFactory({ wordle: url }, seededEpisodes(300));
    const got: string[] = [];
    for (let k = 0; k < 6; k++) {
      const env = envs();
      expect(env).toBeInstanceOf(ClassEnv);
      await env.reset(r.task.dataset(1)[0]!);
      got.push(String(await envTools(env)[0]!.call({ guess: '[crane]' })));
      await env.close?.();
    }
    expect(got).toEqual(expected);
    expect(new Set(got).size).toBeGreaterThan(1);
  });

  it("the built-in multi task is multi_env.mjs: routed by the env column, the other game's tools fail by name, each reward None for the other game", async () => {
    const { resolveTask } = await import('../../src/rl/tasks/resolve-task.ts');
    const { ClassEnv } = await import('../../src/rl/tasks/env-class.ts');
    const { seededEpisodes } = await import('../../src/rl/tasks/play-episode.ts');
    const r = await resolveTask({ env: 'multi' });
    expect([r.name, r.env, r.preset, r.solver]).toEqual(['multi', null, null, null]);
    expect(r.task.dataset(2).map((row) => row.env)).toEqual(['wordle', 'wordle', 'catch', 'catch']);
    expect(r.task.rewardFuncs.map((f) => f.name)).toEqual(['wordle_reward', 'catch_reward']);
    const env = r.task.envFactory(urls(), seededEpisodes(0))() as InstanceType<typeof ClassEnv>;
    const call = (name: string, args: Record<string, unknown> = {}) => envTools(env).find((t) => t.declaration.name === name)!.call(args);
    const rewards = async () => Promise.all(r.task.rewardFuncs.map(async (f) => (await f({ prompts: [], completions: [], completion_ids: [], environments: [env], trainer_state: { global_step: 0 } }))[0]));
    try {
      expect(await env.reset({ prompt: [] })).toContain('[GAME] You are Playing Wordle.'); // default: wordle
      await expect(call('move', { direction: 'left' })).rejects.toThrow('move is only available in Catch');
      await expect(call('stay')).rejects.toThrow('stay is only available in Catch');
      expect(String(await call('guess', { guess: '[crane]' }))).toMatch(/CRANE|crane/i);
      expect((await rewards())[1]).toBeNull();
      expect(await env.reset({ prompt: [], env: 'catch' })).toMatch(/^Ball: row 1\/10/);
      await expect(call('guess', { guess: '[crane]' })).rejects.toThrow('guess is only available in Wordle');
      await expect(call('move', { direction: 'up' })).rejects.toThrow("Invalid direction 'up': must be 'left' or 'right'.");
      await call('move', { direction: 'left' });
      expect(await rewards()).toEqual([null, 0]);
      await expect(env.reset({ prompt: [], env: 'chess' })).rejects.toThrow('Unknown environment: chess');
    } finally {
      await env.close();
    }
  });

  it('echo.mjs trains its reward: a scripted echo call pays 0.1 per character through reward_func', async () => {
    const task = envClassTask(await example('echo.mjs'));
    const engine = new FakeEngine(tok, (ctx) => (ctx.includes('<tool_response>') ? 'Done.' + EOS : callText('echo', { message: 'Hello World!' }) + EOS));
    const rs = await runRollouts({ engine, tokenizer: tok, rows: task.dataset(1), envFactory: task.envFactory(urls()), config: rollConfig(), seed: 1 });
    expect(rs[0]!.completion[1]).toMatchObject({ role: 'tool', content: 'Hello World!' });
    const R = await computeRewardMatrix(task.rewardFuncs, rewardArgs(rs.map((r) => r.env)));
    expect(R[0]![0]).toBeCloseTo(1.2, 10);
    await Promise.all(rs.map((r) => r.env.close?.()));
  });
});

describe('the contract', () => {
  const SPY = `
export default class Spy {
  reset(row) { this.reward = 0; return JSON.stringify(row); }
  /**
   * Answer the question.
   * @param {string} text The answer
   */
  answer(text) { if (text === 'boom') throw new Error('bad answer: ' + text); this.reward = 1; return 'ok'; }
  getReward() { return this.reward; }
}`;

  it('every dataset column reaches reset (prompt included); JSONL rows need no prompt', async () => {
    const mod = await load(SPY);
    const dataset = parseEnvClassDataset('{"question_id": 7, "seed": 3}\n{"prompt": "Q?", "question_id": 8, "meta": {"a": [1]}}\n', 'rows.jsonl');
    const task = envClassTask(mod, { rows: dataset });
    const env = task.envFactory({})();
    expect(JSON.parse((await env.reset(task.dataset()[0]!))!)).toEqual({ question_id: 7, seed: 3, prompt: [{ role: 'user', content: '' }] });
    expect(JSON.parse((await env.reset(task.dataset()[1]!))!)).toEqual({ prompt: [{ role: 'user', content: 'Q?' }], question_id: 8, meta: { a: [1] } });
    expect(task.dataset()).toEqual([
      { question_id: 7, seed: 3, prompt: [{ role: 'user', content: '' }] },
      { prompt: [{ role: 'user', content: 'Q?' }], question_id: 8, meta: { a: [1] } },
    ]);
  });

  it("the dict form routes by the 'environment' column, without passing it to reset, and shows each env only its tools", async () => {
    const mod = await load(`
class A { reset(row) { return 'A:' + Object.keys(row).sort().join(','); }
  /** Do a. */
  a() { return 'a'; } getReward() { return 1; } }
class B { reset(row) { return 'B'; }
  /** Do b. */
  b() { return 'b'; } }
export function b_reward({ environments }) { return environments.map((e) => (e instanceof B ? 0.5 : null)); }
export const rewardFuncs = [b_reward];
export default { first: A, second: B };`);
    const task = envClassTask(mod, { rows: rows({ environment: 'first', x: 1 }, { environment: 'second' }) });
    const env = task.envFactory({})();
    expect(await env.reset(task.dataset()[0]!)).toBe('A:prompt,x');
    expect(envTools(env).map((t) => t.declaration.name)).toEqual(['a']);
    expect(await env.reset(task.dataset()[1]!)).toBe('B');
    expect(envTools(env).map((t) => t.declaration.name)).toEqual(['b']);
    await expect(env.reset(rows({ environment: 'third' })[0]!)).rejects.toThrow(/environment="third", which is not among the module's environments: 'first', 'second'/);
    expect(task.rewardFuncs.map((f) => f.name)).toEqual(['b_reward', 'A']);
    expect(() => envClassTask(mod)).toThrow(/several environments \(first, second\): give rows with an 'environment' column/);
  });

  it('a tool that throws answers {"error": …} and counts in tools/failure_frequency', async () => {
    const task = envClassTask(await load(SPY), { rows: rows({ question_id: 1 }) });
    const engine = new FakeEngine(tok, (ctx) => (ctx.includes('<tool_response>') ? 'Done.' + EOS : callText('answer', { text: 'boom' }) + callText('answer', { text: 'fine' }) + EOS));
    const rs = await runRollouts({ engine, tokenizer: tok, rows: task.dataset(), envFactory: task.envFactory({}), config: rollConfig(), seed: 1 });
    expect(rs[0]!.completion.slice(1, 3)).toEqual([
      { role: 'tool', name: 'answer', content: "{'error': 'bad answer: boom'}" },
      { role: 'tool', name: 'answer', content: 'ok' },
    ]);
    expect(rs[0]!.toolFailures).toBe(1);
    expect(toolMetrics(rs.map((r) => ({ modelTokens: 0, totalTokens: 0, truncated: r.truncated, toolCalls: r.toolCalls, toolFailures: r.toolFailures })))['tools/failure_frequency']).toBe(0.5);
  });

  it('several reward functions with null: NaN, the weighted nansum, rewards/<name>/mean; all-null rollouts are unscorable', async () => {
    const mod = await load(`
export default class G { reset(row) { this.kind = row.kind; return null; } getReward() { return this.kind === 'none' ? null : 2; } }
export function first({ environments }) { return environments.map((e) => (e.kind === 'a' ? 1 : null)); }
export function second({ environments }) { return environments.map((e) => (e.kind === 'none' ? null : 0.5)); }
export const rewardFuncs = [first, second];`);
    const task = envClassTask(mod, { rows: rows({ kind: 'a' }, { kind: 'b' }, { kind: 'none' }, { kind: 'none' }) });
    const envs = task.dataset().map(() => task.envFactory({})());
    await Promise.all(envs.map((e, i) => e.reset(task.dataset()[i]!)));
    expect(task.rewardFuncs.map((f) => f.name)).toEqual(['first', 'second', 'G']);
    const R = await computeRewardMatrix(task.rewardFuncs, rewardArgs(envs));
    expect(R.map((c) => [...c])).toEqual([[1, NaN, NaN, NaN], [0.5, 0.5, NaN, NaN], [2, 2, NaN, NaN]]);
    const r = weightedRewardSum(R, rewardWeights([1, 2, 0.5], task.rewardFuncs));
    expect([...r]).toEqual([1 + 1 + 1, 1 + 1, NaN, NaN]);
    // Group of 2 ([3, 2]) and a group of two unscorable rollouts: their advantages are 0.
    const { advantages } = groupAdvantages(r, 2, 'group');
    expect(advantages[2]).toBe(0);
    expect(advantages[3]).toBe(0);
    expect(advantages[0]).toBeGreaterThan(0);
  });

  it('an environment whose episodes earn nothing scores 0 (reward starts at 0, as in TRL) and the step warns', async () => {
    const task = envClassTask(await example('echo.mjs'));
    const fakeEnvs = [{ reward: 0 }, { reward: 0 }];
    const R = await computeRewardMatrix(task.rewardFuncs, rewardArgs(fakeEnvs));
    expect([...R[0]!]).toEqual([0, 0]);
    expect(stepWarnings({ 'rewards/reward_func/mean': 0, 'rewards/reward_func/std': 0, 'tools/call_frequency': 1 }).join('\n')).toMatch(/no rollout of this step earned any reward/);
  });

  it('with no dataset the environment owns the data: an empty dataset (the trainer drives with empty prompts, reset gives the prompt)', async () => {
    const task = envClassTask(await load(`export default class Own { reset() { return 'Solve 2+2.'; } getReward() { return 0; } }`));
    expect(task.dataset()).toEqual([]);
    const env = task.envFactory({})();
    expect(promptWithObservation({ prompt: [{ role: 'user', content: '' }] }, await env.reset({ prompt: [{ role: 'user', content: '' }] }))).toEqual([{ role: 'user', content: 'Solve 2+2.' }]);
  });

  it('instances are pooled: one per rollout slot, constructed once, reset for every episode', async () => {
    const mod = await load(`let made = 0; export default class P { constructor() { this.id = ++made; this.resets = 0; } reset() { this.resets++; return 'i' + this.id + 'r' + this.resets; } getReward() { return 0; } }`);
    const task = envClassTask(mod, { rows: rows('x') });
    const factory = task.envFactory({});
    const engine = new FakeEngine(tok, () => 'Done.' + EOS);
    for (let round = 1; round <= 2; round++) {
      const rs = await runRollouts({ engine, tokenizer: tok, rows: [...task.dataset(), ...task.dataset()], envFactory: factory, config: rollConfig(), seed: round });
      expect(rs.map((r) => r.prompt[0]!.content)).toEqual([`xi1r${round}`, `xi2r${round}`]);
    }
  });
});

describe('hostile classes stay bounded', () => {
  it('a module that never finishes loading, or throws while loading, is an error naming it', async () => {
    await expect(importModuleText('await new Promise(() => {}); export default 1;', { source: 'hang.mjs', timeoutMs: 300 })).rejects.toThrow(/hang.mjs did not finish loading within 0.3 s/);
    await expect(load('throw new Error("nope"); export default class X {}', 'throws.mjs')).rejects.toThrow(/throws.mjs failed to load: nope/);
    await expect(load('export default 42', 'num.mjs')).rejects.toThrow(/num.mjs: the default export must be an environment class/);
    await expect(load('export default class X {}', 'noreset.mjs')).rejects.toThrow(/class X has no reset\(row\) method/);
  });

  it('a constructor that throws, a reset that never resolves and a tool that never resolves are cut; other rollouts go on', async () => {
    const mod = await load(`
export default class Hostile {
  constructor() { this.mode = null; }
  reset(row) {
    if (row.mode === 'ctor') throw new Error('constructor-ish failure');
    if (row.mode === 'hang') return new Promise(() => {});
    this.mode = row.mode;
    return null;
  }
  /** Wait forever. */
  wait() { return new Promise(() => {}); }
  /**
   * Return a lot.
   * @param {integer} n Characters
   */
  flood(n) { return 'x'.repeat(n); }
  getReward() { return 1; }
}`);
    const task = envClassTask(mod, { rows: rows({ mode: 'ctor' }, { mode: 'hang' }, { mode: 'wait' }, { mode: 'flood' }, { mode: 'fine' }) });
    expect(task.config.env_call_timeout_s).toBe(60);
    const policy = (ctx: string): string => {
      if (ctx.includes('<tool_response>')) return 'Done.' + EOS;
      const user = ctx.slice(ctx.lastIndexOf('<|im_start|>user\n'));
      if (user.includes('W')) return callText('wait', {}) + EOS;
      if (user.includes('F')) return callText('flood', { n: 8_000_000 }) + EOS;
      return 'Done.' + EOS;
    };
    const rowsIn = task.dataset().map((r, i) => ({ ...r, prompt: [{ role: 'user' as const, content: ['C', 'H', 'W', 'F', 'ok'][i]! }] }));
    const started = Date.now();
    const rs = await runRollouts({ engine: new FakeEngine(tok, policy), tokenizer: tok, rows: rowsIn, envFactory: task.envFactory({}), config: rollConfig({ env_call_timeout_s: 0.5, max_completion_length: 64 }), seed: 1 });
    // The bound on a hostile class: the call timeout, not forever.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(rs[0]!.error).toMatch(/constructor-ish failure/);
    expect(rs[1]!.error).toMatch(/reset timed out after 0.5 s/);
    expect(rs[2]!.error).toMatch(/env_call_timeout_s = 0.5/);
    // 8 MB from a tool: cut to MAX_CLASS_TEXT before tokenizing, then rolled back by the token budget.
    expect(rs[3]!.error ?? null).toBeNull();
    expect(rs[3]!.completionIds.length).toBeLessThanOrEqual(64);
    expect(rs[4]!.error ?? null).toBeNull();
    expect(MAX_CLASS_TEXT).toBeLessThan(8_000_000);
  });

  it('a tool returning a huge object is cut as text (TRL str(result)); a getReward that returns text is refused by name', async () => {
    const mod = await load(`export default class O { reset() { return null; }
  /** Return a huge object. */
  heap() { return { rows: Array.from({ length: 200000 }, (_, i) => i) }; }
  getReward() { return 'high'; } }`);
    const task = envClassTask(mod, { rows: rows('x') });
    const env = task.envFactory({})();
    await env.reset(task.dataset()[0]!);
    const text = (await envTools(env)[0]!.call({})) as string;
    expect(text.startsWith("{'rows': [0, 1, 2")).toBe(true);
    expect(text.length).toBeLessThan(MAX_CLASS_TEXT + 100);
    await expect(computeRewardMatrix(task.rewardFuncs, rewardArgs([env]))).rejects.toThrow(/reward function 'O' returned a string for completion 0/);
  });

  it('reset returning megabytes is cut before the prompt is tokenized', async () => {
    const task = envClassTask(await load(`export default class Big { reset() { return 'y'.repeat(5_000_000); } getReward() { return 0; } }`), { rows: rows('x') });
    const env = task.envFactory({})();
    const obs = (await env.reset(task.dataset()[0]!))!;
    expect(obs.length).toBeLessThan(MAX_CLASS_TEXT + 100);
    expect(obs).toMatch(/more characters cut by the trainer\]$/);
  });
});

describe('the built-in echo task is examples/echo.mjs', () => {
  it('resolveTask echo gives the class task (ClassEnv instances), with the echo preset and solver', async () => {
    const { resolveTask } = await import('../../src/rl/tasks/resolve-task.ts');
    const { ClassEnv } = await import('../../src/rl/tasks/env-class.ts');
    const r = await resolveTask({ env: 'echo' });
    expect([r.name, r.preset, r.solver]).toEqual(['echo', 'echo', 'echo']);
    const env = r.task.envFactory({ echo: 'http://127.0.0.1:9/envs/echo' })();
    expect(env).toBeInstanceOf(ClassEnv);
    expect(envToolSchemas(env).map(pyJsonDumps)).toEqual([ECHO_SCHEMA]);
    expect(r.task.dataset().map((row) => row.prompt[0]!.content)).toEqual([
      "Try to echo 'Hello World!' in the environment.",
      "Make the environment echo 'Goodbye World!'",
      "Can you ask the environment to echo 'TRL is great!'?",
      "What happens if you ask the environment to echo 'I love RLHF!'?",
      "Try to make the environment echo 'OpenEnv is awesome!'",
    ]);
  });
});

describe('sudoku.mjs (TRL sudoku.py against TextArena Sudoku-v0)', () => {
  it("one tool, place(row, col, number), as get_json_schema gives it; the reward getters are not tools; TRL's five reward names", async () => {
    const task = envClassTask(await example('sudoku.mjs'));
    const env = task.envFactory({ echo: 'http://127.0.0.1:9/envs/echo' })();
    expect(envToolSchemas(env).map(pyJsonDumps)).toEqual([
      '{"type": "function", "function": {"name": "place", "description": "Place a number on the Sudoku board.", "parameters": {"type": "object", "properties": {"row": {"type": "integer", "description": "Row number (1-9)."}, "col": {"type": "integer", "description": "Column number (1-9)."}, "number": {"type": "integer", "description": "Number to place (1-9)."}}, "required": ["row", "col", "number"]}, "return": {"type": "string", "description": "The result of the move and updated board state."}}}',
    ]);
    expect(task.rewardFuncs.map((f) => f.name)).toEqual(['reward_empty_cell', 'reward_valid_moves', 'reward_correct', 'reward_repetition', 'reward_progress']);
    expect(task.dataset(1)[0]!.prompt.map((m) => m.role)).toEqual(['system', 'user']);
  });
});

describe('module text, as the app will paste it', () => {
  it('envClassTaskFromText binds pasted text (webgrpo/openenv included); a relative import without a file is refused by name', async () => {
    const { envClassTaskFromText } = await import('../../src/rl/tasks/env-class.ts');
    const task = await envClassTaskFromText(`import { envUrl } from 'webgrpo/openenv';
export default class Pasted { reset() { return envUrl('echo'); } getReward() { return 0; } }`, { rows: rows('x') });
    const env = task.envFactory({ echo: 'http://127.0.0.1:9/envs/echo' })();
    expect(await env.reset(task.dataset()[0]!)).toBe('http://127.0.0.1:9/envs/echo');
    await expect(envClassTaskFromText(`import { x } from './helper.mjs'; export default class P { reset() { return null; } }`)).rejects.toThrow(/your environment imports '.\/helper.mjs', a relative path, but it has no file/);
  });
});

describe('browsergym_llm.mjs (TRL browsergym_llm.py)', () => {
  it("is the built-in browsergym task: TRL's five tools sorted as getmembers sorts them, its rows over the task mix", async () => {
    const { resolveTask } = await import('../../src/rl/tasks/resolve-task.ts');
    const { ClassEnv } = await import('../../src/rl/tasks/env-class.ts');
    const BROWSERGYM_SYSTEM_PROMPT = (await example('browsergym_llm.mjs')).dataset![0]!.prompt[0]!.content;
    const r = await resolveTask({ env: 'browsergym:click-test,enter-text' });
    expect([r.name, r.env, r.preset, r.solver]).toEqual(['browsergym', 'browsergym', 'browsergym', 'browsergym']);
    const env = r.task.envFactory({ browsergym: 'http://127.0.0.1:9/envs/browsergym' })();
    expect(env).toBeInstanceOf(ClassEnv);
    expect(envTools(env).map((t) => t.declaration.name)).toEqual(['click', 'fill', 'noop', 'scroll', 'send_keys']);
    expect(r.task.dataset(3)).toEqual(['click-test', 'enter-text', 'click-test'].map((task_name) => ({ prompt: [{ role: 'system', content: BROWSERGYM_SYSTEM_PROMPT }, { role: 'user', content: 'Complete the web task successfully.' }], task_name })));
    expect(r.task.config).toMatchObject({ learning_rate: 5e-6, num_generations: 4, max_completion_length: 1024, temperature: 0.7, top_k: 50, gradient_accumulation_steps: 32, warmup_steps: 10 });
  });
});
