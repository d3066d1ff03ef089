// An MCP env served over HTTP only (OpenEnv's calendar env: `POST /reset`, `/step`, `/mcp`; no `/ws`, no
// `/metadata`), tests/openenv/mcp-http-double.ts: `--env URL` resolves to the generic MCP task, its tools
// are listed, calls are `POST /step` actions whose reward counts, and the row's columns reach the reset.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envProtocol } from '../../src/openenv/index.ts';
import { resolveTask } from '../../src/rl/tasks/resolve-task.ts';
import { runRollouts } from '../../src/rl/rollout/rollout.ts';
import { parsePromptDataset } from '../../src/rl/tasks/mcp-task.ts';
import { startHttpMcpDouble, type HttpMcpDouble } from '../openenv/mcp-http-double.ts';
import { callText, FakeEngine } from './fake-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

let calendar: HttpMcpDouble;
beforeAll(async () => { calendar = await startHttpMcpDouble(); });
afterAll(async () => { await calendar.close(); });

const CONFIG = { max_completion_length: 256, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' as const };

describe('an HTTP-only MCP env', () => {
  it('trains through the generic MCP task: tools listed, calls stepped over POST /step, reward counted', async () => {
    expect(await envProtocol(calendar.url)).toBe('mcp');
    const rows = parsePromptDataset('{"prompt": "Book lunch.", "user_id": "u1"}\n', 'rows.jsonl');
    const resolved = await resolveTask({ env: calendar.url, prompts: async () => rows });
    expect(resolved.name).toBe('mcp');
    const factory = resolved.task.envFactory({}, undefined);
    expect(factory().tools.map((t) => t.schema!.function.name)).toEqual(['create_event']);
    const tok = qwen3Tokenizer();
    const policy = (context: string) => (context.includes('<tool_response>') ? 'Done.<|im_end|>' : callText('create_event', { title: 'lunch' }) + '<|im_end|>');
    const before = calendar.resets.length;
    const rollouts = await runRollouts({ engine: new FakeEngine(tok, policy), tokenizer: tok, rows: resolved.task.dataset(1), envFactory: factory, config: CONFIG, seed: 1 });
    expect(rollouts[0]!.completion.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['created 1']);
    expect([rollouts[0]!.toolCalls, rollouts[0]!.toolFailures, rollouts[0]!.error]).toEqual([1, 0, undefined]);
    const rewards = await resolved.task.rewardFuncs[0]!({ prompts: [], completions: [], completion_ids: [], environments: rollouts.map((r) => r.env), trainer_state: { global_step: 0 } });
    expect(rewards).toEqual([1]);
    expect(calendar.resets.slice(before)).toEqual([{ user_id: 'u1' }]);
  });
});
