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
