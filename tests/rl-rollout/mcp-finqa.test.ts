// The generic MCP task on an env shaped like OpenEnv's finqa (tests/openenv/mcp-finqa-double.ts): its
// tools are listed although `list_tools` steps are refused, `submit_answer`'s `{}` reply with reward 1 is
// a result (no failure) whose reward counts, the dataset row's columns reach the env's reset, and an
// episode the env never rewards scores 0.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEnvEpisodes } from '../../src/rl/tasks/envs/episode-session.ts';
import { McpToolEnv } from '../../src/rl/tasks/envs/mcp.ts';
import { mcpTask, parsePromptDataset } from '../../src/rl/tasks/mcp-task.ts';
import { runRollouts, type Rollout } from '../../src/rl/rollout/rollout.ts';
import { startFinqaDouble, type FinqaDouble } from '../openenv/mcp-finqa-double.ts';
import { callText, FakeEngine } from './fake-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

let finqa: FinqaDouble;
const open = openEnvEpisodes({ timeoutMs: 10_000 });
const CONFIG = { max_completion_length: 256, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' as const };
const ROWS = '{"prompt": "What was the revenue?", "question_id": "q-17", "seed": 7}\n';

beforeAll(async () => { finqa = await startFinqaDouble(); });
afterAll(async () => { await finqa.close(); });

/** Calls `tool` with `args` once, then answers. */
const policy = (tool: string, args: Record<string, unknown>) => (context: string) =>
  context.includes('<tool_response>') ? 'Done.<|im_end|>' : callText(tool, args) + '<|im_end|>';

const rewardOf = (task: Awaited<ReturnType<typeof mcpTask>>, rollouts: Rollout[]) =>
  task.rewardFuncs[0]!({ prompts: [], completions: [], completion_ids: [], environments: rollouts.map((r) => r.env), trainer_state: { global_step: 0 } });

describe('the generic MCP task on finqa', () => {
  it("trains: submit_answer's {} with reward 1 is the tool's result and its reward counts; the row's columns reach reset", async () => {
    const task = await mcpTask(finqa.url, parsePromptDataset(ROWS, 'rows.jsonl'), open);
    const factory = task.envFactory({}, open);
    expect(factory().tools.map((t) => t.schema!.function.name)).toEqual(['get_descriptions', 'submit_answer']);
    const tok = qwen3Tokenizer();
    const before = finqa.resets.length;
    const rollouts = await runRollouts({ engine: new FakeEngine(tok, policy('submit_answer', { answer: '42' })), tokenizer: tok, rows: task.dataset(1), envFactory: factory, config: CONFIG, seed: 1 });
    const [r] = rollouts;
    expect(r!.completion.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['{}']);
    expect([r!.toolCalls, r!.toolFailures, r!.error]).toEqual([1, 0, undefined]);
    expect(await rewardOf(task, rollouts)).toEqual([1]);
    // OpenEnv's reset takes seed, episode_id and the env's own kwargs: every column but the prompt.
    expect(finqa.resets.slice(before)).toEqual([{ question_id: 'q-17', seed: 7 }]);
  });

  it('an episode the env never rewards scores 0, not null', async () => {
    const task = await mcpTask(finqa.url, parsePromptDataset(ROWS, 'rows.jsonl'), open);
    const tok = qwen3Tokenizer();
    const rollouts = await runRollouts({ engine: new FakeEngine(tok, policy('get_descriptions', { company_name: 'ACME' })), tokenizer: tok, rows: task.dataset(1), envFactory: task.envFactory({}, open), config: CONFIG, seed: 2 });
    expect(rollouts[0]!.completion.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['us_gaap_Revenues']);
    expect(await rewardOf(task, rollouts)).toEqual([0]);
    expect((rollouts[0]!.env as McpToolEnv).reward).toBe(0);
  });
});
