// Playing scripted episodes for SFT transcripts: seeded episode openers and the one-call-per-turn
// loop every scripted solver uses (moved out of solvers.ts so per-task solvers in their own modules
// can use it without an import circle).

import type { ChatMessage, ToolCall } from '../../model/chat-template.ts';
import { envToolSchemas, envTools, type DatasetRow, type ToolEnv } from '../rollout/env.ts';
import { openEpisode, type OpenEpisode } from './envs/episode-session.ts';
import type { Transcript } from '../grpo/sft.ts';
import { executeToolCalls } from '../rollout/tools.ts';

/** What the solver answers after the episode ended (the model learns to stop calling tools). */
export const FINAL_ANSWER = 'Done.';

/**
 * An OpenEpisode whose k-th episode since the last `reseed(base)` resets with `{seed: base + k}`;
 * `nextSeed()` draws that seed for an episode the opener does not open (an environment class's own
 * client, env-class.ts), so both kinds of env count episodes alike.
 */
export type SeededEpisodes = OpenEpisode & { reseed(base: number): void; nextSeed(): number };

/** The reset seed of episode number `n` (base + k) in a split's seed space (src/rl/eval/splits.ts). */
export type SeedOf = (n: number) => number;

/** Training's seed space: 32-bit (held-out seeds lie outside it). */
export const trainingSeed: SeedOf = (n) => n >>> 0;

/**
 * Opens one OpenEnv episode per call with reset `{seed: seedOf(base + k)}` for the k-th episode, so a
 * run's env randomness (e.g. the catch ball column) is reproducible. Episodes are numbered in call
 * order, which is rollout order (resets start in order); the trainer reseeds per generation batch so a
 * resumed run meets the same games.
 */
export function seededEpisodes(base: number, seedOf: SeedOf = trainingSeed): SeededEpisodes {
  let start = base;
  let k = 0;
  const nextSeed = (): number => seedOf(start + k++);
  const open: OpenEpisode = (baseUrl, reset, wait) => openEpisode(baseUrl, { reset: { ...reset, seed: nextSeed() }, sessionWait: wait ?? null });
  return Object.assign(open, {
    reseed(next: number) {
      start = next;
      k = 0;
    },
    nextSeed,
  });
}

/** Plays one episode: reset, then one tool call per assistant turn until `done()`; ends with FINAL_ANSWER. */
export async function playEpisode(
  env: ToolEnv,
  row: DatasetRow,
  policy: (lastObservation: string, turn: number) => ToolCall | null,
  maxTurns: number,
  baseUrl: string,
): Promise<Transcript> {
  const observation = await env.reset(row);
  const prompt = structuredClone(row.prompt);
  const last = prompt[prompt.length - 1]!;
  if (typeof observation === 'string') last.content += observation;
  const messages: ChatMessage[] = [...prompt];
  let seen = typeof observation === 'string' ? observation : '';
  try {
    for (let turn = 0; turn < maxTurns; turn++) {
      const action = policy(seen, turn);
      if (!action) break;
      messages.push({ role: 'assistant', content: '', tool_calls: [action] });
      const result = await executeToolCalls(envTools(env), [action]);
      // A warm-up teaches whatever its transcripts show: an env error in one would teach the model
      // to expect errors (or that a broken env is normal). Stop and name it instead.
      if (result.failures > 0) {
        throw new Error(
          `scripted warm-up: the env at ${baseUrl} answered the solver's ${action.function.name}(${JSON.stringify(action.function.arguments)}) ` +
            `with an error, so its transcripts cannot be trained on: ${result.errors[0]}`,
        );
      }
      messages.push(...result.messages);
      const content = result.messages[result.messages.length - 1]!.content;
      seen = typeof content === 'string' ? content : '';
    }
    messages.push({ role: 'assistant', content: FINAL_ANSWER });
    return { messages, tools: envToolSchemas(env) };
  } finally {
    await env.close?.();
  }
}
