// The trainer against current OpenEnv's MCP echo: the double built from the captured frames (no code of
// ours on the server side), directly and through the env-server's `--upstream` proxy. The scripted
// warm-up records real echoes, rollouts call echo_message with no failures, the generic MCP task turns
// the env's tools/list into the model's tools, and env errors are named instead of trained on.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoEnv } from '../../env-server/envs/echo.ts';
import { legacyEchoEnv } from '../../env-server/envs/legacy-echo.ts';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { envProtocol } from '../../src/openenv/index.ts';
import type { ClassEnv } from '../../src/rl/tasks/env-class.ts';
import { envTools } from '../../src/rl/rollout/env.ts';
import { openEnvEpisodes } from '../../src/rl/tasks/envs/episode-session.ts';
import { cleanToolSchema } from '../../src/rl/tasks/envs/mcp.ts';
import { mcpTask, parsePromptDataset, parsePromptText } from '../../src/rl/tasks/mcp-task.ts';
import { stepWarnings, ToolFailureTally, toolMetrics } from '../../src/rl/grpo/metrics.ts';
import { ECHO_PROMPTS } from './trl-prompts.ts';
import { builtinClassTask } from '../../src/rl/tasks/env-class-builtin.ts';
import { runRollouts, type Rollout } from '../../src/rl/rollout/rollout.ts';
import { echoTarget, echoTranscripts } from '../../src/rl/tasks/solvers.ts';
import { startMcpEchoDouble, type McpEchoDouble } from '../openenv/mcp-echo-double.ts';
import { callText, FakeEngine } from './fake-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

