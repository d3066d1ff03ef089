// The example classes of the built-in tasks over scripted OpenEnv episodes: TRL's tool texts, error
// messages, reward bookkeeping and one episode per reset.

import { describe, expect, it } from 'vitest';
import { OpenEnvError } from '../../src/openenv/index.ts';
import { EnvFailure } from '../../src/rl/rollout/env.ts';
import { envTools } from '../../src/rl/rollout/env.ts';
import type { ClassEnv } from '../../src/rl/tasks/env-class.ts';
import { builtinClassTask } from '../../src/rl/tasks/env-class-builtin.ts';
import { classifyEnvError, EpisodeSlot } from '../../src/rl/tasks/envs/episode-session.ts';
import { catchObservation, scriptedEpisodes, scriptedServer, WORDLE_RESET_LOG, wordleObservation, type ScriptedEpisode } from './fake-episodes.ts';

const row = { prompt: [{ role: 'user' as const, content: 'x' }] };
const CRANE = '\n[GAME] [crane]\n[GAME] You submitted [crane].\nFeedback:\nC R A N E\nG X Y X X\nYou have 5 guesses left.';
const INVALID = '\n[GAME] [xq]\n[GAME] You attempted an invalid move. Reason: Your word must be exactly 5 letters. Please resubmit a valid move and remember to follow the game rules to avoid penalties.';

/** The built-in task's class over a scripted server; `game()` is the user's instance (TRL's environments[i]). */
async function classEnv(task: string, episodes: ScriptedEpisode[]) {
  const served = await scriptedServer(episodes);
  const env = (await builtinClassTask(task))!.envFactory({ [task]: served.url })() as ClassEnv;
  const tool = (name: string) => (args: Record<string, unknown> = {}) => Promise.resolve().then(() => envTools(env).find((t) => t.declaration.name === name)!.call(args));
  return { env, served, tool, game: () => env.instance as { reward: number | null; done: boolean } };
}

describe('catch.mjs (the built-in catch task)', () => {
  it('describes ball and paddle, 1-based, with the relative position; terminal: the paddle only', async () => {
    const { env, served, tool } = await classEnv('catch', [
      { first: catchObservation(0, 2, 2), steps: [catchObservation(4, 4, 1), catchObservation(null, 0, 3, true, 1)] },
    ]);
    try {
      expect(await env.reset(row)).toBe('Ball: row 1/10, column 3/5\nPaddle: column 3/5\nThe ball is directly above the paddle.');
      expect(await tool('stay')()).toBe('Ball: row 5/10, column 5/5\nPaddle: column 2/5\nThe ball is 3 column(s) to the RIGHT of the paddle.');
      // Terminal: the ball is in the paddle row, so only the paddle is described.
      expect(await tool('stay')()).toBe('Paddle: column 4/5');
    } finally {
      await env.close();
      await served.close();
    }
  });

  it('maps move/stay to action ids, keeps reward and done, refuses after the end', async () => {
    const { env, served, tool, game } = await classEnv('catch', [
      { first: catchObservation(0, 1, 2), steps: [catchObservation(1, 1, 1), catchObservation(2, 1, 2), catchObservation(null, 1, 1, true, -1)] },
      { first: catchObservation(0, 3, 2), steps: [] },
    ]);
    const reward = async () => (await (await builtinClassTask('catch'))!.rewardFuncs[0]!({ prompts: [], completions: [], completion_ids: [], environments: [env], trainer_state: { global_step: 0 } }))[0];
    try {
      await env.reset(row);
      expect(await tool('move')({ direction: 'left' })).toBe('Ball: row 2/10, column 2/5\nPaddle: column 2/5\nThe ball is directly above the paddle.');
      await tool('move')({ direction: 'right' });
      await expect(tool('move')({ direction: 'down' })).rejects.toThrow("Invalid direction 'down': must be 'left' or 'right'.");
      await expect(tool('move')({ direction: 3 })).rejects.toThrow("Invalid direction 3: must be 'left' or 'right'.");
      expect(game().done).toBe(false);
      expect(await reward()).toBe(0);
      expect(await tool('stay')()).toBe('Paddle: column 2/5');
      expect([game().done, game().reward]).toEqual([true, -1]);
      expect(await reward()).toBe(0);
      await expect(tool('stay')()).rejects.toThrow('Episode is done.');
      expect(served.log.actions[0]!.map((a) => a.action_id)).toEqual([0, 2, 1]);
      // The next reset ends the old episode and starts a new one.
      await env.reset(row);
      expect(served.log.closed).toBe(1);
      expect([game().done, game().reward]).toEqual([false, 0]);
    } finally {
      await env.close();
      await served.close();
    }
  });
});

