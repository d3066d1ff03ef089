// `webgrpo bench rollouts-bound`: how much faster continuous batching CAN be than lockstep, by a
// discrete-event simulation of both schedulers (rollout-lockstep.ts, rollout-continuous.ts) under the
// latency relay's profile (latency-relay.ts replyDelayMs: its exact delays, reply 0 being the reset),
// Monte Carlo over relay seeds. It states the bound the measured ratio is held to; nothing here runs a
// model.
//
// The model of one generation batch:
// - an episode resets when it is admitted to a slot (runRollouts: at most `slots` sessions open), and
//   its first turn waits for that reset reply; with `resets: false` the first `slots` episodes' resets
//   were prefetched (rollout-source.ts) and are in at 0, the later ones still reset on admission;
// - an episode of T turns decodes T turns of `tokensPerTurn` tokens and sends T − 1 env steps (one
//   relay reply each: the turn after the last reply answers without a tool call);
// - a decode step costs `fixedMs + perSequenceMs × sequences in it`;
// - lockstep: waves of `slots` episodes in rollout order; a wave waits for its slowest reset, then per
//   turn its live episodes decode in one batch and it waits for the slowest reply; the next wave starts
//   when the last episode ends;
// - continuous: at most `slots` episodes hold a slot; a decode step takes every episode that is ready;
//   a turn's end sends its env step at once; a freed slot goes to the next episode in rollout order,
//   whose reset starts then.
//   (The 2 ms batching window is left out.)
//
// Options (strings, from `webgrpo bench rollouts-bound --KEY VALUE`):
//   episodes         comma list of episodes per generation (default 16)
//   slots            decode slots, the memory plan's sequence count (default: the episodes)
//   turns            one number (every episode that long), or a comma list of measured per-episode
//                    turn counts (`bench rollouts` turns_per_episode): with exactly one per episode,
//                    episode i plays turns[i] in every run; otherwise each episode draws one per run
//                    (default 10: a full catch game — 9 moves, then the answer to `caught`/`missed`)
//   tokens-per-turn  decode steps per turn (default 24)
//   decode-fixed-ms, decode-per-seq-ms   decode step cost (default 0, 0: free decode)
//   resets           on|off (default on: the resets are part of the batch, as in `bench rollouts`; off:
//                    the first slots' resets were prefetched)
//   runs             Monte Carlo runs, relay seeds 1..runs (default 1000)
//   target           a ratio to report the share of runs reaching (default 3, the target)

import { hashInts } from '../../src/rl/seeds.ts';
import { DEFAULT_LATENCY, replyDelayMs, type LatencyProfile } from './latency-relay.ts';

export interface DecodeCost {
  fixedMs: number;
  perSequenceMs: number;
}

export interface BatchShape {
  /** Model turns of each episode (≥ 1); episode i sends turns[i] − 1 env steps. */
  turns: number[];
  slots: number;
  tokensPerTurn: number;
  decode: DecodeCost;
  /** Delay of reply k of episode i (k = 0: the reset). */
  delay: (episode: number, k: number) => number;
  /** Whether the first `slots` episodes wait for their reset (false: prefetched); later ones always do. */
  resets: boolean;
}

function check(b: BatchShape): void {
  if (!(Number.isInteger(b.slots) && b.slots >= 1)) throw new Error(`slots must be an integer ≥ 1, got ${b.slots}`);
  if (!(Number.isInteger(b.tokensPerTurn) && b.tokensPerTurn >= 1)) throw new Error(`tokensPerTurn must be an integer ≥ 1, got ${b.tokensPerTurn}`);
  for (const t of b.turns) if (!(Number.isInteger(t) && t >= 1)) throw new Error(`every episode needs an integer ≥ 1 of turns, got ${t}`);
  if (!(b.decode.fixedMs >= 0 && b.decode.perSequenceMs >= 0)) throw new Error('decode costs must be ≥ 0');
}

/** How long episode i waits for its reset once admitted: 0 for a prefetched one. */
function resetMs(b: BatchShape, i: number): number {
  return b.resets || i >= b.slots ? b.delay(i, 0) : 0;
}

const stepMs = (b: BatchShape, sequences: number) => b.decode.fixedMs + b.decode.perSequenceMs * sequences;

/** Wall-clock ms of the batch under lockstep waves. */
export function lockstepMs(b: BatchShape): number {
  check(b);
  let t = 0;
  for (let from = 0; from < b.turns.length; from += b.slots) {
    t += Math.max(0, ...b.turns.slice(from, from + b.slots).map((_, j) => resetMs(b, from + j)));
    let live = b.turns.slice(from, from + b.slots).map((turns, j) => ({ i: from + j, left: turns, k: 1 }));
    while (live.length > 0) {
      t += b.tokensPerTurn * stepMs(b, live.length);
      for (const e of live) e.left--;
      live = live.filter((e) => e.left > 0);
      if (live.length > 0) t += Math.max(...live.map((e) => b.delay(e.i, e.k++)));
    }
  }
  return t;
}

