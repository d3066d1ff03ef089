// Scripted OpenEnv episodes for env tests: each `open` hands out the next scripted session, which replays
// wire observations (specs/openenv-protocol.md §5) and records the actions it was sent.

import { OpenEnvError } from '../../src/openenv/index.ts';
import type { StepResult } from '../../src/openenv/index.ts';
import type { EpisodeSession, OpenEpisode } from '../../src/rl/tasks/envs/episode-session.ts';

export type ScriptedStep = StepResult | OpenEnvError | ((action: Record<string, unknown>) => StepResult);

export interface ScriptedEpisode {
  first: StepResult;
  steps: ScriptedStep[];
}

export interface EpisodeLog {
  urls: string[];
  actions: Record<string, unknown>[][];
  closed: number;
}

export function scriptedEpisodes(episodes: (ScriptedEpisode | OpenEnvError)[]): { open: OpenEpisode; log: EpisodeLog } {
  const log: EpisodeLog = { urls: [], actions: [], closed: 0 };
  let next = 0;
  const open: OpenEpisode = async (baseUrl) => {
    log.urls.push(baseUrl);
    const script = episodes[next++];
    if (!script) throw new Error('no scripted episode left');
    if (script instanceof OpenEnvError) throw script;
    const actions: Record<string, unknown>[] = [];
    log.actions.push(actions);
    let i = 0;
    const session: EpisodeSession = {
      first: script.first,
      step: async (action) => {
        actions.push(action);
        const s = script.steps[i++];
        if (s === undefined) throw new Error('no scripted step left');
        if (s instanceof OpenEnvError) throw s;
        return typeof s === 'function' ? s(action) : s;
      },
      close: async () => {
        log.closed++;
      },
    };
    return session;
  };
  return { open, log };
}

/** A catch observation with the ball at (row, col) and the paddle at paddleCol, 0-based (§5.2). */
export function catchObservation(ballRow: number | null, ballCol: number, paddleCol: number, done = false, reward: number | null = null): StepResult {
  const info = new Array<number>(50).fill(0);
  if (ballRow !== null) info[ballRow * 5 + ballCol] = 1;
  info[9 * 5 + paddleCol] = 1;
  return {
    observation: {
      info_state: info,
      legal_actions: done ? [] : [0, 1, 2],
      game_phase: done ? 'terminal' : ballRow === 0 ? 'initial' : 'playing',
      current_player_id: done ? -4 : 0,
      opponent_last_action: null,
    },
    reward,
    done,
  };
}

export const WORDLE_RESET_LOG =
  "\n[GAME] You are Playing Wordle.\nA secret 5-letter word has been chosen. You have 6 attempts to guess it.\nFor each guess, wrap your word in square brackets (e.g., '[apple]').\nFeedback for each letter will be given as follows:\n  - G (green): correct letter in the correct position\n  - Y (yellow): letter exists in the word but in the wrong position\n  - X (wrong): letter is not in the word\nEnter your guess to begin.\n";

export function wordleObservation(log: string, reward = 0, done = false): StepResult {
  return {
    observation: {
      prompt: log.trim(),
      messages: [{ sender_id: -1, content: log, category: 'MESSAGE' }],
      current_player_id: 0,
      legal_players: [0],
      info: {},
    },
    reward,
    done,
  };
}

export function echoObservation(message: string): StepResult {
  const length = [...message].length;
  return { observation: { echoed_message: message, message_length: length }, reward: length * 0.1, done: false };
}

/**
 * The same scripts behind OpenEnv's HTTP routes (`POST /reset`, `/step`; no `/ws`, so a class's
 * EnvClient takes them): for the example classes, which open their own episodes. A scripted error is
 * the server's 500 (its message in the reply); `log.closed` counts episodes ended by the next reset.
 */
export async function scriptedServer(episodes: ScriptedEpisode[]): Promise<{ url: string; log: EpisodeLog; close(): Promise<void> }> {
  const { createServer } = await import('node:http');
  const log: EpisodeLog = { urls: [], actions: [], closed: 0 };
  let next = 0;
  let current: { script: ScriptedEpisode; actions: Record<string, unknown>[]; i: number } | null = null;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const reply = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.method === 'POST' && req.url === '/reset') {
        const script = episodes[next++];
        if (!script) return reply(500, { detail: 'no scripted episode left' });
        if (current) log.closed++;
        log.urls.push(`http://${req.headers.host}`);
        current = { script, actions: [], i: 0 };
        log.actions.push(current.actions);
        return reply(200, script.first);
      }
      if (req.method === 'POST' && req.url === '/step' && current) {
        const action = (JSON.parse(body) as { action: Record<string, unknown> }).action;
        current.actions.push(action);
        const s = current.script.steps[current.i++];
        if (s === undefined) return reply(500, { detail: 'no scripted step left' });
        if (s instanceof OpenEnvError) return reply(500, { detail: s.message });
        return reply(200, typeof s === 'function' ? s(action) : s);
      }
      reply(404, { detail: 'Not Found' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { url, log, close: () => new Promise<void>((r) => server.close(() => r())) };
}
