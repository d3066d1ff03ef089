// `webgrpo train --env URL` on current OpenEnv's MCP echo (the double built from the captured frames),
// directly and through the env-server's --upstream proxy, with a tiny model on the real engine: the
// scripted warm-up's transcripts hold real echoes and GRPO reports tools/failure_frequency 0. And an
// MCP env that none of the tasks knows trains as the generic MCP task with --prompt.

import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { run } from '../../src/cli/train.ts';
import { runTrainCli } from './train-cli-run.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { ECHO_PROMPTS } from '../rl-rollout/trl-prompts.ts';
import { echoTarget } from '../../src/rl/tasks/solvers.ts';
import { startMcpEchoDouble, type McpEchoDouble } from '../openenv/mcp-echo-double.ts';

let dir = '';
let model = '';
let double: McpEchoDouble;
let toy: McpEchoDouble;
let proxy: EnvServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-train-mcp-'));
  model = join(dir, 'model');
  await mkdir(model);
  for (const [name, bytes] of await makeTinyCheckpointFiles({ seed: 3, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 })) {
    await writeFile(join(model, name), bytes);
  }
  double = await startMcpEchoDouble();
  toy = await startMcpEchoDouble({ metadataName: 'ToyToolsEnvironment' });
  proxy = await createEnvServer({ port: 0, envs: {}, upstreams: { space: [double.url] } });
});

afterAll(async () => {
  await proxy?.close();
  await double?.close();
  await toy?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const runCli = runTrainCli;

const TINY_RUN = [
  '--num_generations', '2', '--per_device_train_batch_size', '2', '--max_completion_length', '16',
  '--learning_rate', '1e-3', '--train_mode', 'lora', '--lora_r', '4', '--lora_alpha', '8', '--max_steps', '1',
];

describe('webgrpo train on an MCP env', () => {
  it.each([
    ['directly', () => double.url],
    ['through --upstream', () => `${proxy.url}/envs/space`],
  ])('echo task %s: warm-up transcripts hold real echoes, GRPO failure_frequency 0', async (label, url) => {
    const output = join(dir, `out-${label.replace(/\W+/g, '-')}`);
    const result = await runCli([
      '--model', model, '--env', url(), '--output', output, ...TINY_RUN,
      '--sft-solver', 'echo', '--sft-episodes', '5', '--sft_steps', '1', '--sft_batch_size', '1',
    ]);
    expect(result.code).toBe(0);
    expect(result.lines.map((l) => l.phase)).toEqual(['load', 'sft', 'grpo', 'done']);
    const transcripts = (await readFile(join(output, 'transcripts.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    const echoed = transcripts.map((t: { messages: { role: string; content: unknown }[] }) => t.messages.filter((m) => m.role === 'tool').map((m) => m.content));
    expect(echoed).toEqual(ECHO_PROMPTS.map((p) => [echoTarget(p)]));
    expect(result.lines.find((l) => l.phase === 'grpo')!['tools/failure_frequency']).toBe(0);
  }, 300_000);

  it('an MCP env none of the tasks knows: the generic task with --prompt, the env tools and rewards', async () => {
    const result = await runCli(['--model', model, '--env', toy.url, '--prompt', "Echo 'hi'.", ...TINY_RUN]);
    expect(result.code).toBe(0);
    const step = result.lines.find((l) => l.phase === 'grpo')!;
    expect(step).toHaveProperty(['rewards/reward_from_env/mean']);
    expect(step['tools/failure_frequency']).toBe(0);
    await expect(run(['--model', model, '--env', toy.url, ...TINY_RUN])).rejects.toThrow(/--prompt TEXT or --dataset FILE.jsonl/);
    await expect(run(['--model', model, '--env', double.url, '--prompt', 'x', ...TINY_RUN])).rejects.toThrow(/is the 'echo' task, which has its own prompts/);
  }, 300_000);
});
