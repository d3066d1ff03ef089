// Scripted solvers: they play the example envs through the same tool envs the model uses and record
// the conversations as transcripts, the SFT warm-up data small models need before GRPO can find any
// reward. Catch: read the observation's "LEFT/RIGHT of the paddle" line and move toward the ball.
// Echo: echo the quoted text of the prompt. Wordle: narrow the answer list with each feedback and guess
// the candidate that splits it best (src/rl/tasks/wordle-solver.ts). Web tasks: src/rl/tasks/browsergym-solver.ts.

import type { ToolCall } from '../../model/chat-template.ts';
import type { DatasetRow } from '../rollout/env.ts';
import { COMPACT_CATCH_PROMPT, CompactCatchEnv, compactCatchAction } from './compact-catch.ts';
import type { ClassEnv } from './env-class.ts';
import { builtinClassTask } from './env-class-builtin.ts';
import type { Transcript } from '../grpo/sft.ts';
import { mulberry32 } from '../../random.ts';
import { parseWordleFeedback, WordleSolver } from './wordle-solver.ts';
import { browsergymTranscripts } from './browsergym-solver.ts';
import { playEpisode, seededEpisodes, type SeedOf } from './play-episode.ts';

export { FINAL_ANSWER, playEpisode, seededEpisodes, type SeededEpisodes } from './play-episode.ts';

function call(name: string, args: Record<string, unknown>): ToolCall {
  return { type: 'function', function: { name, arguments: args } };
}

/** The catch policy: move toward the ball's column, stay under it. */
export function catchAction(observation: string): ToolCall {
  const m = /The ball is \d+ column\(s\) to the (LEFT|RIGHT) of the paddle\./.exec(observation);
  if (m) return call('move', { direction: m[1] === 'LEFT' ? 'left' : 'right' });
  return call('stay', {});
}

/** Scripted catch games of the built-in catch task (examples/catch.mjs) against the catch env at `baseUrl`. */
export async function catchTranscripts(opts: { baseUrl: string; episodes: number; seed: number }): Promise<Transcript[]> {
  const task = (await builtinClassTask('catch'))!;
  const envs = task.envFactory({ catch: opts.baseUrl }, seededEpisodes(opts.seed));
  const [row] = task.dataset(1);
  const out: Transcript[] = [];
  for (let i = 0; i < opts.episodes; i++) {
    const env = envs() as ClassEnv;
    const done = () => (env.instance as { done: boolean }).done;
    // The ball needs 9 steps to land; after that the env raises "Episode is done.", so stop there.
    out.push(await playEpisode(env, row!, (obs) => (done() ? null : catchAction(obs)), 9, opts.baseUrl));
  }
  return out;
}

/**
 * Scripted games of the compact catch variant (one-word observations), for tiny-model warm-ups.
 * `randomActions` (0..1, default 0): the share of moves drawn uniformly from left/right/stay instead
 * of the scripted one (seeded), for a warm-up that teaches the format but only part of the policy.
 */
export async function compactCatchTranscripts(opts: { baseUrl: string; episodes: number; seed: number; randomActions?: number }): Promise<Transcript[]> {
  const open = seededEpisodes(opts.seed);
  const rand = mulberry32(opts.seed ^ 0x5ca1ab1e);
  const noise = opts.randomActions ?? 0;
  const out: Transcript[] = [];
  const randomAction = () => {
    const k = Math.floor(rand() * 3);
    return k === 2 ? { name: 'stay', arguments: {} } : { name: 'move', arguments: { direction: k === 0 ? 'left' : 'right' } };
  };
  for (let i = 0; i < opts.episodes; i++) {
    const env = new CompactCatchEnv(opts.baseUrl, open);
    const row: DatasetRow = { prompt: [{ role: 'user', content: COMPACT_CATCH_PROMPT }] };
    const policy = (obs: string): ToolCall | null => (env.done ? null : { type: 'function', function: rand() < noise ? randomAction() : compactCatchAction(obs) });
    out.push(await playEpisode(env, row, policy, 9, opts.baseUrl));
  }
  return out;
}

/** The quoted text an echo prompt asks for, e.g. `Hello World!`. */
export function echoTarget(prompt: string): string {
  const m = /'([^']*)'/.exec(prompt);
  if (!m) throw new Error(`echo prompt has no quoted message: ${prompt}`);
  return m[1]!;
}

/**
 * One scripted echo episode per prompt (cycling through TRL's five echo prompts). `partial` (0..1,
 * default 0): the share of episodes that echo only a seeded random prefix of the quoted text, for a
 * warm-up whose model is only partly right (the reward grows with the echoed length).
 */
export async function echoTranscripts(opts: { baseUrl: string; episodes: number; seed: number; partial?: number }): Promise<Transcript[]> {
  // The built-in echo task's class (examples/echo.mjs), as the run plays it.
  const task = (await builtinClassTask('echo'))!;
  const envs = task.envFactory({ echo: opts.baseUrl }, seededEpisodes(opts.seed));
  const prompts = task.dataset().map((row) => row.prompt[0]!.content as string);
  const rand = mulberry32(opts.seed ^ 0xec4011);
  const out: Transcript[] = [];
  for (let i = 0; i < opts.episodes; i++) {
    const prompt = prompts[i % prompts.length]!;
    const target = echoTarget(prompt);
    const message = rand() < (opts.partial ?? 0) ? target.slice(0, 1 + Math.floor(rand() * (target.length - 1))) : target;
    const env = envs();
    out.push(await playEpisode(env, { prompt: [{ role: 'user', content: prompt }] }, (_obs, turn) => (turn === 0 ? call('echo', { message }) : null), 1, opts.baseUrl));
  }
  return out;
}

/** Wordle games of the built-in wordle task (examples/wordle.mjs) at `baseUrl`: guesses until a win or the 6th guess. */
export async function wordleTranscripts(opts: { baseUrl: string; episodes: number; seed: number }): Promise<Transcript[]> {
  const task = (await builtinClassTask('wordle'))!;
  const envs = task.envFactory({ wordle: opts.baseUrl }, seededEpisodes(opts.seed));
  const [row] = task.dataset(1);
  const out: Transcript[] = [];
  for (let i = 0; i < opts.episodes; i++) {
    const env = envs() as ClassEnv;
    const solver = new WordleSolver();
    const policy = (observation: string): ToolCall | null => {
      if ((env.instance as { done: boolean }).done) return null;
      const last = solver.guesses[solver.guesses.length - 1];
      if (last !== undefined) solver.observe(last, parseWordleFeedback(observation, last));
      return call('guess', { guess: `[${solver.next()}]` });
    };
    // Wordle allows 6 guesses; the solver never makes an invalid move, so that is at most 6 calls.
    out.push(await playEpisode(env, row!, policy, 6, opts.baseUrl));
  }
  return out;
}

/**
 * The built-in solvers by task name (catch-compact plays the catch env). `rows` are the run's dataset rows: a solver whose tasks differ by
 * row (browsergym's task_name) plays those; the others ignore them.
 */
export const SOLVERS: Record<string, (opts: { baseUrl: string; episodes: number; seed: number; rows?: readonly DatasetRow[]; seedOf?: SeedOf }) => Promise<Transcript[]>> = {
  catch: catchTranscripts,
  'catch-compact': compactCatchTranscripts,
  echo: echoTranscripts,
  wordle: wordleTranscripts,
  browsergym: (opts) => browsergymTranscripts(opts),
};
