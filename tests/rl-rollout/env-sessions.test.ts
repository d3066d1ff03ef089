// Env sessions held by a generation (rollout.ts envSlots): an episode's reset starts when it is admitted
// to a slot and its session closes when it ends, so a batch never holds more sessions than episodes
// playing — the decode slots, or `max_concurrent_envs` when a server caps its sessions below them. The
// fake server below counts sessions from reset (connect) to close and refuses one past its cap, as an
// OpenEnv server does (CAPACITY_REACHED).

import { describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/rl/config.ts';
import { EnvFailure, type DatasetRow, type Tool, type ToolEnv } from '../../src/rl/rollout/env.ts';
import { prepareResets, runRollouts, type Rollout, type RolloutConfig, type RolloutSchedulerName } from '../../src/rl/rollout/rollout.ts';
import { envRolloutSource } from '../../src/rl/rollout/rollout-source.ts';
import { hashInts } from '../../src/rl/seeds.ts';
import { callText } from './fake-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';
import { SamplingFakeEngine, type CandidatePolicy } from './sampling-engine.ts';

const tok = qwen3Tokenizer();
const EOS = '<|im_end|>';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sessions of one fake server: open now, the most ever open, refusals. */
class SessionServer {
  open = 0;
  peak = 0;
  refused = 0;
  resets = 0;
  constructor(readonly cap: number) {}
}

/**
 * One session per episode on `server`: reset connects (refused past the cap), waits a seeded latency and
 * only then lists its tools (an MCP env knows them after reset); close disconnects, even mid-reset.
 * Rows with `failReset` are refused by the env; rows with `hangReset` never answer until closed.
 */
class SessionEnv implements ToolEnv {
  private state: 'none' | 'opening' | 'open' = 'none';
  private slot = 0;
  private calls = 0;
  private disconnect: () => void = () => undefined;
  private listed: Tool[] = [];
  constructor(private readonly server: SessionServer) {}

  get tools(): readonly Tool[] {
    return this.listed;
  }

  async reset(row: DatasetRow): Promise<string | null> {
    await this.close();
    this.server.resets++;
    if (this.server.open >= this.server.cap) {
      this.server.refused++;
      throw new EnvFailure(`Server at capacity: ${this.server.open}/${this.server.cap} sessions active.`);
    }
    this.server.open++;
    this.server.peak = Math.max(this.server.peak, this.server.open);
    this.state = 'opening';
    this.slot = row.slot as number;
    this.calls = 0;
    const closed = new Promise<void>((r) => (this.disconnect = r));
    await Promise.race([row.hangReset ? closed : sleep(this.latency()), closed]);
    if (this.state !== 'opening') throw new EnvFailure('closed during the reset');
    if (row.failReset) {
      await this.close();
      throw new EnvFailure('the env refused this row');
    }
    this.state = 'open';
    this.listed = [
      { declaration: { name: 'echo', description: 'Echo.', parameters: [{ name: 'message', type: 'string', description: 'm' }] }, call: (a) => this.echo(a.message) },
    ];
    return `\nsession of row ${this.slot}`;
  }

  private async echo(message: unknown): Promise<unknown> {
    if (this.state !== 'open') throw new EnvFailure('no open session');
    await sleep(this.latency());
    return message;
  }

  private latency(): number {
    return hashInts(this.slot, this.calls++) % 6;
  }

  async close(): Promise<void> {
    if (this.state === 'none') return;
    this.state = 'none';
    this.server.open--;
    this.disconnect();
  }
}

function rows(n: number, extra: (i: number) => Record<string, unknown> = () => ({})): DatasetRow[] {
  return Array.from({ length: n }, (_, i) => ({ prompt: [{ role: 'user' as const, content: `task ${i % 2}` }], slot: i, ...extra(i) }));
}

/** One or two echo turns, then an answer: episodes of different lengths. */
const policy: CandidatePolicy = (context) => {
  if (!context.includes('"name": "echo"')) return ['No tools.' + EOS]; // the prompt was rendered before the reset
  const turn = context.split('<tool_response>').length - 1;
  if (turn >= 2) return ['Done.' + EOS];
  return [callText('echo', { message: 'a' }) + EOS, callText('echo', { message: 'bb' }) + EOS, 'Done early.' + EOS];
};

function config(overrides: Partial<RolloutConfig> = {}): RolloutConfig {
  return { max_completion_length: 200, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep', ...overrides };
}

async function play(scheduler: RolloutSchedulerName, o: { rows: DatasetRow[]; serverCap: number; maxBatchSize: number; config?: Partial<RolloutConfig> }) {
  const server = new SessionServer(o.serverCap);
  const engine = new SamplingFakeEngine(tok, policy, { maxBatch: o.maxBatchSize });
  const rollouts = await runRollouts({
    engine, tokenizer: tok, rows: o.rows, envFactory: () => new SessionEnv(server), seed: 3, maxBatchSize: o.maxBatchSize,
    config: config({ rollout_scheduler: scheduler, ...o.config }),
  });
  expect(server.open).toBe(0);
  expect(engine.liveSequences).toBe(0);
  return { rollouts, server };
}

const tokens = (r: Rollout) => ({ prompt: r.prompt, promptIds: r.promptIds, completionIds: r.completionIds, logprobs: r.logprobs, toolMask: r.toolMask, error: r.error });

describe('env sessions: at most one per episode playing', () => {
  for (const scheduler of ['lockstep', 'continuous'] as const) {
    it(`${scheduler}: 16 episodes, 16 decode slots, max_concurrent_envs 4 against a server capped at 4: all scored, peak 4, same tokens`, async () => {
      const batch = rows(16);
      const free = await play(scheduler, { rows: batch, serverCap: Infinity, maxBatchSize: 16 });
      const capped = await play(scheduler, { rows: batch, serverCap: 4, maxBatchSize: 16, config: { max_concurrent_envs: 4 } });
      expect(capped.rollouts.map((r) => r.error)).toEqual(new Array(16).fill(undefined));
      expect(capped.server.peak).toBe(4);
      expect(capped.server.refused).toBe(0);
      expect(capped.rollouts.map(tokens)).toEqual(free.rollouts.map(tokens));
      // The prompts carry the observation and the tools the env listed after its reset; episodes differ.
      expect(capped.rollouts[5]!.prompt.at(-1)!.content).toBe('task 1\nsession of row 5');
      expect(capped.rollouts.every((r) => r.toolCalls > 0)).toBe(false);
      expect(capped.rollouts.some((r) => r.toolCalls === 2)).toBe(true);
      // Uncapped, all 16 sessions open at once: that server would refuse 12 of them.
      expect(free.server.peak).toBe(16);
      const refused = await play(scheduler, { rows: batch, serverCap: 4, maxBatchSize: 16 });
      expect(refused.server.refused).toBe(12);
      expect(refused.rollouts.filter((r) => r.error?.startsWith('reset failed: Server at capacity'))).toHaveLength(12);
    });

    it(`${scheduler}: 4 decode slots and no max_concurrent_envs: peak 4`, async () => {
      const { rollouts, server } = await play(scheduler, { rows: rows(16), serverCap: 4, maxBatchSize: 4 });
      expect(server.peak).toBe(4);
      expect(rollouts.every((r) => r.error === undefined)).toBe(true);
    });

    it(`${scheduler}: a reset that fails and one that times out each free their slot for the next episode`, async () => {
      // 2 slots, 6 episodes: row 1's reset is refused, row 2's never answers (env_call_timeout_s 0.2).
      const batch = rows(6, (i) => (i === 1 ? { failReset: true } : i === 2 ? { hangReset: true } : {}));
      const { rollouts, server } = await play(scheduler, { rows: batch, serverCap: 2, maxBatchSize: 6, config: { max_concurrent_envs: 2, env_call_timeout_s: 0.2 } });
      expect(rollouts.map((r) => r.error)).toEqual([
        undefined, 'reset failed: the env refused this row', 'reset timed out after 0.2 s', undefined, undefined, undefined,
      ]);
      expect(server.peak).toBe(2);
      expect(server.refused).toBe(0);
    });
  }

  it('max_concurrent_envs must be an integer ≥ 1 (checked once, by the config)', () => {
    for (const bad of [0, 2.5, -1]) expect(() => configFromObject({ max_concurrent_envs: bad })).toThrow(/max_concurrent_envs: (must be ≥ 1|expected an integer)/);
  });

  it('prefetch starts the first max_concurrent_envs resets only; an unplayed prefetch is closed', async () => {
    const server = new SessionServer(4);
    const envFactory = () => new SessionEnv(server);
    const cfg = config({ rollout_scheduler: 'continuous', max_concurrent_envs: 4 });
    const resets = prepareResets(envFactory, rows(16), cfg, 16);
    await sleep(0);
    expect(server.resets).toBe(4);
    expect(server.open).toBe(4);
    await resets.discard();
    expect(server.open).toBe(0);

    const engine = new SamplingFakeEngine(tok, policy, { maxBatch: 16 });
    const source = envRolloutSource({ engine, tokenizer: tok, envFactory, config: cfg, maxBatchSize: 16 });
    const g1 = { rows: rows(16), seed: 1, step: 0 };
    source.prefetch(g1);
    expect(server.open).toBe(0); // the resets start in a microtask
    await sleep(0);
    expect(server.resets).toBe(4 + 4);
    const played = await source.rollouts(g1);
    expect(played.every((r) => r.error === undefined)).toBe(true);
    expect(server.resets).toBe(4 + 16);
    expect(server.peak).toBe(4);
    // The run stops with the next generation prefetched: its 4 sessions are closed.
    source.prefetch({ rows: rows(16), seed: 2, step: 1 });
    await sleep(20);
    expect(server.open).toBe(4);
    await source.close();
    expect(server.open).toBe(0);
    expect(server.refused).toBe(0);
  });
});
