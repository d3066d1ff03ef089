// A false failure on OpenEnv's real connect4 (replayed from its captured frames): the demo model, trained
// on echo, calls `echo`; every call comes back "Tool echo not found." without reaching the env, and the
// end-of-run check blamed the env ("never gave the model a result", exit 1). Calls that never reached the
// env are counted apart (tools/invalid_frequency) and the run says what the model called beside what the
// env offers, with exit 0: the env answered, its reward is a number.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveTask } from '../../src/rl/tasks/resolve-task.ts';
import { openEnvEpisodes } from '../../src/rl/tasks/envs/episode-session.ts';
import { runRollouts } from '../../src/rl/rollout/rollout.ts';
import { describeInvalidTools, invalidToolsOf, stepWarnings, ToolFailureTally, toolMetrics } from '../../src/rl/grpo/metrics.ts';
import { runVerdict } from '../../src/cli/run-verdict.ts';
import { startReplayServer, type ReplayServer } from '../openenv/replay-server.ts';
import { callText, FakeEngine } from './fake-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

let connect4: ReplayServer;
const CONFIG = { max_completion_length: 1024, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' as const };

beforeAll(async () => {
  connect4 = await startReplayServer('connect4');
});
afterAll(async () => {
  await connect4.close();
});

/** Each turn makes `call` once, then answers. */
const once = (call: string) => (context: string) => (context.includes('<tool_response>') ? 'Done.<|im_end|>' : `${call}<|im_end|>`);

async function rolloutsOf(call: string) {
  const { task } = await resolveTask({ env: connect4.url });
  const tok = qwen3Tokenizer();
  const rollouts = await runRollouts({ engine: new FakeEngine(tok, once(call)), tokenizer: tok, rows: task.dataset(2), envFactory: task.envFactory({}, openEnvEpisodes({ timeoutMs: 10_000 })), config: CONFIG, seed: 3 });
  const rewards = await task.rewardFuncs[0]!({ prompts: [], completions: [], completion_ids: [], environments: rollouts.map((r) => r.env), trainer_state: { global_step: 0 } });
  const stats = rollouts.map((r) => ({ modelTokens: 0, totalTokens: 0, truncated: r.truncated, toolCalls: r.toolCalls, toolFailures: r.toolFailures, invalidCalls: r.invalidToolCalls }));
  return { rollouts, rewards, metrics: toolMetrics(stats), invalidTools: invalidToolsOf(rollouts) };
}

describe('calls that never reach the env', () => {
  it("the demo model's echo on connect4: counted invalid, the run says what it called and what the env offers, exit 0", async () => {
    const { rollouts, rewards, metrics, invalidTools } = await rolloutsOf(callText('echo', { message: 'hi' }));
    expect(rollouts.map((r) => [r.toolCalls, r.toolFailures, r.invalidToolCalls, r.error])).toEqual([[1, 1, 1, undefined], [1, 1, 1, undefined]]);
    expect(rewards.every((r) => typeof r === 'number')).toBe(true);
    expect(metrics['tools/invalid_frequency']).toBe(1);
    expect(invalidTools).toEqual({ called: ['echo'], offered: ['connect4'] });
    const [warning, ...rest] = stepWarnings({ ...metrics, 'rewards/reward/mean': 0, 'rewards/reward/std': 1 }, invalidTools);
    expect(rest).toEqual([]);
    expect(warning).toContain('no tool call of this step reached the env (tools/invalid_frequency 1): the model called echo; the env offers connect4');
    const tally = new ToolFailureTally();
    tally.add(metrics, invalidTools);
    expect(runVerdict(tally, connect4.url, 1024)).toEqual({
      line: `webgrpo train: the model never made a valid tool call (tools/invalid_frequency 1 on all 1 steps with calls): the model called echo; the env offers connect4. No call reached the env at ${connect4.url}; warm the model up on transcripts that call its tools (--sft FILE.jsonl).`,
      exitCode: 0,
    });
  });

  it("an illegal move reaches the env, which answers it: not an invalid call, and no verdict", async () => {
    const refused = await rolloutsOf(callText('connect4', { column: 9 }));
    expect([refused.metrics['tools/failure_frequency'], refused.metrics['tools/invalid_frequency'], refused.invalidTools]).toEqual([0, 0, undefined]);
    const tally = new ToolFailureTally();
    tally.add(refused.metrics);
    expect(runVerdict(tally, connect4.url, 1024)).toBeNull();
  });

  it('one valid call in the run is enough: no verdict', () => {
    const tally = new ToolFailureTally();
    tally.add({ 'tools/call_frequency': 1, 'tools/failure_frequency': 1, 'tools/invalid_frequency': 1 }, { called: ['echo'], offered: ['connect4'] });
    tally.add({ 'tools/call_frequency': 1, 'tools/failure_frequency': 0.5, 'tools/invalid_frequency': 0.5 });
    expect(runVerdict(tally, 'x', 1)).toBeNull();
  });

  it('every call with arguments its tool cannot take is said as such', () => {
    expect(describeInvalidTools({ called: [], offered: ['move'] })).toBe('every call had arguments its tool cannot take (the env offers move)');
  });
});