describe('wordle.mjs (the built-in wordle task)', () => {
  it('returns only the new part of the log; invalid moves score 0; "Game over." after the end', async () => {
    const afterCrane = WORDLE_RESET_LOG + CRANE;
    const afterInvalid = afterCrane + INVALID;
    const { env, served, tool, game } = await classEnv('wordle', [
      { first: wordleObservation(WORDLE_RESET_LOG), steps: [wordleObservation(afterCrane), wordleObservation(afterInvalid, 0.3), wordleObservation(afterInvalid + '\n[GAME] [cloak]', 1, true)] },
    ]);
    try {
      expect(await env.reset(row)).toBe(WORDLE_RESET_LOG);
      expect(await tool('guess')({ guess: '[crane]' })).toBe(CRANE);
      expect(await tool('guess')({ guess: '[xq]' })).toBe(INVALID);
      expect(game().reward).toBe(0); // the env repeated 0.3; TRL zeroes invalid moves
      expect(await tool('guess')({ guess: '[cloak]' })).toBe('\n[GAME] [cloak]');
      expect([game().reward, game().done]).toEqual([1, true]);
      await expect(tool('guess')({ guess: '[again]' })).rejects.toThrow('Game over.');
    } finally {
      await env.close();
      await served.close();
    }
  });
});

describe('env errors', () => {
  it('server rejections are tool errors (Python client text); transport failures are env failures', () => {
    const exec = classifyEnvError(new OpenEnvError('EXECUTION_ERROR', 'Game is over. Call reset.'));
    expect(exec).not.toBeInstanceOf(EnvFailure);
    expect(exec.message).toBe('Server error: Game is over. Call reset. (code: EXECUTION_ERROR)');
    for (const code of ['CLOSED', 'TIMEOUT', 'CONNECT_FAILED', 'CAPACITY_REACHED', 'SESSION_ERROR', 'PROTOCOL'] as const) {
      expect(classifyEnvError(new OpenEnvError(code, 'x'))).toBeInstanceOf(EnvFailure);
    }
  });

  it('a failed connect on reset surfaces as an EnvFailure', async () => {
    const { open } = scriptedEpisodes([new OpenEnvError('CONNECT_FAILED', 'Cannot connect to ws://env/catch/ws: ECONNREFUSED')]);
    const err = await new EpisodeSlot('http://env/catch', open).reset().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvFailure);
  });

  it('a close while the reset runs (the rollout gave up on it) closes the connection as soon as it opens', async () => {
    const { open: scripted, log } = scriptedEpisodes([{ first: catchObservation(0, 0, 2), steps: [] }]);
    let connect!: () => void;
    const connected = new Promise<void>((r) => (connect = r));
    const slow: typeof scripted = async (baseUrl, reset) => {
      await connected;
      return scripted(baseUrl, reset);
    };
    const env = new EpisodeSlot('http://env/catch', slow);
    const reset = env.reset().catch((e: unknown) => e);
    await env.close();
    expect(log.closed).toBe(0);
    connect();
    const err = await reset;
    expect(err).toBeInstanceOf(EnvFailure);
    expect((err as Error).message).toBe('the episode was closed while its reset ran');
    expect(log.closed).toBe(1);
  });
});
