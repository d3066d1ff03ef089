// The two rollout schedulers (rollout-lockstep.ts, rollout-continuous.ts) on a sampling stand-in engine
// that, like the GPU sampler, draws each token from (seed, stream, position, own history): on a
// deterministic env they must give token-identical rollouts, whatever the env latencies; the long tail
// (episode / env-call timeouts) never stalls the batch; stubborn repeats are flagged (hand numbers).

import { describe, expect, it } from 'vitest';
import type { DatasetRow, Tool, ToolEnv } from '../../src/rl/rollout/env.ts';
import { emptyRolloutStats } from '../../src/rl/rollout/episode.ts';
import { runRollouts, type Rollout, type RolloutConfig, type RolloutProgress, type RolloutSchedulerName } from '../../src/rl/rollout/rollout.ts';
import { hashInts } from '../../src/rl/seeds.ts';
import { callText } from './fake-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';
import { SamplingFakeEngine, type CandidatePolicy } from './sampling-engine.ts';

const tok = qwen3Tokenizer();
const EOS = '<|im_end|>';

function config(overrides: Partial<RolloutConfig> = {}): RolloutConfig {
  return { max_completion_length: 400, max_tool_calling_iterations: null, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep', ...overrides };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Counts env calls in flight across all instances (to see env work overlap decoding). */
const inFlight = { now: 0 };

/**
 * A deterministic env with seeded reply latency: `echo(message)` answers the message, `fail(why?)`
 * raises, `hang()` never answers. Rows with `hangReset` never finish their reset.
 */
class LatencyEnv implements ToolEnv {
  private calls = 0;
  private slot = 0;
  readonly tools: Tool[] = [
    { declaration: { name: 'echo', description: 'Echo.', parameters: [{ name: 'message', type: 'string', description: 'm' }] }, call: (a) => this.reply(() => a.message) },
    {
      declaration: { name: 'fail', description: 'Fail.', parameters: [{ name: 'why', type: 'string', description: 'w', optional: true }] },
      call: () => this.reply(() => {
        throw new Error('Episode is done.');
      }),
    },
    { declaration: { name: 'hang', description: 'Hang.', parameters: [] }, call: () => new Promise(() => undefined) },
  ];
  constructor(private readonly maxDelayMs: number) {}
  async reset(row: DatasetRow): Promise<string | null> {
    this.slot = row.slot as number;
    this.calls = 0;
    if (row.hangReset) await new Promise(() => undefined);
    return null;
  }
  private async reply(answer: () => unknown): Promise<unknown> {
    inFlight.now++;
    try {
      await sleep(hashInts(this.slot, this.calls++) % (this.maxDelayMs + 1));
      return answer();
    } finally {
      inFlight.now--;
    }
  }
}

function rows(n: number, extra: (i: number) => Record<string, unknown> = () => ({})): DatasetRow[] {
  return Array.from({ length: n }, (_, i) => ({ prompt: [{ role: 'user' as const, content: `task ${i % 3}` }], slot: i, ...extra(i) }));
}

/** Tool-response count in the context = the turn; a few candidate turns, then a final answer. */
const branching: CandidatePolicy = (context) => {
  const turn = context.split('<tool_response>').length - 1;
  if (turn >= 3) return ['Finished.' + EOS];
  return [
    callText('echo', { message: 'a' }) + EOS,
    callText('echo', { message: 'a much longer message this time' }) + EOS,
    callText('fail', {}) + EOS,
    'Done early.' + EOS,
    callText('echo', { message: 'x' }) + '\n' + callText('fail', { why: 'two calls' }) + EOS,
  ];
};

function comparable(r: Rollout) {
  return {
    completionIds: r.completionIds, toolMask: r.toolMask, logprobs: r.logprobs, stubbornMask: r.stubbornMask, completion: r.completion,
    toolCalls: r.toolCalls, toolFailures: r.toolFailures, truncated: r.truncated, error: r.error,
  };
}

async function play(
  scheduler: RolloutSchedulerName,
  opts: { policy: CandidatePolicy; rows: DatasetRow[]; maxDelayMs: number; config?: Partial<RolloutConfig>; maxBatchSize?: number; onProgress?: (p: RolloutProgress) => void },
) {
  // The engine enforces the cap it was planned for: a batch or a live sequence past it throws.
  const engine = new SamplingFakeEngine(tok, opts.policy, { stepDelayMs: 1, maxBatch: opts.maxBatchSize });
  const overlap = { steps: 0 };
  engine.onDecodeStep = () => {
    if (inFlight.now > 0) overlap.steps++;
  };
  const stats = emptyRolloutStats();
  const rollouts = await runRollouts({
    engine, tokenizer: tok, rows: opts.rows, envFactory: () => new LatencyEnv(opts.maxDelayMs), seed: 77,
    config: config({ rollout_scheduler: scheduler, ...opts.config }), maxBatchSize: opts.maxBatchSize, stats, onProgress: opts.onProgress,
  });
  expect(engine.liveSequences).toBe(0);
  return { rollouts, engine, stats, overlap };
}

describe('rollout schedulers: lockstep and continuous', () => {
  it('give token-identical rollouts on a deterministic env, whatever the env latencies', async () => {
    const batch = rows(8);
    const lock = await play('lockstep', { policy: branching, rows: batch, maxDelayMs: 15 });
    const cont = await play('continuous', { policy: branching, rows: batch, maxDelayMs: 15 });
    const capped = await play('continuous', { policy: branching, rows: batch, maxDelayMs: 15, maxBatchSize: 3 });
    const waves = await play('lockstep', { policy: branching, rows: batch, maxDelayMs: 15, maxBatchSize: 3 });
    expect(cont.rollouts.map(comparable)).toEqual(lock.rollouts.map(comparable));
    expect(capped.rollouts.map(comparable)).toEqual(lock.rollouts.map(comparable));
    expect(waves.rollouts.map(comparable)).toEqual(lock.rollouts.map(comparable));
    // The batch is really mixed: episodes of 1 to 4 turns, with successful and failing calls.
    const turns = lock.rollouts.map((r) => r.completion.filter((m) => m.role === 'assistant').length);
    expect(new Set(turns).size).toBeGreaterThan(2);
    expect(lock.rollouts.some((r) => r.toolFailures > 0) && lock.rollouts.some((r) => r.toolCalls > r.toolFailures)).toBe(true);
    // Continuous: a returning episode joins steps where others are mid-turn, and decoding overlaps env calls.
    expect(cont.engine.steps.some((s) => s.some((x) => x.joined) && s.some((x) => !x.joined))).toBe(true);
    expect(cont.overlap.steps).toBeGreaterThan(0);
    expect(lock.overlap.steps).toBe(0);
    expect(Math.max(...capped.engine.steps.map((s) => s.length))).toBe(3);
    expect(Math.max(...capped.stats.decodeBatchSizes)).toBe(3);
    // Both count the same env steps; every decode step is in the histogram.
    expect(cont.stats.envSteps).toBe(lock.stats.envSteps);
    expect(cont.stats.decodeBatchSizes).toHaveLength(cont.engine.steps.length);
    expect(lock.stats.decodeBatchSizes).toEqual(lock.engine.steps.map((s) => s.length));
  });

  it('a decode-slot cap below the episode count: no engine batch and no live sequence past it, same rollouts', async () => {
    // 7 episodes, cap 3: lockstep plays waves {0,1,2} {3,4,5} {6}; continuous keeps 3 slots busy.
    const batch = rows(7);
    const free = await play('lockstep', { policy: branching, rows: batch, maxDelayMs: 4 });
    const lock = await play('lockstep', { policy: branching, rows: batch, maxDelayMs: 4, maxBatchSize: 3 });
    const cont = await play('continuous', { policy: branching, rows: batch, maxDelayMs: 4, maxBatchSize: 3 });
    expect(lock.rollouts.map(comparable)).toEqual(free.rollouts.map(comparable));
    expect(cont.rollouts.map(comparable)).toEqual(free.rollouts.map(comparable));
    // Without the cap lockstep's first step is all 7; with it, steps hold sequences of one wave only.
    expect(Math.max(...free.engine.steps.map((s) => s.length))).toBe(7);
    const waveOf = (seq: number) => Math.floor((seq - 1) / 3); // sequences are created in episode order
    for (const step of lock.engine.steps) {
      expect(step.length).toBeLessThanOrEqual(3);
      expect(new Set(step.map((x) => waveOf(x.seq))).size).toBe(1);
    }
    expect(new Set(lock.engine.steps.map((s) => waveOf(s[0]!.seq)))).toEqual(new Set([0, 1, 2]));
    for (const step of cont.engine.steps) expect(step.length).toBeLessThanOrEqual(3);
    // Continuous refills a freed slot while other episodes are mid-episode: some step mixes an
    // episode of the first three with one of the later four.
    expect(cont.engine.steps.some((s) => s.some((x) => x.seq <= 3) && s.some((x) => x.seq > 3))).toBe(true);
    for (const p of [lock, cont]) expect(p.stats.envSteps).toBe(free.stats.envSteps);
  });

  for (const scheduler of ['lockstep', 'continuous'] as const) {
    it(`${scheduler}: episode_timeout_s counts from the episode's first turn, not from the wait for a slot`, async () => {
      // 3 episodes, 1 slot, one 120 ms env call each: the batch takes over 360 ms, each episode ~120 ms.
      class SlowEcho implements ToolEnv {
        readonly tools: Tool[] = [
          { declaration: { name: 'echo', description: 'Echo.', parameters: [{ name: 'message', type: 'string', description: 'm' }] }, call: async (a) => (await sleep(120), a.message) },
        ];
        async reset(): Promise<string | null> {
          return null;
        }
      }
      const policy: CandidatePolicy = (context) => (context.includes('<tool_response>') ? ['Done.' + EOS] : [callText('echo', { message: 'hi' }) + EOS]);
      const engine = new SamplingFakeEngine(tok, policy, { maxBatch: 1 });
      const rollouts = await runRollouts({
        engine, tokenizer: tok, rows: rows(3), envFactory: () => new SlowEcho(), seed: 5, maxBatchSize: 1,
        config: config({ rollout_scheduler: scheduler, episode_timeout_s: 0.3 }),
      });
      for (const r of rollouts) {
        expect(r.error).toBeUndefined();
        expect(r.completion.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
      }
    });
  }

  for (const scheduler of ['lockstep', 'continuous'] as const) {
    it(`${scheduler}: live progress counts decode steps, tokens, env calls and episodes as they happen`, async () => {
      const seen: RolloutProgress[] = [];
      const { rollouts, engine, stats } = await play(scheduler, { policy: branching, rows: rows(6), maxDelayMs: 5, maxBatchSize: 4, onProgress: (p) => seen.push(p) });
      const sampled = rollouts.reduce((n, r) => n + r.toolMask.reduce((a, b) => a + b, 0), 0);
      const last = seen.at(-1)!;
      expect(last).toMatchObject({ episodes: 6, episodesDone: 6, tokens: sampled, envCallsInFlight: 0 });
      // A reset and a close per episode, and every tool turn.
      expect(last.envCallsDone).toBe(6 + 6 + stats.envSteps);
      // Every decode step is reported with the sequences it held (never "0 decoding" while tokens come).
      const steps = seen.filter((p, i) => p.tokens > (seen[i - 1]?.tokens ?? 0));
      expect(steps).toHaveLength(engine.steps.length);
      steps.forEach((p, i) => expect(p.decoding, `step ${i}`).toBe(engine.steps[i]!.length));
      // The counts move: episodes finish while others still decode, and env calls run between steps.
      expect(seen.some((p) => p.episodesDone > 0 && p.episodesDone < 6 && p.decoding > 0)).toBe(true);
      expect(seen.some((p) => p.envCallsInFlight > 0)).toBe(true);
    });
  }

  it('a cap below 1 is refused', async () => {
    for (const scheduler of ['lockstep', 'continuous'] as const) {
      await expect(play(scheduler, { policy: branching, rows: rows(2), maxDelayMs: 1, maxBatchSize: 0 })).rejects.toThrow('maxBatchSize must be ≥ 1, got 0');
    }
  });

  it('iteration cap and budget rules are the same under both schedulers', async () => {
    const batch = rows(6);
    for (const overrides of [{ max_tool_calling_iterations: 1 }, { max_completion_length: 70 }]) {
      const lock = await play('lockstep', { policy: branching, rows: batch, maxDelayMs: 5, config: overrides });
      const cont = await play('continuous', { policy: branching, rows: batch, maxDelayMs: 5, config: overrides });
      expect(cont.rollouts.map(comparable)).toEqual(lock.rollouts.map(comparable));
      for (const r of lock.rollouts) expect(r.completionIds.length).toBeLessThanOrEqual(overrides.max_completion_length ?? 400);
    }
  });

  for (const scheduler of ['lockstep', 'continuous'] as const) {
    it(`${scheduler}: an episode past episode_timeout_s is closed as unscorable and does not stall the others`, async () => {
      // Episode 1 calls hang() on its first turn; the others play normally.
      const policy: CandidatePolicy = (context) => {
        if (context.includes('task 1') && !context.includes('<tool_response>')) return [callText('hang', {}) + EOS];
        return context.includes('<tool_response>') ? ['Done.' + EOS] : [callText('echo', { message: 'hi' }) + EOS];
      };
      const batch = rows(3);
      const t0 = performance.now();
      const { rollouts } = await play(scheduler, { policy, rows: batch, maxDelayMs: 5, config: { episode_timeout_s: 0.3 } });
      expect(performance.now() - t0).toBeLessThan(5000);
      expect(rollouts[1]!.timedOut).toBe(true);
      expect(rollouts[1]!.error).toBe('episode timed out: episode_timeout_s = 0.3');
      for (const i of [0, 2]) {
        expect(rollouts[i]!.error).toBeUndefined();
        expect(rollouts[i]!.completion.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
      }
    });

    it(`${scheduler}: env_call_timeout_s bounds one env call, and a reset that never answers`, async () => {
      const policy: CandidatePolicy = (context) =>
        context.includes('<tool_response>') ? ['Done.' + EOS] : [context.includes('task 0') ? callText('hang', {}) + EOS : callText('echo', { message: 'hi' }) + EOS];
      const batch = rows(3, (i) => (i === 2 ? { hangReset: true } : {}));
      const { rollouts } = await play(scheduler, { policy, rows: batch, maxDelayMs: 5, config: { env_call_timeout_s: 0.2 } });
      expect(rollouts[0]!.error).toBe('episode timed out: an env call took over env_call_timeout_s = 0.2');
      expect(rollouts[1]!.error).toBeUndefined();
      expect(rollouts[2]!.error).toBe('reset timed out after 0.2 s');
      expect(rollouts.map((r) => r.timedOut ?? false)).toEqual([true, false, true]);
    });
  }

  it('stubborn repeats: a failing call repeated more than stubborn_threshold times flags its turns (hand numbers)', async () => {
    // Turns: fail(a), fail(a), fail(b), fail(a), fail(a), then an answer. Threshold 2: fail(a) has failed
    // 0, 1, 2, 3 times before its 1st, 2nd, 4th, 5th call, so only the 5th call (3 earlier failures) is
    // stubborn — with threshold 1 the 4th (2 earlier) and 5th are.
    const script = [{ why: 'a' }, { why: 'a' }, { why: 'b' }, { why: 'a' }, { why: 'a' }];
    const policy: CandidatePolicy = (context) => {
      const turn = context.split('<tool_response>').length - 1;
      return [turn < script.length ? callText('fail', script[turn]!) + EOS : 'I give up.' + EOS];
    };
    const turnRanges = (r: Rollout) => {
      const ranges: [number, number][] = [];
      r.toolMask.forEach((m, t) => {
        if (m === 1 && (t === 0 || r.toolMask[t - 1] === 0)) ranges.push([t, t]);
        if (m === 1) ranges[ranges.length - 1]![1] = t + 1;
      });
      return ranges;
    };
    for (const [threshold, stubbornTurns] of [[2, [4]], [1, [3, 4]], [0, [1, 3, 4]]] as const) {
      for (const scheduler of ['lockstep', 'continuous'] as const) {
        const { rollouts: [r] } = await play(scheduler, { policy, rows: rows(1), maxDelayMs: 2, config: { stubborn_threshold: threshold } });
        expect(r!.toolCalls).toBe(5);
        expect(r!.toolFailures).toBe(5);
        expect(r!.stubbornCalls).toBe(stubbornTurns.length);
        const expected = r!.toolMask.map(() => 0);
        turnRanges(r!).forEach(([from, to], k) => {
          if ((stubbornTurns as readonly number[]).includes(k)) for (let t = from; t < to; t++) expected[t] = 1;
        });
        expect(r!.stubbornMask).toEqual(expected);
      }
    }
  });
});
