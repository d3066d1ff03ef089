// OpenEnv's own finqa server (an MCP env whose action class subclasses CallToolAction), replayed from
// the bytes it sent (tests/fixtures/openenv/finqa/, scripts/openenv-capture/), or the live server when
// OPENENV_FINQA_URL names one: its tools are listed though `list_tools` steps are refused,
// `submit_answer`'s reply `{}` with reward 1.0 is the tool's result (no failure) and its reward counts.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEnvEpisodes } from '../../src/rl/tasks/envs/episode-session.ts';
import { mcpTask } from '../../src/rl/tasks/mcp-task.ts';
import { resolveTask } from '../../src/rl/tasks/resolve-task.ts';
import { runRollouts } from '../../src/rl/rollout/rollout.ts';
import { startReplayServer, type ReplayServer } from '../openenv/replay-server.ts';
import { callText, FakeEngine } from './fake-engine.ts';
import { SamplingFakeEngine } from './sampling-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

let replay: ReplayServer | null = null;
let url: string;
const CONFIG = { max_completion_length: 1024, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' as const };
const PROMPT = [{ prompt: [{ role: 'user' as const, content: "What was ACME's total revenue in 2023, in millions?" }] }];

beforeAll(async () => {
  if (process.env.OPENENV_FINQA_URL) url = process.env.OPENENV_FINQA_URL;
  else url = (replay = await startReplayServer('finqa')).url;
});
afterAll(async () => {
  await replay?.close();
});

async function answer(value: string) {
  const open = openEnvEpisodes({ timeoutMs: 10_000 });
  const task = await mcpTask(url, PROMPT, open);
  const tok = qwen3Tokenizer();
  const policy = (context: string) => (context.includes('<tool_response>') ? 'Done.<|im_end|>' : callText('submit_answer', { answer: value }) + '<|im_end|>');
  const rollouts = await runRollouts({ engine: new FakeEngine(tok, policy), tokenizer: tok, rows: task.dataset(1), envFactory: task.envFactory({}, open), config: CONFIG, seed: 1 });
  const [reward] = await task.rewardFuncs[0]!({ prompts: [], completions: [], completion_ids: [], environments: rollouts.map((r) => r.env), trainer_state: { global_step: 0 } });
  return { task, rollout: rollouts[0]!, reward };
}

describe("OpenEnv's finqa", () => {
  it('resolves to the generic MCP task with its four tools', async () => {
    const r = await resolveTask({ env: url, prompts: async () => PROMPT });
    expect(r.name).toBe('mcp');
    const env = r.task.envFactory({}, openEnvEpisodes())();
    expect(env.tools.map((t) => t.schema!.function.name)).toEqual(['get_descriptions', 'get_table_info', 'sql_query', 'submit_answer']);
  });

  it("submit_answer's {} is the result, not a failure, and its reward 1.0 counts", async () => {
    const { rollout, reward } = await answer('1200');
    expect(rollout.completion.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['{}']);
    expect([rollout.toolCalls, rollout.toolFailures, rollout.error]).toEqual([1, 0, undefined]);
    expect(reward).toBe(1);
  });

  it('a wrong answer scores 0', async () => {
    expect((await answer('7')).reward).toBe(0);
  });

  // `train --env URL --dataset …` on the real finqa (one session: create_app's default) lost 5 of 8
  // rollouts to "reset failed: Server at capacity: 1/1 sessions active"; they wait for the session now.
  // With lockstep a wave of eight waited for resets queued behind its own first episode: forever, as the
  // MCP path sets no env_call_timeout_s; the waiting ones play in the next waves now.
  for (const scheduler of ['continuous', 'lockstep'] as const) {
    it(`${scheduler}: eight rollouts on a one-session server all play and score, one session at a time`, async () => {
      const server = await startReplayServer('finqa', { maxSessions: 1 });
      try {
        const task = await mcpTask(server.url, PROMPT);
        const tok = qwen3Tokenizer();
        const policy = (context: string) => [context.includes('<tool_response>') ? 'Done.<|im_end|>' : callText('submit_answer', { answer: '1200' }) + '<|im_end|>'];
        const engine = new SamplingFakeEngine(tok, policy, { maxBatch: 8 });
        // No retries of a refusal: the first one names the limit, and the episodes queue under it.
        const rollouts = await runRollouts({ engine, tokenizer: tok, rows: task.dataset(8), envFactory: task.envFactory({}, openEnvEpisodes({ retries: 0 })), config: { ...CONFIG, rollout_scheduler: scheduler }, seed: 1, maxBatchSize: 8 });
        const rewards = await task.rewardFuncs[0]!({ prompts: [], completions: [], completion_ids: [], environments: rollouts.map((r) => r.env), trainer_state: { global_step: 0 } });
        expect(rollouts.map((r) => [r.error, r.toolCalls, r.toolFailures])).toEqual(Array(8).fill([undefined, 1, 0]));
        expect(rewards).toEqual(Array(8).fill(1));
        expect(server.peakSessions).toBe(1);
        expect(server.refused).toBeGreaterThan(0);
      } finally {
        await server.close();
      }
    });
  }
});
