// The example envs against the real built-in env-server (in-process, 127.0.0.1, random port) through
// the OpenEnv client: observation texts, rewards, tool errors, env failures, and a whole catch episode
// played by a scripted policy through runRollouts.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { EnvFailure } from '../../src/rl/rollout/env.ts';
import { EpisodeSlot, openEnvEpisodes } from '../../src/rl/tasks/envs/episode-session.ts';
import { envTools } from '../../src/rl/rollout/env.ts';
import type { ClassEnv } from '../../src/rl/tasks/env-class.ts';
import { builtinClassTask } from '../../src/rl/tasks/env-class-builtin.ts';
import { runRollouts } from '../../src/rl/rollout/rollout.ts';
import { connect } from '../../src/openenv/index.ts';
import { callText, FakeEngine } from './fake-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';
import { SamplingFakeEngine } from './sampling-engine.ts';

let server: EnvServer;
const open = openEnvEpisodes({ timeoutMs: 10_000 });
const row = { prompt: [{ role: 'user' as const, content: 'x' }] };
const OBSERVATION = /^Ball: row (\d+)\/10, column (\d)\/5\nPaddle: column (\d)\/5\nThe ball is (\d column\(s\) to the (LEFT|RIGHT) of the paddle|directly above the paddle)\.$/;

beforeAll(async () => {
  server = await createEnvServer({ port: 0, maxConcurrentEnvs: 4 });
});

afterAll(async () => {
  await server.close();
});

/** Move toward the ball's column, read from the observation text. */
function solverAction(observation: string): 'left' | 'right' | 'stay' {
  const ball = /column (\d)\/5\nPaddle: column (\d)\/5/.exec(observation);
  if (!ball) return 'stay';
  const diff = Number(ball[1]) - Number(ball[2]);
  return diff < 0 ? 'left' : diff > 0 ? 'right' : 'stay';
}

