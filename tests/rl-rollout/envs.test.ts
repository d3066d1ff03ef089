// The example env classes over scripted OpenEnv sessions: TRL's tool texts, error messages, reward
// bookkeeping and one connection per episode.

import { describe, expect, it } from 'vitest';
import { OpenEnvError } from '../../src/openenv/index.ts';
import { EnvFailure } from '../../src/rl/rollout/env.ts';
import { CatchEnv, catchReward, formatCatchObservation } from '../../src/rl/tasks/envs/catch.ts';
import { classifyEnvError } from '../../src/rl/tasks/envs/episode-session.ts';
import { WordleEnv } from '../../src/rl/tasks/envs/wordle.ts';
import { catchObservation, scriptedEpisodes, WORDLE_RESET_LOG, wordleObservation } from './fake-episodes.ts';

const row = { prompt: [{ role: 'user' as const, content: 'x' }] };
const CRANE = '\n[GAME] [crane]\n[GAME] You submitted [crane].\nFeedback:\nC R A N E\nG X Y X X\nYou have 5 guesses left.';
const INVALID = '\n[GAME] [xq]\n[GAME] You attempted an invalid move. Reason: Your word must be exactly 5 letters. Please resubmit a valid move and remember to follow the game rules to avoid penalties.';

describe('formatCatchObservation', () => {
  it('describes ball and paddle, 1-based, with the relative position', () => {
    expect(formatCatchObservation(catchObservation(0, 2, 2).observation.info_state as number[])).toBe(
      'Ball: row 1/10, column 3/5\nPaddle: column 3/5\nThe ball is directly above the paddle.',
    );
    expect(formatCatchObservation(catchObservation(4, 4, 1).observation.info_state as number[])).toBe(
      'Ball: row 5/10, column 5/5\nPaddle: column 2/5\nThe ball is 3 column(s) to the RIGHT of the paddle.',
    );
    // Terminal: the ball is in the paddle row, so only the paddle is described.
    expect(formatCatchObservation(catchObservation(null, 0, 3, true, 1).observation.info_state as number[])).toBe('Paddle: column 4/5');
  });
});

describe('CatchEnv', () => {
  it('maps move/stay to action ids, keeps reward and done, refuses after the end', async () => {
    const { open, log } = scriptedEpisodes([
      { first: catchObservation(0, 1, 2), steps: [catchObservation(1, 1, 1), catchObservation(2, 1, 2), catchObservation(null, 1, 1, true, -1)] },
      { first: catchObservation(0, 3, 2), steps: [] },
    ]);
    const env = new CatchEnv('http://env/catch', open);
    await env.reset(row);
    expect(await env.move('left')).toBe('Ball: row 2/10, column 2/5\nPaddle: column 2/5\nThe ball is directly above the paddle.');
    await env.move('right');
    await expect(env.move('down')).rejects.toThrow("Invalid direction 'down': must be 'left' or 'right'.");
    await expect(env.move(3)).rejects.toThrow("Invalid direction 3: must be 'left' or 'right'.");
    expect(env.done).toBe(false);
    expect(catchReward(env)).toBe(0);
    expect(await env.stay()).toBe('Paddle: column 2/5');
    expect(env.done).toBe(true);
    expect(env.reward).toBe(-1);
    expect(catchReward(env)).toBe(0);
    await expect(env.stay()).rejects.toThrow('Episode is done.');
    expect(log.actions[0].map((a) => a.action_id)).toEqual([0, 2, 1]);
    // The next reset closes the old connection and opens a new one.
    await env.reset(row);
    expect(log.closed).toBe(1);
    expect(env.done).toBe(false);
    expect(env.reward).toBe(0);
  });
});

describe('WordleEnv', () => {
  it('returns only the new part of the log; invalid moves score 0; "Game over." after the end', async () => {
    const afterCrane = WORDLE_RESET_LOG + CRANE;
    const afterInvalid = afterCrane + INVALID;
    const { open } = scriptedEpisodes([
      { first: wordleObservation(WORDLE_RESET_LOG), steps: [wordleObservation(afterCrane), wordleObservation(afterInvalid, 0.3), wordleObservation(afterInvalid + '\n[GAME] [cloak]', 1, true)] },
    ]);
    const env = new WordleEnv('http://env/wordle', open);
    expect(await env.reset(row)).toBe(WORDLE_RESET_LOG);
    expect(await env.guess('[crane]')).toBe(CRANE);
    expect(await env.guess('[xq]')).toBe(INVALID);
    expect(env.reward).toBe(0); // the env repeated 0.3; TRL zeroes invalid moves
    expect(await env.guess('[cloak]')).toBe('\n[GAME] [cloak]');
    expect(env.reward).toBe(1);
    expect(env.done).toBe(true);
    await expect(env.guess('[again]')).rejects.toThrow('Game over.');
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
    const err = await new CatchEnv('http://env/catch', open).reset(row).catch((e: unknown) => e);
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
    const env = new CatchEnv('http://env/catch', slow);
    const reset = env.reset(row).catch((e: unknown) => e);
    await env.close();
    expect(log.closed).toBe(0);
    connect();
    const err = await reset;
    expect(err).toBeInstanceOf(EnvFailure);
    expect((err as Error).message).toBe('the episode was closed while its reset ran');
    expect(log.closed).toBe(1);
  });
});
