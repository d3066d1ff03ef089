import { describe, expect, it } from 'vitest';
import { EnvFailure, type DatasetRow, type Tool, type ToolEnv } from '../../src/rl/rollout/env.ts';
import { ClassEnv } from '../../src/rl/tasks/env-class.ts';
import { builtinClassTask } from '../../src/rl/tasks/env-class-builtin.ts';
import { renderPrompt, runRollouts, toolSuffixIds, type RolloutConfig } from '../../src/rl/rollout/rollout.ts';
import { QWEN3_TRAINING_TEMPLATE } from '../../src/rl/rollout/templates/qwen3-training.ts';
import { OpenEnvError } from '../../src/openenv/index.ts';
import { callText, FakeEngine } from './fake-engine.ts';
import { catchObservation, scriptedServer } from './fake-episodes.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

const tok = qwen3Tokenizer();
const EOS = '<|im_end|>';
const KWARGS = { enable_thinking: false };
const HELLO_SUFFIX = [198, 151644, 872, 198, 151665, 198, 9707, 4337, 4894, 151666, 151645, 198, 151644, 77091, 198, 151667, 271, 151668, 271];

function config(overrides: Partial<RolloutConfig> = {}): RolloutConfig {
  return { max_completion_length: 512, max_tool_calling_iterations: null, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: KWARGS, rollout_scheduler: 'lockstep', ...overrides };
}

/** A local env: `echo(message)` returns the message, `fail()` raises, `die()` is an env failure. */
class LocalEnv implements ToolEnv {
  resets = 0;
  readonly tools: Tool[] = [
    { declaration: { name: 'echo', description: 'Echo.', parameters: [{ name: 'message', type: 'string', description: 'm' }] }, call: (a) => a.message },
    {
      declaration: { name: 'fail', description: 'Fail.', parameters: [] },
      call: () => {
        throw new Error('Episode is done.');
      },
    },
    { declaration: { name: 'die', description: 'Die.', parameters: [] }, call: () => Promise.reject(new EnvFailure('Connection closed: 1006 ""')) },
  ];
  async reset(row: DatasetRow): Promise<string | null> {
    this.resets++;
    if (row.failReset) throw new EnvFailure('Server at capacity: 2/2 sessions active. Cannot accept new connections. (code: CAPACITY_REACHED)');
    return (row.observation as string | undefined) ?? null;
  }
}

/** Scripts by the user message: `script[key][turn]`. */
function policyFrom(script: Record<string, string[]>) {
  return (context: string): string => {
    const key = Object.keys(script).find((k) => context.includes(`<|im_start|>user\n${k}`));
    if (!key) throw new Error('no script for this context');
    const turns = script[key];
    // Tool-response user turns after the prompt mark the turn number.
    const turn = context.split('<|im_start|>assistant\n').length - 2;
    return turns[Math.min(turn, turns.length - 1)];
  };
}

function rows(...keys: (string | DatasetRow)[]): DatasetRow[] {
  return keys.map((k) => (typeof k === 'string' ? { prompt: [{ role: 'user', content: k }] } : k));
}

