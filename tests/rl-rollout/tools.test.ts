import { describe, expect, it } from 'vitest';
import { EnvFailure, envTools, type Tool, type ToolEnv } from '../../src/rl/rollout/env.ts';
import { argumentError, executeToolCalls } from '../../src/rl/rollout/tools.ts';
import type { ToolCall } from '../../src/model/chat-template.ts';

function call(name: string, args: unknown = {}): ToolCall {
  return { type: 'function', function: { name, arguments: args } };
}

const order: string[] = [];
const tools: Tool[] = [
  {
    declaration: { name: 'add', description: 'Add.', parameters: [{ name: 'a', type: 'integer', description: 'a' }, { name: 'b', type: 'integer', description: 'b', optional: true }] },
    call: (args) => {
      order.push('add');
      return (args.a as number) + ((args.b as number | undefined) ?? 0);
    },
  },
  {
    declaration: { name: 'boom', description: 'Fail.', parameters: [] },
    call: () => {
      throw new Error("Invalid direction 'up': must be 'left' or 'right'.");
    },
  },
  {
    declaration: { name: 'later', description: 'Async.', parameters: [{ name: 'x', type: 'string', description: 'x' }] },
    kind: 'async',
    call: async (args) => {
      order.push(`later:${String(args.x)}`);
      if (args.x === 'bad') throw new Error('async failed');
      return { echoed: args.x };
    },
  },
  { declaration: { name: 'gone', description: 'Env died.', parameters: [] }, call: () => Promise.reject(new EnvFailure('Connection closed: 1006 ""')) },
  { declaration: { name: 'flag', description: 'Bool.', parameters: [] }, call: () => true },
];

describe('executeToolCalls (grpo-semantics.md §6)', () => {
  it('str() results, error dicts in Python repr, counts of calls and failures', async () => {
    const result = await executeToolCalls(tools, [call('add', { a: 1, b: 2 }), call('boom'), call('nope'), call('flag')]);
    expect(result.calls).toBe(4);
    expect(result.failures).toBe(2);
    expect(result.errors).toEqual(["Invalid direction 'up': must be 'left' or 'right'.", 'Tool nope not found.']);
    expect(result.messages).toEqual([
      { role: 'tool', name: 'add', content: '3' },
      { role: 'tool', name: 'boom', content: `{'error': "Invalid direction 'up': must be 'left' or 'right'."}` },
      { role: 'tool', name: 'nope', content: "{'error': 'Tool nope not found.'}" },
      { role: 'tool', name: 'flag', content: 'True' },
    ]);
  });

  it('TypeError-like texts for bad arguments', async () => {
    const result = await executeToolCalls(tools, [
      call('add', { a: 1, c: 2 }),
      call('add', {}),
      call('add', '{"a": 1}'),
      call('add', [1]),
      call('add', 3),
    ]);
    expect(result.failures).toBe(5);
    expect(result.messages.map((m) => m.content)).toEqual([
      "{'error': \"add() got an unexpected keyword argument 'c'\"}",
      "{'error': \"add() missing 1 required positional argument: 'a'\"}",
      "{'error': 'add() argument after ** must be a mapping, not str'}",
      "{'error': 'add() argument after ** must be a mapping, not list'}",
      "{'error': 'add() argument after ** must be a mapping, not int'}",
    ]);
    const three: Tool = { declaration: { name: 'f', description: 'f', parameters: ['a', 'b', 'c'].map((n) => ({ name: n, type: 'string' as const, description: n })) }, call: () => 0 };
    expect(argumentError(three, {})).toBe("f() missing 3 required positional arguments: 'a', 'b', and 'c'");
    expect(argumentError(three, { c: 1 })).toBe("f() missing 2 required positional arguments: 'a' and 'b'");
  });

  it('async tools run after the sync ones and their results come last', async () => {
    order.length = 0;
    const result = await executeToolCalls(tools, [call('later', { x: 'one' }), call('add', { a: 5 }), call('later', { x: 'bad' }), call('later', {})]);
    expect(order).toEqual(['add', 'later:one', 'later:bad']);
    expect(result.messages).toEqual([
      { role: 'tool', name: 'add', content: '5' },
      // A bad-arguments error is raised at call time, so it sits among the sync results, in call order.
      { role: 'tool', name: 'later', content: "{'error': \"later() missing 1 required positional argument: 'x'\"}" },
      { role: 'tool', name: 'later', content: "{'echoed': 'one'}" },
      { role: 'tool', name: 'later', content: "{'error': 'async failed'}" },
    ]);
    expect(result.failures).toBe(2);
  });

  it("an env failure (the env gone) is the tool's result text, as TRL does, and the turn goes on", async () => {
    const result = await executeToolCalls(tools, [call('add', { a: 1 }), call('gone'), call('add', { a: 2 })]);
    expect(result.messages).toEqual([
      { role: 'tool', name: 'add', content: '1' },
      { role: 'tool', name: 'gone', content: `{'error': 'Connection closed: 1006 ""'}` },
      { role: 'tool', name: 'add', content: '2' },
    ]);
    expect([result.calls, result.failures]).toEqual([3, 1]);
  });
});

describe('envTools', () => {
  it('sorts tools by name and rejects duplicates and reserved names', () => {
    const env = (names: string[]): ToolEnv => ({
      reset: () => null,
      tools: names.map((name) => ({ declaration: { name, description: 'd', parameters: [] }, call: () => null })),
    });
    expect(envTools(env(['stay', 'move', 'guess'])).map((t) => t.declaration.name)).toEqual(['guess', 'move', 'stay']);
    expect(() => envTools(env(['a', 'a']))).toThrow(/two tools are named 'a'/);
    expect(() => envTools(env(['reset']))).toThrow(/reserved/);
  });
});
