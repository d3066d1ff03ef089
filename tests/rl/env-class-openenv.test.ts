// examples/grid_world.mjs, maze.mjs and connect4.mjs against OpenEnv's own servers, replayed from the
// bytes they sent (tests/fixtures/openenv/<env>/, scripts/openenv-capture/): a scripted policy calls each
// class's tool through the rollout loop the trainer uses, the calls reach the env (the replay server
// answers only frames the real server was sent), and the reward is what the env paid.

import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envToolSchemas } from '../../src/rl/rollout/env.ts';
import { runRollouts } from '../../src/rl/rollout/rollout.ts';
import { computeRewardMatrix } from '../../src/rl/grpo/rewards.ts';
import { toolMetrics } from '../../src/rl/grpo/metrics.ts';
import { envClassTask } from '../../src/rl/tasks/env-class.ts';
import { loadEnvClassFile } from '../../src/rl/tasks/env-class-file.ts';
import { startReplayServer, type ReplayServer } from '../openenv/replay-server.ts';
import { callText, FakeEngine } from '../rl-rollout/fake-engine.ts';
import { qwen3Tokenizer } from '../rl-rollout/qwen3-tokenizer.ts';

const tok = qwen3Tokenizer();
const servers: Record<string, ReplayServer> = {};

beforeAll(async () => {
  for (const env of ['grid_world', 'maze', 'connect4']) servers[env] = await startReplayServer(env);
});
afterAll(async () => {
  for (const s of Object.values(servers)) await s.close();
});

/** Calls `tool` with each of `calls` in turn, one per turn, then stops. */
const script = (tool: string, calls: Record<string, unknown>[]) => (context: string) => {
  const done = context.split('<tool_response>').length - 1;
  return done < calls.length ? callText(tool, calls[done]!) + '<|im_end|>' : 'Done.<|im_end|>';
};

/** One episode of examples/<name>.mjs against the replayed `env`, the policy calling `tool` with `calls`. */
async function play(name: string, env: string, tool: string, calls: Record<string, unknown>[]) {
  const mod = await loadEnvClassFile(fileURLToPath(new URL(`../../examples/${name}.mjs`, import.meta.url)));
  const task = envClassTask(mod, { envUrl: servers[env]!.url });
  const factory = task.envFactory({});
  const [rollout] = await runRollouts({
    engine: new FakeEngine(tok, script(tool, calls)), tokenizer: tok, rows: task.dataset(1), envFactory: factory,
    config: { max_completion_length: 4096, max_tool_calling_iterations: 20, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' }, seed: 1,
  });
  const R = await computeRewardMatrix(task.rewardFuncs, { prompts: [[]], completions: [[]], completion_ids: [[]], environments: [rollout!.env], trainer_state: { global_step: 1 } });
  await rollout!.env.close?.();
  const metrics = toolMetrics([{ modelTokens: 0, totalTokens: 0, truncated: rollout!.truncated, toolCalls: rollout!.toolCalls, toolFailures: rollout!.toolFailures, invalidCalls: rollout!.invalidToolCalls }]);
  const results = rollout!.completion.filter((m) => m.role === 'tool').map((m) => m.content);
  return { rollout: rollout!, reward: R[0]![0], metrics, results, schemas: envToolSchemas(factory()) };
}

describe("examples/ classes for OpenEnv's grid_world, maze and connect4: their tool calls reach the env", () => {
  it('grid_world.mjs: move(direction) walks to the goal; the reward is the return the env paid (7 × −0.1 + 1)', async () => {
    const moves = ['DOWN', 'DOWN', 'DOWN', 'DOWN', 'RIGHT', 'RIGHT', 'RIGHT', 'RIGHT'].map((direction) => ({ direction }));
    const { rollout, reward, metrics, results, schemas } = await play('grid_world', 'grid_world', 'move', moves);
    expect(schemas.map((s) => s.function.name)).toEqual(['move']);
    expect(rollout.prompt.at(-1)!.content).toMatch(/Position \(0, 0\)\. Welcome to Grid World! Goal is at \[4, 4\]\.$/);
    expect([rollout.toolCalls, rollout.toolFailures, metrics['tools/call_frequency'], metrics['tools/failure_frequency'], metrics['tools/invalid_frequency']]).toEqual([8, 0, 8, 0, 0]);
    expect(results.at(-1)).toBe('Position (4, 4). You found the goal!');
    expect(reward).toBeCloseTo(0.3, 10);
    expect(servers.grid_world!.unmatched).toEqual([]);
  });

  it("maze.mjs: move('right') is the env's action 3; an unknown direction is the class's error, not sent", async () => {
    const { rollout, reward, results } = await play('maze', 'maze', 'move', [{ direction: 'right' }]);
    expect(rollout.prompt.at(-1)!.content).toMatch(/Position \[0, 0\]\. Open moves: right\.$/);
    expect(results).toEqual(['Position [1, 0]. Open moves: left, right.']);
    expect(reward).toBeCloseTo(-0.05, 10);
    const bad = await play('maze', 'maze', 'move', [{ direction: 'north' }]);
    expect([bad.rollout.toolCalls, bad.rollout.toolFailures, bad.rollout.invalidToolCalls]).toEqual([1, 1, undefined]);
    expect(bad.results).toEqual([`{'error': 'Invalid direction "north": must be \\'up\\', \\'down\\', \\'left\\' or \\'right\\'.'}`]);
    expect(servers.maze!.unmatched).toEqual([]);
  });

  it('connect4.mjs: drop(column) plays both sides to four in a column; the env pays +1, and −1 for a column off the board', async () => {
    const { rollout, reward, results } = await play('connect4', 'connect4', 'drop', [0, 1, 0, 1, 0, 1, 0].map((column) => ({ column })));
    expect(rollout.toolCalls).toBe(7);
    expect(results.at(-1)).toContain('Game over (reward 1).');
    expect(reward).toBe(1);
    const off = await play('connect4', 'connect4', 'drop', [{ column: 9 }]);
    expect(off.reward).toBe(-1);
    expect(servers.connect4!.unmatched).toEqual([]);
  });
});