/** Wall-clock ms of the batch under continuous batching with `slots` refilled slots. */
export function continuousMs(b: BatchShape): number {
  check(b);
  let t = 0;
  type Active = { i: number; left: number; k: number; tokens: number; replyAt: number };
  const waiting = b.turns.map((turns, i) => ({ i, left: turns, k: 1, tokens: b.tokensPerTurn, replyAt: -1 }));
  const active: Active[] = [];
  const admit = () => {
    while (active.length < b.slots && waiting.length > 0) {
      const e = waiting.shift()!;
      const reset = resetMs(b, e.i);
      e.replyAt = reset > 0 ? t + reset : -1;
      active.push(e);
    }
  };
  admit();
  while (active.length > 0) {
    // Replies that are in join the next step; with nothing to decode, time jumps to the next reply.
    for (const e of active) if (e.replyAt >= 0 && e.replyAt <= t) e.replyAt = -1;
    const decoding = active.filter((e) => e.replyAt < 0);
    if (decoding.length === 0) {
      t = Math.min(...active.map((e) => e.replyAt));
      continue;
    }
    t += stepMs(b, decoding.length);
    for (const e of decoding) {
      if (--e.tokens > 0) continue;
      e.tokens = b.tokensPerTurn;
      if (--e.left > 0) e.replyAt = t + b.delay(e.i, e.k++);
      else active.splice(active.indexOf(e), 1);
    }
    admit();
  }
  return t;
}

/** The relay's delays for one run: profile seed = run seed, each episode its own session key. */
export function relayDelays(profile: LatencyProfile, runSeed: number): (episode: number, k: number) => number {
  const p = { ...profile, seed: runSeed };
  return (episode, k) => replyDelayMs(p, hashInts(runSeed, 0x5e55, episode), k);
}

export interface BoundInput {
  episodes: number;
  slots: number;
  /** One value: every episode that long; one per episode: episode i plays turns[i]; otherwise each episode draws one per run. */
  turns: number[];
  tokensPerTurn: number;
  decode: DecodeCost;
  resets: boolean;
  latency: LatencyProfile;
  runs: number;
  /** Reports the share of runs whose ratio is at least this. */
  target?: number;
}

function percentile(sorted: number[], q: number): number {
  const x = (sorted.length - 1) * q;
  const lo = Math.floor(x);
  const hi = Math.ceil(x);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (x - lo);
}

const round = (x: number, digits = 3) => Number(x.toFixed(digits));

/** Monte Carlo over relay seeds 1..runs: the ratio lockstep time / continuous time (= episodes/s ratio). */
export function simulateBound(input: BoundInput) {
  if (!(Number.isInteger(input.runs) && input.runs >= 1)) throw new Error(`runs must be an integer ≥ 1, got ${input.runs}`);
  if (!(Number.isInteger(input.episodes) && input.episodes >= 1)) throw new Error(`episodes must be an integer ≥ 1, got ${input.episodes}`);
  if (input.turns.length === 0) throw new Error('turns: give at least one turn count');
  const ratios: number[] = [];
  let lock = 0;
  let cont = 0;
  for (let seed = 1; seed <= input.runs; seed++) {
    const turns = input.turns.length === input.episodes
      ? input.turns
      : Array.from({ length: input.episodes }, (_, i) => input.turns[hashInts(seed, 0x7e7e, i) % input.turns.length]!);
    const shape: BatchShape = { turns, slots: input.slots, tokensPerTurn: input.tokensPerTurn, decode: input.decode, delay: relayDelays(input.latency, seed), resets: input.resets };
    const l = lockstepMs(shape);
    const c = continuousMs(shape);
    lock += l;
    cont += c;
    ratios.push(l / c);
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  return {
    episodes: input.episodes,
    slots: input.slots,
    mean_turns: round(input.turns.reduce((a, b) => a + b, 0) / input.turns.length, 2),
    runs: input.runs,
    ratio_mean: round(ratios.reduce((a, b) => a + b, 0) / ratios.length),
    ratio_p5: round(percentile(sorted, 0.05)),
    ratio_p50: round(percentile(sorted, 0.5)),
    ratio_p95: round(percentile(sorted, 0.95)),
    ...(input.target === undefined ? {} : { target: input.target, share_reaching_target: round(ratios.filter((r) => r >= input.target!).length / ratios.length) }),
    lockstep_s_mean: round(lock / input.runs / 1000),
    continuous_s_mean: round(cont / input.runs / 1000),
  };
}

function numbers(opts: Record<string, string>, key: string, dflt: number[]): number[] {
  if (opts[key] === undefined) return dflt;
  const v = opts[key]!.split(',').map((s) => Number(s.trim()));
  if (v.length === 0 || v.some((x) => !Number.isFinite(x) || x < 0)) throw new Error(`bench rollouts-bound: --${key} must be a non-negative number or a comma list of them, got '${opts[key]}'`);
  return v;
}

function one(opts: Record<string, string>, key: string, dflt: number): number {
  const v = numbers(opts, key, [dflt]);
  if (v.length !== 1) throw new Error(`bench rollouts-bound: --${key} takes one number, got '${opts[key]}'`);
  return v[0]!;
}

export async function benchRolloutsBound(opts: Record<string, string> = {}) {
  const episodesList = numbers(opts, 'episodes', [16]);
  const resets = (opts.resets ?? 'on') === 'on';
  if (!['on', 'off'].includes(opts.resets ?? 'on')) throw new Error(`bench rollouts-bound: --resets must be on or off, got '${opts.resets}'`);
  const base = {
    turns: numbers(opts, 'turns', [10]),
    tokensPerTurn: one(opts, 'tokens-per-turn', 24),
    decode: { fixedMs: one(opts, 'decode-fixed-ms', 0), perSequenceMs: one(opts, 'decode-per-seq-ms', 0) },
    resets,
    latency: DEFAULT_LATENCY,
    runs: one(opts, 'runs', 1000),
    target: one(opts, 'target', 3),
  };
  return {
    latency: { ...DEFAULT_LATENCY, seed: '1..runs' },
    decode: base.decode,
    tokens_per_turn: base.tokensPerTurn,
    resets: resets ? 'on admission (as in bench rollouts)' : "first slots' prefetched",
    results: episodesList.map((episodes) => simulateBound({ ...base, episodes, slots: opts.slots === undefined ? episodes : one(opts, 'slots', episodes) })),
  };
}