let double: McpEchoDouble;
let failing: McpEchoDouble;
let proxy: EnvServer;
const open = openEnvEpisodes({ timeoutMs: 10_000 });
const CONFIG = { max_completion_length: 256, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' as const };

beforeAll(async () => {
  double = await startMcpEchoDouble();
  failing = await startMcpEchoDouble({ failCalls: true });
  proxy = await createEnvServer({ port: 0, envs: {}, upstreams: { space: [double.url] } });
});

afterAll(async () => {
  await proxy.close();
  await double.close();
  await failing.close();
});

const targets = () => [
  { name: 'directly', url: () => double.url },
  { name: 'through --upstream', url: () => `${proxy.url}/envs/space` },
];

/** Calls `tool` with the prompt's quoted text once, then answers. */
function echoPolicy(tool: string) {
  return (context: string) => {
    if (context.includes('<tool_response>')) return 'Done.<|im_end|>';
    const prompt = context.slice(context.lastIndexOf('<|im_start|>user\n'));
    return callText(tool, { message: echoTarget(prompt) }) + '<|im_end|>';
  };
}

function toolContents(r: Rollout): unknown[] {
  return r.completion.filter((m) => m.role === 'tool').map((m) => m.content);
}

describe.each(targets())('TRL echo task on the MCP echo, $name', ({ url }) => {
  it('the scripted warm-up transcripts hold real echoes', async () => {
    const transcripts = await echoTranscripts({ baseUrl: url(), episodes: ECHO_PROMPTS.length, seed: 1 });
    expect(transcripts.map((t) => t.messages.filter((m) => m.role === 'tool').map((m) => m.content))).toEqual(ECHO_PROMPTS.map((p) => [echoTarget(p)]));
    expect(transcripts[0]!.tools!.map((t) => t.function.name)).toEqual(['echo']);
  });

  it('rollouts call echo_message with no failures; the reward is 0.1 per echoed code point', async () => {
    const before = double.received.length;
    const tok = qwen3Tokenizer();
    const echo = (await builtinClassTask('echo'))!;
    const rows = echo.dataset();
    const rollouts = await runRollouts({ engine: new FakeEngine(tok, echoPolicy('echo')), tokenizer: tok, rows, envFactory: echo.envFactory({ echo: url() }, open), config: CONFIG, seed: 3 });
    expect(toolMetrics(rollouts.map((r) => ({ modelTokens: 0, totalTokens: 0, truncated: r.truncated, toolCalls: r.toolCalls, toolFailures: r.toolFailures })))).toMatchObject({
      'tools/call_frequency': 1,
      'tools/failure_frequency': 0,
    });
    expect(rollouts.map(toolContents)).toEqual(ECHO_PROMPTS.map((p) => [echoTarget(p)]));
    const rewards = await echo.rewardFuncs[0]!({ prompts: [], completions: [], completion_ids: [], environments: rollouts.map((r) => r.env), trainer_state: { global_step: 0 } });
    expect(rewards).toEqual(ECHO_PROMPTS.map((p) => [...echoTarget(p)].length * 0.1));
    // What reached the server: call_tool echo_message step frames, never the older {message} action.
    const steps = double.received.slice(before).map((f) => JSON.parse(f)).filter((f) => f.type === 'step');
    expect(steps).toHaveLength(ECHO_PROMPTS.length);
    for (const s of steps) expect(s.data).toMatchObject({ type: 'call_tool', tool_name: 'echo_message' });
  });

  it('the generic MCP task: the env tools become the model tools, env errors are tool results', async () => {
    const task = await mcpTask(url(), parsePromptDataset('{"prompt": "Echo \'hi there\' please."}\n', 'prompts.jsonl'), open);
    const tok = qwen3Tokenizer();
    const factory = task.envFactory({}, open);
    const env = factory();
    expect(env.tools.map((t) => t.schema)).toEqual([
      { type: 'function', function: { name: 'echo_message', description: 'Echo back the provided message.', parameters: { type: 'object', additionalProperties: false, properties: { message: { type: 'string', description: 'The message to echo back' } }, required: ['message'] } } },
      { type: 'function', function: { name: 'echo_with_length', description: 'Echo back the message with its length.', parameters: { type: 'object', additionalProperties: false, properties: { message: { type: 'string', description: 'The message to echo back' } }, required: ['message'] } } },
    ]);
    const rows = task.dataset(2);
    const ok = await runRollouts({ engine: new FakeEngine(tok, echoPolicy('echo_message')), tokenizer: tok, rows, envFactory: factory, config: CONFIG, seed: 4 });
    expect(ok.map(toolContents)).toEqual([['hi there'], ['hi there']]);
    expect(ok.map((r) => [r.toolCalls, r.toolFailures])).toEqual([[1, 0], [1, 0]]);
    // The MCP echo rewards no tool step: an episode that earned no env reward scores 0, as TRL's
    // examples' `self.reward = 0.0` (not null, which would make every rollout unscorable and train nothing).
    const rewards = task.rewardFuncs[0]!({ prompts: [], completions: [], completion_ids: [], environments: ok.map((r) => r.env), trainer_state: { global_step: 0 } });
    expect(rewards).toEqual([0, 0]);
    // A tool the env does not list fails here, as in TRL, without a round trip.
    const bad = await runRollouts({ engine: new FakeEngine(tok, echoPolicy('nope')), tokenizer: tok, rows: rows.slice(0, 1), envFactory: factory, config: CONFIG, seed: 5 });
    expect(toolContents(bad[0]!)).toEqual([`{'error': 'Tool nope not found.'}`]);
    expect([bad[0]!.toolCalls, bad[0]!.toolFailures, bad[0]!.error]).toEqual([1, 1, undefined]);
  });
});

describe('an env with its own action class and MCP tools over JSON-RPC (mcp-rpc, §6 step 2)', () => {
  it('is detected by the tools/list probe; the echo task and the generic task call its tools over JSON-RPC', async () => {
    // Our echo's tools behind the legacy EchoAction schema: /schema says "action", /ws tools/list says tools.
    const server = await createEnvServer({ port: 0, envs: { custom: { ...echoEnv, schema: legacyEchoEnv.schema } } });
    try {
      const url = `${server.url}/envs/custom`;
      expect(await envProtocol(url)).toBe('mcp-rpc');
      const env = (await builtinClassTask('echo'))!.envFactory({ echo: url })() as ClassEnv;
      await env.reset({ prompt: [] });
      expect(await envTools(env)[0]!.call({ message: 'héllo' })).toBe('héllo');
      expect((env.instance as { reward: number }).reward).toBe(0.5);
      await env.close();
      const task = await mcpTask(url, [{ prompt: [{ role: 'user', content: "Echo 'abc'." }] }], open);
      const tok = qwen3Tokenizer();
      const [r] = await runRollouts({ engine: new FakeEngine(tok, echoPolicy('echo_with_length')), tokenizer: tok, rows: task.dataset(1), envFactory: task.envFactory({}, open), config: CONFIG, seed: 7 });
      expect(toolContents(r!)).toEqual(['{"message":"abc","length":3}']);
      expect(r!.toolFailures).toBe(0);
    } finally {
      await server.close();
    }
  });
});

describe('env errors are named, not trained on', () => {
  it('a scripted warm-up on an env whose tool calls fail stops with the env, the call and the error', async () => {
    await expect(echoTranscripts({ baseUrl: failing.url, episodes: 1, seed: 1 })).rejects.toThrow(
      `scripted warm-up: the env at ${failing.url} answered the solver's echo({"message":"Hello World!"}) with an error, so its transcripts cannot be trained on: Tool 'echo_message' failed: Unknown tool: 'echo_message' (type: tool_not_found)`,
    );
  });

  it("an env's tool error is the tool result the model reads (TRL), counted as a failure; the episode goes on", async () => {
    const task = await mcpTask(failing.url, [{ prompt: [{ role: 'user', content: "Echo 'x'." }] }], open);
    const tok = qwen3Tokenizer();
    const [r] = await runRollouts({ engine: new FakeEngine(tok, echoPolicy('echo_message')), tokenizer: tok, rows: task.dataset(1), envFactory: task.envFactory({}, open), config: CONFIG, seed: 6 });
    expect(toolContents(r!)).toEqual([`{'error': "Tool 'echo_message' failed: Unknown tool: 'echo_message' (type: tool_not_found)"}`]);
    expect([r!.toolCalls, r!.toolFailures, r!.error]).toEqual([1, 1, undefined]);
    expect(r!.completion[r!.completion.length - 1]).toEqual({ role: 'assistant', content: 'Done.' });
  });

  it('a step where every tool call failed carries a warning; one with a success does not', () => {
    expect(stepWarnings({ 'tools/call_frequency': 1, 'tools/failure_frequency': 1 })).toHaveLength(1);
    expect(stepWarnings({ 'tools/call_frequency': 1, 'tools/failure_frequency': 0.5 })).toEqual([]);
  });

  // The silent non-learning of a browsergym run: 0 tool calls, reward 0, loss 0, exit 0 and no word.
  it('a step where no rollout called a tool carries a warning (and only that one); a step with one call in four does not', () => {
    const [warning, ...rest] = stepWarnings({ 'tools/call_frequency': 0, 'tools/failure_frequency': 0, 'tools/over_budget_frequency': 0 });
    expect(rest).toEqual([]);
    expect(warning).toContain('no rollout of this step called a tool (tools/call_frequency 0)');
    expect(warning).toContain('SFT warm-up');
    expect(stepWarnings({ 'tools/call_frequency': 0.25, 'tools/failure_frequency': 0, 'tools/over_budget_frequency': 0 })).toEqual([]);
  });

  it('a step where no rollout earned any reward warns; one reward anywhere, or nothing scored, does not', () => {
    const [warning, ...rest] = stepWarnings({ 'tools/call_frequency': 1, 'tools/failure_frequency': 0, 'rewards/reward_from_env/mean': 0, 'rewards/reward_from_env/std': 0 });
    expect(rest).toEqual([]);
    expect(warning).toContain('no rollout of this step earned any reward');
    // Several functions: one that scored nothing (NaN, null in JSON) does not hide the others' zeros.
    expect(stepWarnings({ 'rewards/a/mean': 0, 'rewards/a/std': 0, 'rewards/b/mean': null, 'rewards/b/std': null })).toHaveLength(1);
    expect(stepWarnings({ 'rewards/a/mean': 0, 'rewards/a/std': 0, 'rewards/b/mean': 0.25, 'rewards/b/std': 0.5 })).toEqual([]);
    // Mean 0 from +1 and −1 is a reward earned.
    expect(stepWarnings({ 'rewards/a/mean': 0, 'rewards/a/std': 1 })).toEqual([]);
    expect(stepWarnings({ 'rewards/a/mean': Number.NaN, 'rewards/a/std': Number.NaN })).toEqual([]);
  });

  it('a step where no tool result fitted the budget carries a warning naming max_completion_length; some fitting, none', () => {
    const [warning, ...rest] = stepWarnings({ 'tools/call_frequency': 1, 'tools/failure_frequency': 0, 'tools/over_budget_frequency': 1 });
    expect(rest).toEqual([]);
    expect(warning).toContain('no tool result of this step reached the model (tools/over_budget_frequency 1)');
    expect(warning).toContain('Raise max_completion_length');
    expect(stepWarnings({ 'tools/call_frequency': 1, 'tools/failure_frequency': 0, 'tools/over_budget_frequency': 0.5 })).toEqual([]);
  });

  it('a run whose every tool call failed is told apart (the CLI then exits 1); one success or no calls at all is not', () => {
    const run = (steps: [number, number][]) => {
      const tally = new ToolFailureTally();
      for (const [calls, failures] of steps) tally.add({ 'tools/call_frequency': calls, 'tools/failure_frequency': failures });
      return tally.everyCallFailed;
    };
    expect(run([[1, 1], [0, 0], [2, 1]])).toBe(true);
    expect(run([[1, 1], [1, 0.5]])).toBe(false);
    expect(run([[0, 0], [0, 0]])).toBe(false);
    expect(run([])).toBe(false);
  });

  it('a run where no tool result ever fitted the budget is told apart too (the CLI exits 1); one that fitted once is not', () => {
    const run = (steps: [number, number][]) => {
      const tally = new ToolFailureTally();
      for (const [calls, overBudget] of steps) tally.add({ 'tools/call_frequency': calls, 'tools/failure_frequency': 0, 'tools/over_budget_frequency': overBudget });
      return tally.everyResultOverBudget;
    };
    expect(run([[1, 1], [0, 0], [2, 1]])).toBe(true);
    expect(run([[1, 1], [1, 0.5]])).toBe(false);
    expect(run([[0, 0]])).toBe(false);
  });

  it('the generic task needs a prompt and an MCP env, and prompt files are checked line by line', async () => {
    await expect(mcpTask(double.url, [], open)).rejects.toThrow(/--prompt TEXT or --dataset FILE.jsonl/);
    expect(() => parsePromptDataset('{"prompt": "a"}\n{"text": "b"}\n', 'p.jsonl')).toThrow('p.jsonl:2: needs a "prompt" field');
    expect(() => parsePromptDataset('\n', 'p.jsonl')).toThrow('p.jsonl: no prompts');
    // The app's prompt box: a prompt per line, or JSONL rows when it starts with '{'.
    expect(parsePromptText(' Echo hi\n\n  Say "x"  \n', 'box')).toEqual([{ prompt: [{ role: 'user', content: 'Echo hi' }] }, { prompt: [{ role: 'user', content: 'Say "x"' }] }]);
    expect(parsePromptText('{"prompt": "a", "id": 3}\n', 'box')).toEqual([{ prompt: [{ role: 'user', content: 'a' }], id: 3 }]);
    expect(() => parsePromptText('{"prompt": 1}', 'box')).toThrow('box:1: needs a "prompt" field');
    expect(() => parsePromptText(' \n ', 'box')).toThrow('box: no prompts (write one per line)');
    expect(cleanToolSchema({ anyOf: [{ type: 'string' }, { type: 'object', properties: { a: {} } }] })).toEqual({ type: 'object', properties: { a: {} } });
    expect(cleanToolSchema({ allOf: [{ properties: { a: {} }, required: ['a'] }, { properties: { b: {} } }] })).toEqual({ type: 'object', properties: { a: {}, b: {} }, required: ['a'] });
    expect(cleanToolSchema('x')).toEqual({ type: 'object', properties: {}, required: [] });
  });
});
