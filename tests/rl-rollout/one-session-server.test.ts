// A generation against a server that serves one session at a time (OpenEnv's create_app default): the
// schedulers learn the limit from the server's refusal and play the episodes one after another. Before,
// with the continuous scheduler a reset's wait in the session queue counted against env_call_timeout_s,
// so on long episodes the late rollouts timed out as unscorable; with lockstep a wave waited for resets
// queued behind its own episodes until the timeout. Catch (examples/catch.mjs, the built-in task) on the
// real env-server capped at one session, behind a relay that holds every reply back 40 ms: a catch
// episode (reset + 9 steps) takes about 0.4 s, so eight take over 3 s, past env_call_timeout_s = 1.
// The rollouts must equal those of a many-session server: same seeds (ball columns) and same moves per
// rollout index (each draws from its own stream), same rewards.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { startLatencyRelay, type LatencyRelay } from '../../bench/rollouts/latency-relay.ts';
import { builtinClassTask } from '../../src/rl/tasks/env-class-builtin.ts';
import { seededEpisodes } from '../../src/rl/tasks/solvers.ts';
import { prepareResets, runRollouts, type Rollout, type RolloutSchedulerName } from '../../src/rl/rollout/rollout.ts';
import type { ChatTemplateTask } from '../../src/rl/tasks/task.ts';
import { callText } from './fake-engine.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';
import { SamplingFakeEngine } from './sampling-engine.ts';

const tok = qwen3Tokenizer();
const G = 8;
const DELAY = { minMs: 40, maxMs: 40, slowEvery: 0, slowMs: 0, seed: 1 };
let many: { server: EnvServer; relay: LatencyRelay };
let task: ChatTemplateTask;

async function start(maxConcurrentEnvs: number) {
  const server = await createEnvServer({ port: 0, maxConcurrentEnvs });
  return { server, relay: await startLatencyRelay(`${server.url}/envs/catch`, DELAY) };
}

beforeAll(async () => {
  many = await start(G);
  task = (await builtinClassTask('catch'))!;
});
afterAll(async () => {
  await many?.relay.close();
  await many?.server.close();
});

/** Moves drawn per rollout stream among stay/left/right, so rollouts differ and some miss the ball. */
function engine(): SamplingFakeEngine {
  return new SamplingFakeEngine(tok, (context) => {
    const response = context.lastIndexOf('<tool_response>\n');
    if (response >= 0 && context.startsWith('Paddle:', response + '<tool_response>\n'.length)) return ['Done.<|im_end|>'];
    return [callText('stay', {}), callText('move', { direction: 'left' }), callText('move', { direction: 'right' })].map((c) => c + '<|im_end|>');
  });
}

/** One generation of G catch rollouts at `url` (a run of its own: a fresh env factory, seeded as the trainer seeds it). */
async function generation(url: string, scheduler: RolloutSchedulerName) {
  const envFactory = task.envFactory({ catch: url }, seededEpisodes(1000));
  const rows = task.dataset(G);
  const config = { max_completion_length: 4096, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: scheduler, env_call_timeout_s: 1 };
  const rollouts = await runRollouts({ engine: engine(), tokenizer: tok, rows, envFactory, config, seed: 5, maxBatchSize: G });
  const rewards = await task.rewardFuncs[0]!({ prompts: [], completions: [], completion_ids: [], environments: rollouts.map((r) => r.env), trainer_state: { global_step: 0 } });
  return { rollouts, rewards, envFactory, rows, config };
}

/** What a rollout is, scheduling aside: its reset observation (the seed's ball column), its turns, its reward. */
function played(g: { rollouts: Rollout[]; rewards: readonly (number | null | undefined)[] }) {
  return g.rollouts.map((r, i) => ({ prompt: r.prompt.at(-1)!.content, completion: r.completion, completionIds: r.completionIds, error: r.error, reward: g.rewards[i] }));
}

describe('a generation against a one-session server', () => {
  let reference: ReturnType<typeof played>;
  beforeAll(async () => {
    reference = played(await generation(many.relay.url, 'continuous'));
  });

  it('the many-session reference: every rollout scored, the seeds and moves varied', () => {
    expect(reference.map((r) => r.error)).toEqual(Array(G).fill(undefined));
    expect(new Set(reference.map((r) => r.prompt)).size).toBeGreaterThan(1);
    expect(new Set(reference.map((r) => r.reward)).size).toBe(2);
  });

  // Each on a server of its own: the process's limiter learns its limit from this generation's refusals.
  for (const scheduler of ['continuous', 'lockstep'] as const) {
    it(`${scheduler}: every rollout scorable (none timed out waiting for the session), the same as on a many-session server`, async () => {
      const one = await start(1);
      try {
        let peak = 0;
        const watch = setInterval(() => (peak = Math.max(peak, one.server.stats().activeSessions)), 1);
        const g = await generation(one.relay.url, scheduler);
        clearInterval(watch);
        expect(g.rollouts.map((r) => r.timedOut ?? false)).toEqual(Array(G).fill(false));
        expect(played(g)).toEqual(reference);
        expect(peak).toBe(1);
        // The run's next generation (the trainer's prefetch included) starts one episode at a time.
        const next = prepareResets(g.envFactory, g.rows, g.config, G);
        expect(next.slots).toBe(1);
        await next.discard();
        expect(one.server.stats().activeSessions).toBe(0);
      } finally {
        await one.relay.close();
        await one.server.close();
      }
    });
  }
});
