// Zero code for OpenEnv's own action-protocol servers, replayed from the bytes they sent
// (tests/fixtures/openenv/<env>/, scripts/openenv-capture/): grid_world, maze and connect4 resolve to one
// tool derived from their /schema, each call is a step whose observation fields are the result, the
// episode's reward is the sum of its step rewards (0 when none), a refused action is the server's own
// error, and with no prompt the env's /metadata description plus its reset observation is the prompt.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActionSchemaEnv, actionToolSchema, observationText, toolNameOf } from '../../src/rl/tasks/action-schema-task.ts';
import { resolveTask } from '../../src/rl/tasks/resolve-task.ts';
import { openEnvEpisodes } from '../../src/rl/tasks/envs/episode-session.ts';
import { runRollouts, type Rollout } from '../../src/rl/rollout/rollout.ts';
import { envToolSchemas } from '../../src/rl/rollout/env.ts';
import type { ChatTemplateTask } from '../../src/rl/tasks/task.ts';
import { startReplayServer, type ReplayServer } from '../openenv/replay-server.ts';
import { callText, FakeEngine } from './fake-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

const servers: Record<string, ReplayServer> = {};
const CONFIG = { max_completion_length: 4096, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' as const, max_tool_calling_iterations: 20 };

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

async function play(task: ChatTemplateTask, tool: string, calls: Record<string, unknown>[]): Promise<{ rollout: Rollout; reward: number | null }> {
  const tok = qwen3Tokenizer();
  const rollouts = await runRollouts({ engine: new FakeEngine(tok, script(tool, calls)), tokenizer: tok, rows: task.dataset(1), envFactory: task.envFactory({}, openEnvEpisodes({ timeoutMs: 10_000 })), config: CONFIG, seed: 1 });
  const [reward] = await task.rewardFuncs[0]!({ prompts: [], completions: [], completion_ids: [], environments: rollouts.map((r) => r.env), trainer_state: { global_step: 0 } });
  return { rollout: rollouts[0]!, reward: reward ?? null };
}

const toolResults = (r: Rollout) => r.completion.filter((m) => m.role === 'tool').map((m) => m.content);

describe('zero code: an action-protocol OpenEnv server no task knows', () => {
  it('grid_world resolves to one tool from its /schema: the enum inlined from $defs, its description, no base metadata field', async () => {
    const r = await resolveTask({ env: servers.grid_world!.url });
    expect(r.name).toBe('action-schema');
    const env = r.task.envFactory({}, openEnvEpisodes())();
    expect(envToolSchemas(env)).toEqual([
      {
        type: 'function',
        function: {
          name: 'grid_world',
          description: 'Take one action in the GridWorldEnvironment environment; returns the observation after it.',
          parameters: { type: 'object', properties: { action: { enum: ['UP', 'DOWN', 'LEFT', 'RIGHT'], type: 'string', description: 'The direction to move the agent.' } }, required: ['action'] },
        },
      },
    ]);
  });

  it("with no prompt the env's /metadata description and its reset observation are the prompt", async () => {
    const r = await resolveTask({ env: servers.grid_world!.url });
    const row = r.task.dataset(1)[0]!;
    expect(row.prompt).toEqual([{ role: 'user', content: 'GridWorldEnvironment environment' }]);
    const env = r.task.envFactory({}, openEnvEpisodes())();
    expect(await env.reset(row)).toBe('\n\nx: 0\ny: 0\nmessage: Welcome to Grid World! Goal is at [4, 4].');
    await env.close?.();
  });

  it("each call is a step: the observation's fields are the result, the reward is the episode's return, a finished game takes no more moves", async () => {
    const { task } = await resolveTask({ env: servers.grid_world!.url });
    const path = ['DOWN', 'DOWN', 'DOWN', 'DOWN', 'RIGHT', 'RIGHT', 'RIGHT', 'RIGHT', 'UP'].map((action) => ({ action }));
    const { rollout, reward } = await play(task, 'grid_world', path);
    const results = toolResults(rollout);
    expect(results[0]).toBe('x: 1\ny: 0\nmessage: Keep going...');
    expect(results[7]).toBe('x: 4\ny: 4\nmessage: You found the goal!\nThe episode is over.');
    expect(results[8]).toBe("{'error': 'The episode is over: no more actions.'}");
    expect([rollout.toolCalls, rollout.toolFailures]).toEqual([9, 1]);
    // Seven steps at -0.1, then 1.0 at the goal (OpenEnv's grid_world rewards).
    expect(reward).toBeCloseTo(0.3, 10);
  });

  it("an action the server refuses is its own pydantic error, quoted, and a failed call; no step, no reward: 0", async () => {
    const { task } = await resolveTask({ env: servers.grid_world!.url });
    const { rollout, reward } = await play(task, 'grid_world', [{ action: 'NORTH' }]);
    expect(toolResults(rollout)[0]).toMatch(/^\{'error': "Server error: .*Input should be 'UP', 'DOWN', 'LEFT' or 'RIGHT'/);
    expect([rollout.toolCalls, rollout.toolFailures]).toEqual([1, 1]);
    expect(reward).toBe(0);
  });

  it('an episode in which the model never acts scores 0, not null', async () => {
    const { task } = await resolveTask({ env: servers.maze!.url });
    expect((await play(task, 'maze', [])).reward).toBe(0);
  });

  it("maze and connect4: their tools, one step each with the env's reward", async () => {
    const maze = await resolveTask({ env: servers.maze!.url });
    expect(maze.name).toBe('action-schema');
    const m = await play(maze.task, 'maze', [{ action: 3 }]);
    expect(toolResults(m.rollout)).toEqual(['legal_actions: [2,3]\ncurrent_position: [1,0]\nprevious_position: [0,0]']);
    expect(m.reward).toBeCloseTo(-0.05, 10);

    const c4 = await resolveTask({ env: servers.connect4!.url });
    const schema = envToolSchemas(c4.task.envFactory({}, openEnvEpisodes())())[0]!;
    expect(schema.function.name).toBe('connect4');
    expect(schema.function.description).toContain('column: The column index (0 to 6) where the piece will be placed.');
    expect(schema.function.parameters).toEqual({ type: 'object', properties: { column: { type: 'integer' } }, required: ['column'] });
    const win = await play(c4.task, 'connect4', [0, 1, 0, 1, 0, 1, 0].map((column) => ({ column })));
    expect(toolResults(win.rollout).at(-1)).toMatch(/The episode is over\.$/);
    expect(win.reward).toBe(1);
    const invalid = await play(c4.task, 'connect4', [{ column: 9 }]);
    expect(invalid.reward).toBe(-1);
  });

  it('the dataset row\'s columns reach the reset; --prompt rows replace the env\'s prompt', async () => {
    const rows = [{ prompt: [{ role: 'user' as const, content: 'Reach the goal.' }], seed: 7 }];
    const r = await resolveTask({ env: servers.grid_world!.url, prompts: async () => rows });
    expect(r.task.dataset()).toEqual(rows);
    const before = servers.grid_world!.resets.length;
    await play(r.task, 'grid_world', []);
    expect(servers.grid_world!.resets.slice(before)).toEqual([{ seed: 7 }]);
  });
});

describe('the pieces', () => {
  it('tool names from the class', () => {
    expect(['GridWorldEnvironment', 'MazeEnvironment', 'Connect4Environment', 'DIPGSafetyEnv', 'Environment', '2048Environment'].map(toolNameOf)).toEqual(['grid_world', 'maze', 'connect4', 'dipg_safety', 'environment', 'env_2048']);
  });

  it('observation text leaves out the base fields (reward, done, metadata)', () => {
    expect(observationText({ x: 1, done: true, reward: 1, metadata: { a: 1 }, board: [[0]] })).toBe('x: 1\nboard: [[0]]');
    expect(observationText({})).toBe('(no observation fields)');
  });

  it('a self-referring schema is cut, not recursed forever', () => {
    const schema = actionToolSchema({ className: 'TreeEnv', description: '', action: { properties: { node: { $ref: '#/$defs/Node' } }, $defs: { Node: { type: 'object', properties: { child: { $ref: '#/$defs/Node' } } } } } });
    expect(JSON.stringify(schema).length).toBeLessThan(20_000);
  });

  it('ActionSchemaEnv is what the factory makes', async () => {
    const { task } = await resolveTask({ env: servers.connect4!.url });
    expect(task.envFactory({}, openEnvEpisodes())()).toBeInstanceOf(ActionSchemaEnv);
  });
});