describe('runRollouts: the multi-turn tool loop with a scripted policy', () => {
  it('one call, then an answer: ids by concatenation, suffix masked, messages, counts', async () => {
    const engine = new FakeEngine(tok, policyFrom({ A: [callText('echo', { message: 'Hello World!' }) + EOS, 'Done.' + EOS] }));
    const env = new LocalEnv();
    const [r] = await runRollouts({ engine, tokenizer: tok, rows: rows('A'), envFactory: () => env, config: config(), seed: 1 });
    const turn0 = tok.encode(callText('echo', { message: 'Hello World!' }) + EOS);
    const turn1 = tok.encode('Done.' + EOS);
    expect(turn0).toEqual([151657, 198, 4913, 606, 788, 330, 3047, 497, 330, 16370, 788, 5212, 1994, 788, 330, 9707, 4337, 8958, 11248, 151658, 151645]);
    expect(r.completionIds).toEqual([...turn0, ...HELLO_SUFFIX, ...turn1]);
    expect(r.toolMask).toEqual([...turn0.map(() => 1), ...HELLO_SUFFIX.map(() => 0), ...turn1.map(() => 1)]);
    expect(r.logprobs).toEqual([...turn0.map((_, i) => -(i + 1) / 100), ...HELLO_SUFFIX.map(() => 0), ...turn1.map((_, i) => -(i + 1) / 100)]);
    expect(r.completion).toEqual([
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'echo', arguments: { message: 'Hello World!' } } }] },
      { role: 'tool', name: 'echo', content: 'Hello World!' },
      { role: 'assistant', content: 'Done.' },
    ]);
    expect(r.truncated).toBe(false);
    expect(r.toolCalls).toBe(1);
    expect(r.toolFailures).toBe(0);
    expect(r.error).toBeUndefined();
    expect(r.env).toBe(env);
    const expectedPrompt = renderPrompt({ tokenizer: tok, template: QWEN3_TRAINING_TEMPLATE, prompt: r.prompt, tools: [...env.tools].sort((a, b) => a.declaration.name.localeCompare(b.declaration.name)), chatTemplateKwargs: KWARGS });
    expect(r.promptIds).toEqual(expectedPrompt.ids);
    // The engine's sequence held exactly prompt + completion; every sequence was released.
    expect(engine.batches).toEqual([[{ seq: 1, maxNewTokens: 512 }], [{ seq: 1, maxNewTokens: 512 - turn0.length - HELLO_SUFFIX.length }]]);
    expect(engine.released).toEqual([1]);
    expect(engine.sequences.size).toBe(0);
    // One seed per batch: turns differ by the position counter, rollouts by their stream (engine sampler).
    expect(engine.seeds).toEqual([1, 1]);
  });

  it('decodes every live rollout in one engine batch per turn; the observation is appended to the prompt', async () => {
    const engine = new FakeEngine(
      tok,
      policyFrom({
        one: ['No tools needed.' + EOS],
        two: [callText('echo', { message: 'x' }) + EOS, 'ok' + EOS],
        three: [callText('echo', { message: 'a' }) + EOS, callText('echo', { message: 'b' }) + EOS, 'fin' + EOS],
      }),
    );
    const rs = await runRollouts({
      engine, tokenizer: tok, rows: rows('one', 'two', { prompt: [{ role: 'user', content: 'three\n' }], observation: 'OBS' }),
      envFactory: () => new LocalEnv(), config: config(), seed: 2,
    });
    expect(engine.batches.map((b) => b.map((i) => i.seq))).toEqual([[1, 2, 3], [2, 3], [3]]);
    expect(rs.map((r) => r.toolCalls)).toEqual([0, 1, 2]);
    expect(rs[2].prompt).toEqual([{ role: 'user', content: 'three\nOBS' }]);
    expect(tok.decode(rs[2].promptIds)).toContain('<|im_start|>user\nthree\nOBS<|im_end|>');
    expect(rs[0].completion).toEqual([{ role: 'assistant', content: 'No tools needed.' }]);
    expect(rs[2].completion.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant', 'tool', 'assistant']);
    for (const r of rs) expect(r.toolMask).toHaveLength(r.completionIds.length);
  });

  it('several calls in one turn share one suffix; tool errors become error dicts and count as failures', async () => {
    const turn0 = `Trying.\n${callText('echo', { message: 'a' })}\n${callText('nope', {})}\n${callText('fail', {})}\n${callText('echo', { text: 'b' })}${EOS}`;
    const engine = new FakeEngine(tok, policyFrom({ A: [turn0, 'ok' + EOS] }));
    const [r] = await runRollouts({ engine, tokenizer: tok, rows: rows('A'), envFactory: () => new LocalEnv(), config: config(), seed: 3 });
    expect(r.toolCalls).toBe(4);
    expect(r.toolFailures).toBe(3);
    const toolMessages = r.completion.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.content)).toEqual([
      'a',
      "{'error': 'Tool nope not found.'}",
      "{'error': 'Episode is done.'}",
      "{'error': \"echo() got an unexpected keyword argument 'text'\"}",
    ]);
    const suffix = toolSuffixIds({ tokenizer: tok, template: QWEN3_TRAINING_TEMPLATE, chatTemplateKwargs: KWARGS }, toolMessages as never);
    expect(tok.decode(suffix).split('<tool_response>').length - 1).toBe(4);
    const n0 = tok.encode(turn0).length;
    expect(r.completionIds.slice(n0, n0 + suffix.length)).toEqual(suffix);
    expect(r.toolMask.slice(n0, n0 + suffix.length).every((m) => m === 0)).toBe(true);
    expect(r.toolMask.slice(0, n0).every((m) => m === 1)).toBe(true);
  });

  it('max_tool_calling_iterations: the calls of the last turn are not executed', async () => {
    const call = callText('echo', { message: 'again' }) + EOS;
    const engine = new FakeEngine(tok, policyFrom({ A: [call] }));
    const [r] = await runRollouts({ engine, tokenizer: tok, rows: rows('A'), envFactory: () => new LocalEnv(), config: config({ max_tool_calling_iterations: 2 }), seed: 4 });
    expect(engine.batches).toHaveLength(3);
    expect(r.toolCalls).toBe(2);
    expect(r.completion.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant', 'tool', 'assistant']);
    expect((r.completion[4] as { tool_calls?: unknown[] }).tool_calls).toHaveLength(1);
    expect(r.completionIds[r.completionIds.length - 1]).toBe(tok.eosTokenId);
    expect(r.truncated).toBe(false);
  });

  it('budget rollback: a suffix that would overflow max_completion_length is dropped with its tool messages', async () => {
    const call = callText('echo', { message: 'Hello World!' }) + EOS; // 21 ids, suffix 19 ids
    const engine = new FakeEngine(tok, policyFrom({ A: [call, 'never' + EOS] }));
    const [r] = await runRollouts({ engine, tokenizer: tok, rows: rows('A'), envFactory: () => new LocalEnv(), config: config({ max_completion_length: 39 }), seed: 5 });
    expect(r.completionIds).toEqual(tok.encode(call));
    expect(r.toolMask).toEqual(tok.encode(call).map(() => 1));
    expect(r.completion).toHaveLength(1);
    expect(r.toolCalls).toBe(1); // executed, then rolled back (TRL counts it)
    expect(r.truncated).toBe(false);
    expect(engine.batches).toHaveLength(1);
    // Said, not silent: the call (21) and its suffix (19) needed 40 of 39.
    expect(r.overBudget).toEqual({ tokens: 40, budget: 39 });
  });

  it('budget: the next turn is clipped so that model + suffix tokens never exceed max_completion_length', async () => {
    const call = callText('echo', { message: 'Hello World!' }) + EOS;
    const engine = new FakeEngine(tok, policyFrom({ A: [call, 'A long answer that will not fit in the budget at all.' + EOS] }));
    const [r] = await runRollouts({ engine, tokenizer: tok, rows: rows('A'), envFactory: () => new LocalEnv(), config: config({ max_completion_length: 45 }), seed: 6 });
    expect(engine.batches[1]).toEqual([{ seq: 1, maxNewTokens: 45 - 21 - 19 }]);
    expect(r.completionIds).toHaveLength(45);
    expect(r.toolMask.filter((m) => m === 1)).toHaveLength(21 + 5);
    expect(r.truncated).toBe(true);
  });

  it('budget exactly spent by the suffix: the suffix joins the completion, nothing more is sampled', async () => {
    const call = callText('echo', { message: 'Hello World!' }) + EOS;
    const engine = new FakeEngine(tok, policyFrom({ A: [call, 'never' + EOS] }));
    const [r] = await runRollouts({ engine, tokenizer: tok, rows: rows('A'), envFactory: () => new LocalEnv(), config: config({ max_completion_length: 40 }), seed: 7 });
    expect(engine.batches).toHaveLength(1);
    expect(r.completionIds).toEqual([...tok.encode(call), ...HELLO_SUFFIX]);
    expect(r.completion.map((m) => m.role)).toEqual(['assistant', 'tool']);
    expect(r.truncated).toBe(true);
    expect(r.overBudget).toBeUndefined();
  });

  it('max_position_embeddings: a tool turn reaching the model length is rolled back; an oversized prompt is unscorable', async () => {
    const call = callText('echo', { message: 'Hello World!' }) + EOS;
    const probe = new FakeEngine(tok, policyFrom({ A: [call] }));
    const [first] = await runRollouts({ engine: probe, tokenizer: tok, rows: rows('A'), envFactory: () => new LocalEnv(), config: config({ max_tool_calling_iterations: 0 }), seed: 13 });
    const promptLength = first.promptIds.length;
    // prompt + turn (21) + suffix (19) == max_position_embeddings: the suffix is dropped.
    const engine = new FakeEngine(tok, policyFrom({ A: [call, 'never' + EOS] }), promptLength + 40);
    const [r] = await runRollouts({ engine, tokenizer: tok, rows: rows('A'), envFactory: () => new LocalEnv(), config: config(), seed: 14 });
    expect(r.completionIds).toEqual(tok.encode(call));
    expect(r.completion).toHaveLength(1);
    // The context's end is the budget here: 40 tokens needed, 39 left after the prompt before max_position_embeddings.
    expect(r.overBudget).toEqual({ tokens: 40, budget: 39 });
    const tiny = new FakeEngine(tok, policyFrom({ A: [call] }), promptLength);
    const [big] = await runRollouts({ engine: tiny, tokenizer: tok, rows: rows('A'), envFactory: () => new LocalEnv(), config: config(), seed: 15 });
    expect(big.error).toBe(`prompt of ${promptLength} tokens does not fit max_position_embeddings ${promptLength}`);
    expect(tiny.batches).toHaveLength(0);
  });

  it('the first turn is capped at max_completion_length and flagged truncated', async () => {
    const engine = new FakeEngine(tok, policyFrom({ A: ['word '.repeat(50) + EOS] }));
    const [r] = await runRollouts({ engine, tokenizer: tok, rows: rows('A'), envFactory: () => new LocalEnv(), config: config({ max_completion_length: 8 }), seed: 8 });
    expect(r.completionIds).toHaveLength(8);
    expect(r.truncated).toBe(true);
    expect(r.completion).toEqual([{ role: 'assistant', content: 'word' + ' word'.repeat(7) }]);
  });

  it('a failed reset makes a rollout unscorable; an env failure in a tool call is the tool result (TRL), and the episode goes on', async () => {
    const engine = new FakeEngine(tok, policyFrom({ A: [callText('die', {}) + EOS, 'sorry' + EOS], B: [callText('echo', { message: 'x' }) + EOS, 'ok' + EOS] }));
    const rs = await runRollouts({
      engine, tokenizer: tok, rows: rows('A', 'B', { prompt: [{ role: 'user', content: 'C' }], failReset: true }),
      envFactory: () => new LocalEnv(), config: config(), seed: 9,
    });
    expect(rs[0].error).toBeUndefined();
    expect(rs[0].completion[1]).toEqual({ role: 'tool', name: 'die', content: `{'error': 'Connection closed: 1006 ""'}` });
    expect(rs[0].completion).toHaveLength(3);
    expect([rs[0].toolCalls, rs[0].toolFailures]).toEqual([1, 1]);
    expect(rs[1].error).toBeUndefined();
    expect(rs[1].completion).toHaveLength(3);
    expect(rs[2].error).toMatch(/^reset failed: Server at capacity/);
    expect(rs[2].completionIds).toEqual([]);
    expect(rs[2].truncated).toBe(false);
    expect(engine.batches[0].map((b) => b.seq)).toEqual([1, 2]);
    expect(engine.sequences.size).toBe(0);
  });

  it('pools env instances per factory: slot i gets the same instance on every call', async () => {
    const made: LocalEnv[] = [];
    const factory = () => {
      const env = new LocalEnv();
      made.push(env);
      return env;
    };
    const engine = new FakeEngine(tok, policyFrom({ A: ['a' + EOS] }));
    const first = await runRollouts({ engine, tokenizer: tok, rows: rows('A', 'A'), envFactory: factory, config: config(), seed: 10 });
    const second = await runRollouts({ engine, tokenizer: tok, rows: rows('A', 'A', 'A'), envFactory: factory, config: config(), seed: 11 });
    expect(made).toHaveLength(3);
    expect(second[0].env).toBe(first[0].env);
    expect(second[1].env).toBe(first[1].env);
    expect(made.map((e) => e.resets)).toEqual([2, 2, 1]);
  });

  it('a catch episode of the built-in catch task (catch.mjs) over a scripted OpenEnv server', async () => {
    const served = await scriptedServer([
      { first: catchObservation(0, 0, 2), steps: [catchObservation(1, 0, 1), new OpenEnvError('CLOSED', 'Connection to ws://env/catch/ws closed: 1006 ""')] },
    ]);
    const script = [
      callText('move', { direction: 'left' }) + EOS,
      `${callText('move', { direction: 'up' })}\n${callText('stay', {})}${EOS}`,
      'The connection dropped.' + EOS,
    ];
    const engine = new FakeEngine(tok, (context) => script[context.split('<|im_start|>assistant\n').length - 2]);
    const task = (await builtinClassTask('catch'))!;
    const [r] = await runRollouts({
      engine, tokenizer: tok, rows: task.dataset(1), envFactory: task.envFactory({ catch: served.url }),
      config: config(), seed: 12,
    }).finally(served.close);
    expect(served.log.actions[0]).toEqual([{ action_id: 0, game_name: 'catch', game_params: {} }, { action_id: 1, game_name: 'catch', game_params: {} }]);
    expect(r.completion[1]).toEqual({ role: 'tool', name: 'move', content: 'Ball: row 2/10, column 1/5\nPaddle: column 2/5\nThe ball is 1 column(s) to the LEFT of the paddle.' });
    // Both failures are tool results the model reads (TRL): the bad argument and the dropped connection.
    expect(r.completion.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant', 'tool', 'tool', 'assistant']);
    expect(r.completion[4]).toMatchObject({ role: 'tool', name: 'stay' });
    expect((r.completion[4] as { content: string }).content).toMatch(/^\{'error': 'HTTP 500 from POST http:\/\/127\.0\.0\.1:\d+\/step: .*Connection to ws:\/\/env\/catch\/ws closed: 1006/);
    expect(r.toolCalls).toBe(3);
    expect(r.toolFailures).toBe(2);
    expect(r.error).toBeUndefined();
    expect(r.env).toBeInstanceOf(ClassEnv);
  });
});