describe('example envs over the built-in env-server', () => {
  it('echo: the echoed message and 0.1 per code point, through call_tool echo_message (the built-in echo is an MCP env)', async () => {
    const env = (await builtinClassTask('echo'))!.envFactory({ echo: `${server.url}/envs/echo` })() as ClassEnv;
    const echo = (message: unknown) => envTools(env)[0]!.call({ message });
    const reward = () => (env.instance as { reward: number }).reward;
    try {
      expect(await env.reset(row)).toBeNull();
      expect(await echo('Hello World!')).toBe('Hello World!');
      expect(reward()).toBe(1.2000000000000002);
      // The MCP echo allows an empty message (openenv-mcp.md §1).
      expect(await echo('')).toBe('');
      expect(reward()).toBe(0);
      // A tool error reads as the Python client raises it.
      await expect(echo(5)).rejects.toThrow(
        /^Tool 'echo_message' failed: 1 validation error for call\[echo_message\]\nmessage\n {2}Input should be a valid string .* \(type: execution_error\)$/s,
      );
    } finally {
      await env.close();
    }
  });

  it('catch: grid text, a caught ball is reward 1, then "Episode is done."', async () => {
    const task = (await builtinClassTask('catch'))!;
    const env = task.envFactory({ catch: `${server.url}/envs/catch` })() as ClassEnv;
    const game = () => env.instance as { reward: number; done: boolean };
    const move = (direction: unknown) => Promise.resolve().then(() => envTools(env).find((t) => t.declaration.name === 'move')!.call({ direction }));
    const stay = () => Promise.resolve().then(() => envTools(env).find((t) => t.declaration.name === 'stay')!.call({}));
    let text = String(await env.reset(row));
    expect(text).toMatch(OBSERVATION);
    expect(text).toMatch(/^Ball: row 1\/10, column \d\/5\nPaddle: column 3\/5\n/);
    await expect(move('up')).rejects.toThrow("Invalid direction 'up': must be 'left' or 'right'.");
    let steps = 0;
    while (!game().done) {
      const action = solverAction(text);
      text = String(action === 'stay' ? await stay() : await move(action));
      steps++;
    }
    expect(steps).toBe(9);
    expect(text).toMatch(/^Paddle: column \d\/5$/);
    expect(game().reward).toBe(1);
    expect(await task.rewardFuncs[0]!({ prompts: [], completions: [], completion_ids: [], environments: [env], trainer_state: { global_step: 0 } })).toEqual([1]);
    await expect(stay()).rejects.toThrow('Episode is done.');
    await env.close();
  });

  it('wordle: the reset log, then only the new part of the log per guess', async () => {
    const env = (await builtinClassTask('wordle'))!.envFactory({ wordle: `${server.url}/envs/wordle` })() as ClassEnv;
    const game = () => env.instance as { reward: number; done: boolean };
    const guess = async (word: string) => String(await envTools(env)[0]!.call({ guess: word }));
    const log = String(await env.reset(row));
    expect(log.startsWith('\n[GAME] You are Playing Wordle.\nA secret 5-letter word has been chosen.')).toBe(true);
    const invalid = await guess('[xq]');
    expect(invalid).toBe(
      '\n[GAME] [xq]\n[GAME] You attempted an invalid move. Reason: Your word must be exactly 5 letters. Please resubmit a valid move and remember to follow the game rules to avoid penalties.',
    );
    expect(game().reward).toBe(0);
    const feedback = await guess('[crane]');
    if (!game().done) expect(feedback).toMatch(/^\n\[GAME\] \[crane\]\n\[GAME\] You submitted \[crane\]\.\nFeedback:\nC R A N E\n[GXY ]{9}\nYou have 5 guesses left\.$/);
    await env.close();
  });

  it('a refused connection is an env failure, not a tool error', async () => {
    const capped = await createEnvServer({ port: 0, maxConcurrentEnvs: 1 });
    try {
      const noRetry = openEnvEpisodes({ retries: 0, timeoutMs: 10_000 });
      // Another client holds the one session (this process's own episodes would queue for it instead).
      const other = await connect(`${capped.url}/envs/echo`);
      await other.reset({});
      const b = new EpisodeSlot(`${capped.url}/envs/echo`, noRetry);
      const refused = await b.reset().catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(EnvFailure);
      expect((refused as Error).message).toMatch(/Server at capacity: 1\/1 sessions active/);
      await other.close();
    } finally {
      await capped.close();
    }
  });

  it('a dropped connection mid-episode is an env failure', async () => {
    const doomed = await createEnvServer({ port: 0 });
    const env = new EpisodeSlot(`${doomed.url}/envs/catch`, open);
    await env.reset();
    await doomed.close();
    const err = await env.step({ action_id: 1, game_name: 'catch', game_params: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvFailure);
    await env.close();
  });

  it('runRollouts plays whole catch episodes: a solver policy catches every ball', async () => {
    const tok = qwen3Tokenizer();
    // The policy reads the last observation in its context and moves toward the ball.
    const engine = new FakeEngine(tok, (context) => {
      // The last observation: a tool response, or the grid appended to the prompt. Terminal = paddle only.
      const response = context.lastIndexOf('<tool_response>\n');
      if (response >= 0 && context.startsWith('Paddle:', response + '<tool_response>\n'.length)) return 'Caught it.<|im_end|>';
      const action = solverAction(context.slice(context.lastIndexOf('Ball:')));
      return (action === 'stay' ? callText('stay', {}) : callText('move', { direction: action })) + '<|im_end|>';
    });
    const task = (await builtinClassTask('catch'))!;
    const rows = task.dataset(3);
    const rollouts = await runRollouts({
      engine, tokenizer: tok, rows, envFactory: task.envFactory({ catch: `${server.url}/envs/catch` }, open),
      config: { max_completion_length: 4096, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' }, seed: 1,
    });
    const rewards = task.rewardFuncs[0]({ prompts: [], completions: [], completion_ids: [], environments: rollouts.map((r) => r.env), trainer_state: { global_step: 0 } });
    expect(rewards).toEqual([1, 1, 1]);
    for (const r of rollouts) {
      expect(r.error).toBeUndefined();
      expect(r.toolCalls).toBe(9);
      expect(r.toolFailures).toBe(0);
      expect(r.completion.filter((m) => m.role === 'tool')).toHaveLength(9);
      expect(r.completion[r.completion.length - 1]).toEqual({ role: 'assistant', content: 'Caught it.' });
      expect(r.truncated).toBe(false);
    }
    expect(engine.batches.map((b) => b.length)).toEqual(new Array(10).fill(3));
    expect(server.stats().activeSessions).toBe(0);
  });

  for (const scheduler of ['lockstep', 'continuous'] as const) {
    it(`${scheduler}: a generation of 6 against a server capped at 2 sessions, max_concurrent_envs 2: every episode scored, no refusal`, async () => {
      const capped = await createEnvServer({ port: 0, maxConcurrentEnvs: 2 });
      try {
        const tok = qwen3Tokenizer();
        // Catch the ball with the scripted solver (the built-in task: examples/catch.mjs, whose client retries
        // refusals as OpenEnv's does, so the peak shows the cap held).
        // (token by token, as the continuous scheduler decodes).
        const engine = new SamplingFakeEngine(tok, (context) => {
          const response = context.lastIndexOf('<tool_response>\n');
          if (response >= 0 && context.startsWith('Paddle:', response + '<tool_response>\n'.length)) return ['Caught it.<|im_end|>'];
          const action = solverAction(context.slice(context.lastIndexOf('Ball:')));
          return [(action === 'stay' ? callText('stay', {}) : callText('move', { direction: action })) + '<|im_end|>'];
        });
        let peak = 0;
        const watch = setInterval(() => (peak = Math.max(peak, capped.stats().activeSessions)), 1);
        const task = (await builtinClassTask('catch'))!;
        const rollouts = await runRollouts({
          engine, tokenizer: tok, rows: task.dataset(6), envFactory: task.envFactory({ catch: `${capped.url}/envs/catch` }, openEnvEpisodes({ retries: 0, timeoutMs: 10_000 })),
          config: { max_completion_length: 4096, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: scheduler, max_concurrent_envs: 2 },
          seed: 1,
        });
        clearInterval(watch);
        expect(rollouts.map((r) => r.error)).toEqual(new Array(6).fill(undefined));
        const rewards = task.rewardFuncs[0]({ prompts: [], completions: [], completion_ids: [], environments: rollouts.map((r) => r.env), trainer_state: { global_step: 0 } });
        expect(rewards).toEqual([1, 1, 1, 1, 1, 1]);
        expect(peak).toBe(2);
        expect(capped.stats().activeSessions).toBe(0);
      } finally {
        await capped.close();
      }
    });
  }
});
