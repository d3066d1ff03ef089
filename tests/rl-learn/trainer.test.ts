import { describe, expect, it } from 'vitest';
import { FakeEngine, type Call } from './fake-engine.ts';
import { referenceAfterWarmup, trainGRPO, TrainingError, type GrpoStepEvent, type TrainerProgress, type TrainerRollout, type GenerationRequest } from '../../src/rl/grpo/trainer.ts';
import { trainSft } from '../../src/rl/grpo/sft.ts';
import { configFromObject, type GRPOConfig } from '../../src/rl/config.ts';
import { deserializeTrainerState } from '../../src/rl/grpo/trainer-state.ts';
import { groupAdvantages } from '../../src/rl/grpo/advantages.ts';
import { hashInts } from '../../src/rl/seeds.ts';
import { mulberry32 } from '../../src/random.ts';
import { rewardSources, type RewardFunction } from '../../src/rl/grpo/rewards.ts';
import type { DatasetRow } from '../../src/rl/rollout/env.ts';

class CountingEnv {
  ones = 0;
  getReward(): number {
    return this.ones >= 2 ? 1 : 0;
  }
}

const TOOL_MASK = [1, 1, 0, 0, 1, 1];

const dataset: DatasetRow[] = Array.from({ length: 6 }, (_, i) => ({ prompt: [{ role: 'user', content: `p${i}` }], pid: i }));

/** Fake rollout loop: samples 6 tokens per rollout from the fake policy; positions 2–3 play the tool suffix. */
function fakeRollouts(engine: FakeEngine, captured: TrainerRollout[][] = []) {
  return async (req: GenerationRequest): Promise<TrainerRollout[]> => {
    const out = req.rows.map((row, i) => {
      const promptIds = [Number(row.pid) % 8, 3];
      const completionIds = engine.sample(promptIds, TOOL_MASK.length, mulberry32(hashInts(req.seed, i)));
      const env = new CountingEnv();
      env.ones = completionIds.filter((t, k) => t === 1 && TOOL_MASK[k]).length;
      return {
        promptIds,
        completionIds,
        toolMask: TOOL_MASK,
        truncated: i % 4 === 3,
        prompt: row.prompt,
        completion: [{ role: 'assistant', content: completionIds.join(' ') }],
        env,
        toolCalls: i % 2,
        toolFailures: i % 4 === 1 ? 1 : 0,
      };
    });
    captured.push(out);
    return out;
  };
}

const fracOnes: RewardFunction = function frac_ones({ completion_ids }) {
  return completion_ids.map((ids) => ids.filter((t, k) => t === 1 && TOOL_MASK[k]).length / 4);
};

function config(over: Partial<GRPOConfig>): GRPOConfig {
  return configFromObject({
    num_generations: 2,
    per_device_train_batch_size: 2,
    gradient_accumulation_steps: 2,
    learning_rate: 0.05,
    max_steps: 2,
    save_steps: 0,
    ...over,
  });
}

async function collect(gen: AsyncGenerator<GrpoStepEvent, void>): Promise<GrpoStepEvent[]> {
  const out: GrpoStepEvent[] = [];
  for await (const e of gen) out.push(e);
  return out;
}

const kinds = (calls: Call[]) =>
  calls.map((c) => (c.kind === 'score' ? `score${c.n}${c.adapters ? '' : '-ref'}` : c.kind === 'backward' ? `backward${c.n}` : c.kind));

function memoryStore() {
  const saved = new Map<number, Map<string, Uint8Array>>();
  return {
    saved,
    async save(step: number, files: Map<string, Uint8Array>) {
      saved.set(step, files);
      return `memory:checkpoint-${step}`;
    },
  };
}

describe('trainer loop with a fake engine', () => {
  it('calls the engine in order: per micro-batch score then backward, one step per GAS micro-batches', async () => {
    const fake = new FakeEngine();
    const events = await collect(trainGRPO({ engine: fake.asEngine(), config: config({}), dataset, rollouts: fakeRollouts(fake), rewardFuncs: [fracOnes] }));
    expect(events.map((e) => e.step)).toEqual([1, 2]);
    const oneStep = ['zeroGrad', 'score2', 'backward2', 'score2', 'backward2', 'step'];
    expect(kinds(fake.calls)).toEqual([...oneStep, ...oneStep]);
  });

  it('num_iterations > 1 scores old log-probs once per generation; beta ≠ 0 scores the reference with adapters off', async () => {
    const fake = new FakeEngine();
    await collect(
      trainGRPO({ engine: fake.asEngine(), config: config({ num_iterations: 2, beta: 0.04, max_steps: 2 }), dataset, rollouts: fakeRollouts(fake), rewardFuncs: [fracOnes] }),
    );
    const oneStep = ['zeroGrad', 'score2', 'backward2', 'score2', 'backward2', 'step'];
    expect(kinds(fake.calls)).toEqual(['score2', 'score2', 'score2-ref', 'score2-ref', ...oneStep, ...oneStep]);
  });

  it('reports where a step is after its rollouts: log-prob passes with counts, then micro-batch i/n forward, backward, AdamW', async () => {
    const fake = new FakeEngine();
    const seen: string[] = [];
    const onProgress = (p: TrainerProgress) =>
      seen.push(p.phase === 'logprobs' ? `${p.of} ${p.done}/${p.total}` : `micro ${p.microBatch}/${p.microBatches} ${p.stage}`);
    const c = config({ num_iterations: 2, beta: 0.04, max_steps: 2 });
    await collect(trainGRPO({ engine: fake.asEngine(), config: c, dataset, rollouts: fakeRollouts(fake), rewardFuncs: [fracOnes], onProgress }));
    const oneStep = ['micro 1/2 forward', 'micro 1/2 backward', 'micro 2/2 forward', 'micro 2/2 backward', 'micro 2/2 optimizer'];
    expect(seen).toEqual(['old 0/4', 'old 2/4', 'old 4/4', 'reference 0/4', 'reference 2/4', 'reference 4/4', ...oneStep, ...oneStep]);
  });

  it('after an SFT warm-up the KL reference is the warmed-up policy: kl is 0 at GRPO\'s first step, and stays in resumed checkpoints', async () => {
    // The warm-up: a few SFT steps move θ away from the base (θ₀ = what "adapters off" scores).
    const fake = new FakeEngine();
    const examples = [{ ids: [1, 3, 1, 1, 2, 1], trainMask: [0, 0, 1, 1, 1, 1] }];
    const sftOpt = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 };
    for await (const _ of trainSft({ engine: fake.asEngine(), examples, steps: 5, batchSize: 1, learningRate: 0.1, seed: 1, optimizer: sftOpt }));
    const c = config({ beta: 0.04, max_steps: 2, save_steps: 1, gradient_accumulation_steps: 1 });
    const reference = await referenceAfterWarmup(fake.asEngine(), c, true);
    expect(reference).toBeDefined();
    expect(await referenceAfterWarmup(fake.asEngine(), config({ beta: 0 }), true)).toBeUndefined();
    expect(await referenceAfterWarmup(fake.asEngine(), c, false)).toBeUndefined();
    const warmed = Float32Array.from(fake.theta);
    const store = memoryStore();
    const events = await collect(trainGRPO({ engine: fake.asEngine(), config: c, dataset, rollouts: fakeRollouts(fake), rewardFuncs: [fracOnes], reference, saveState: store.save }));
    expect(events[0]!.metrics.kl).toBe(0);
    expect(events[1]!.metrics.kl).toBeGreaterThan(0);
    // Scoring the reference swapped its state in and the current one back: the run's own updates stand.
    expect(fake.theta).not.toEqual(warmed);
    const saved = deserializeTrainerState(store.saved.get(1)!);
    expect(saved.reference?.tensors.find((t) => t.name === 'theta')!.data).toEqual(warmed);

    // TRL's reference (the base, adapters off) differs from the warmed-up policy: kl > 0 at once.
    const base = new FakeEngine();
    for await (const _ of trainSft({ engine: base.asEngine(), examples, steps: 5, batchSize: 1, learningRate: 0.1, seed: 1, optimizer: sftOpt }));
    const baseEvents = await collect(trainGRPO({ engine: base.asEngine(), config: config({ beta: 0.04, max_steps: 1, gradient_accumulation_steps: 1 }), dataset, rollouts: fakeRollouts(base), rewardFuncs: [fracOnes] }));
    expect(baseEvents[0]!.metrics.kl).toBeGreaterThan(0);
  });

  it('logging_steps: the steps that are multiples of it, and the last, carry the metrics averaged since the previous log', async () => {
    const fake = new FakeEngine();
    const events = await collect(trainGRPO({ engine: fake.asEngine(), config: config({ logging_steps: 2, max_steps: 3, gradient_accumulation_steps: 1 }), dataset, rollouts: fakeRollouts(fake), rewardFuncs: [fracOnes] }));
    expect(events.map((e) => e.logs !== undefined)).toEqual([false, true, true]);
    expect(events[1]!.logs!.reward).toBeCloseTo((events[0]!.metrics.reward! + events[1]!.metrics.reward!) / 2, 12);
    expect(events[1]!.logs!.learning_rate).toBe(events[1]!.metrics.learning_rate);
    expect(events[2]!.logs!.reward).toBe(events[2]!.metrics.reward);
  });

  it('passes dL/dlogp = −A/N_tok on trained tokens and 0 on tool-suffix tokens (dapo, on-policy)', async () => {
    const fake = new FakeEngine();
    const captured: TrainerRollout[][] = [];
    await collect(trainGRPO({ engine: fake.asEngine(), config: config({ max_steps: 1 }), dataset, rollouts: fakeRollouts(fake, captured), rewardFuncs: [fracOnes] }));
    const rollouts = captured[0]!;
    const rewards = rollouts.map((r) => r.completionIds.filter((t, k) => t === 1 && TOOL_MASK[k]).length / 4);
    const { advantages } = groupAdvantages(rewards, 2, 'group');
    const nTok = 4 * rollouts.length;
    const backwards = fake.calls.filter((c): c is Extract<Call, { kind: 'backward' }> => c.kind === 'backward');
    const seen = new Set<number>();
    for (const b of backwards) {
      b.ids.forEach((ids, j) => {
        const i = rollouts.findIndex((r, k) => !seen.has(k) && [...r.promptIds, ...r.completionIds].join() === ids.join());
        seen.add(i);
        const expected = TOOL_MASK.map((m) => (m ? -advantages[i]! / nTok : 0));
        Array.from(b.dLdLogp[j]!).forEach((g, t) => expect(g).toBeCloseTo(expected[t]!, 6));
      });
    }
    expect(seen.size).toBe(4);
  });

  it('entropy_coef ≠ 0 passes dL/dentropy = −entropy_coef/N_tok on trained tokens (and none when 0)', async () => {
    const fake = new FakeEngine();
    await collect(trainGRPO({ engine: fake.asEngine(), config: config({ max_steps: 1, entropy_coef: 0.1 }), dataset, rollouts: fakeRollouts(fake), rewardFuncs: [fracOnes] }));
    const backwards = fake.calls.filter((c): c is Extract<Call, { kind: 'backward' }> => c.kind === 'backward');
    expect(backwards.length).toBe(2);
    const nTok = 4 * 4; // 4 rollouts × 4 trained tokens (tool-suffix tokens are masked)
    for (const b of backwards) {
      expect(b.dLdEntropy).not.toBeNull();
      expect(b.dLdEntropy!.length).toBe(b.n);
      for (const g of b.dLdEntropy!) Array.from(g).forEach((x, t) => expect(x).toBeCloseTo(TOOL_MASK[t] ? -0.1 / nTok : 0, 7));
    }
    // The entropy share reaches the parameters: same rollouts, different update than without it.
    const plain = new FakeEngine();
    await collect(trainGRPO({ engine: plain.asEngine(), config: config({ max_steps: 1 }), dataset, rollouts: fakeRollouts(plain), rewardFuncs: [fracOnes] }));
    expect(plain.calls.filter((c) => c.kind === 'backward').every((c) => c.kind === 'backward' && c.dLdEntropy === null)).toBe(true);
    expect(Array.from(fake.theta)).not.toEqual(Array.from(plain.theta));
  });

  it('mask_truncated_completions zeroes every token of truncated rollouts', async () => {
    const fake = new FakeEngine();
    const captured: TrainerRollout[][] = [];
    await collect(
      trainGRPO({ engine: fake.asEngine(), config: config({ max_steps: 1, mask_truncated_completions: true }), dataset, rollouts: fakeRollouts(fake, captured), rewardFuncs: [fracOnes] }),
    );
    const truncatedIds = captured[0]!.filter((r) => r.truncated).map((r) => [...r.promptIds, ...r.completionIds].join());
    expect(truncatedIds.length).toBe(1);
    let checked = 0;
    for (const c of fake.calls) {
      if (c.kind !== 'backward') continue;
      c.ids.forEach((ids, j) => {
        if (truncatedIds.includes(ids.join())) {
          expect(Array.from(c.dLdLogp[j]!).every((g) => g === 0)).toBe(true);
          checked++;
        }
      });
    }
    expect(checked).toBe(1);
  });

  it('mask_stubborn_steps zeroes the flagged tokens only; stubborn repeats and timeouts are counted', async () => {
    // Rollout 1 has its stubborn turn at completion tokens 1..2; rollout 2 timed out.
    const withFlags = (captured: TrainerRollout[][]) => {
      const inner = fakeRollouts(new FakeEngine(), captured);
      return async (req: GenerationRequest) => (await inner(req)).map((r, i) => ({
        ...r,
        stubbornMask: r.completionIds.map((_, t) => (i === 1 && (t === 1 || t === 2) ? 1 : 0)),
        stubbornCalls: i === 1 ? 1 : 0,
        timedOut: i === 2,
        ...(i === 2 ? { error: 'episode timed out: episode_timeout_s = 1' } : {}),
      }));
    };
    // Distinct rewards within each group, so every scorable rollout has a non-zero advantage.
    const byIndex: RewardFunction = function by_index({ completion_ids }) {
      return completion_ids.map((_, i) => i);
    };
    for (const mask of [false, true]) {
      const fake = new FakeEngine();
      const captured: TrainerRollout[][] = [];
      const [e] = await collect(trainGRPO({ engine: fake.asEngine(), config: config({ max_steps: 1, mask_stubborn_steps: mask }), dataset, rollouts: withFlags(captured), rewardFuncs: [byIndex] }));
      // 4 rollouts, calls 0+1+0+1 = 2, one stubborn → 1/2; one timed-out episode.
      expect(e!.metrics['tools/stubborn_frequency']).toBe(0.5);
      expect(e!.metrics['rollouts/timed_out']).toBe(1);
      expect(e!.unscorable).toEqual([{ rollout: 2, reason: 'episode timed out: episode_timeout_s = 1' }]);
      const target = captured[0]![1]!;
      const ids = [...target.promptIds, ...target.completionIds].join();
      const grads = fake.calls.flatMap((c) => (c.kind === 'backward' ? c.ids.flatMap((x, j) => (x.join() === ids ? [Array.from(c.dLdLogp[j]!)] : [])) : []));
      expect(grads).toHaveLength(1);
      TOOL_MASK.forEach((m, t) => {
        const masked = m === 0 || (mask && (t === 1 || t === 2));
        if (masked) expect(grads[0]![t]).toBe(0);
      });
      // dapo on-policy: every trained token of a rollout gets the same −A/N; token 0 is never flagged.
      expect(grads[0]![0]).not.toBe(0);
      expect(grads[0]![1]).toBe(mask ? 0 : grads[0]![0]);
    }
  });

  it('prefetch: the next generation is announced once the rewards are in, before this one trains, and then played', async () => {
    const fake = new FakeEngine();
    const log: string[] = [];
    const announced: GenerationRequest[] = [];
    const inner = fakeRollouts(fake);
    const rewardLogged: RewardFunction = function frac_ones(args) {
      log.push('rewards');
      return fracOnes(args);
    };
    const engine = fake.asEngine();
    const backward = engine.backward.bind(engine);
    engine.backward = async (req) => {
      if (log[log.length - 1] !== 'backward') log.push('backward');
      return backward(req);
    };
    await collect(trainGRPO({
      engine, config: config({ max_steps: 3 }), dataset, rewardFuncs: [rewardLogged],
      rollouts: async (req) => {
        log.push(`rollouts ${announced.includes(req) ? 'prefetched' : 'fresh'}`);
        return inner(req);
      },
      prefetch: (next) => {
        log.push('prefetch');
        announced.push(next);
      },
    }));
    // One optimizer step per generation here: 3 generations, the last one announces nothing.
    expect(log).toEqual([
      'rollouts fresh', 'rewards', 'prefetch', 'backward',
      'rollouts prefetched', 'rewards', 'prefetch', 'backward',
      'rollouts prefetched', 'rewards', 'backward',
    ]);
    expect(announced.map((r) => r.step)).toEqual([1, 2]);
  });

  it('reports TRL metric names, tool frequencies, env rewards and completions with advantages', async () => {
    const fake = new FakeEngine();
    const funcs = rewardSources([fracOnes], new CountingEnv());
    const [e] = await collect(trainGRPO({ engine: fake.asEngine(), config: config({ max_steps: 1 }), dataset, rollouts: fakeRollouts(fake), rewardFuncs: funcs }));
    const m = e!.metrics;
    for (const key of [
      'reward', 'reward_std', 'frac_reward_zero_std', 'rewards/frac_ones/mean', 'rewards/frac_ones/std', 'rewards/CountingEnv/mean',
      'completions/mean_length', 'completions/min_length', 'completions/max_length', 'completions/mean_terminated_length',
      'completions/clipped_ratio', 'entropy', 'clip_ratio/region_mean', 'clip_ratio/low_mean', 'clip_ratio/high_mean',
      'tools/call_frequency', 'tools/failure_frequency', 'num_tokens', 'step_time', 'learning_rate', 'grad_norm', 'loss',
    ]) {
      expect(m, key).toHaveProperty([key]);
    }
    expect(m['completions/mean_length']).toBe(4);
    expect(m['completions/clipped_ratio']).toBe(0.25);
    expect(m['tools/call_frequency']).toBe(0.5);
    expect(m['tools/failure_frequency']).toBe(0.5);
    expect(m.num_tokens).toBe(4 * 8);
    expect(m.learning_rate).toBe(0.05);
    expect(e!.completions).toHaveLength(2);
    expect(Object.keys(e!.completions[0]!.rewards)).toEqual(['frac_ones', 'CountingEnv']);
  });

  it('resumes exactly: 4 steps straight = 2 steps, checkpoint, resume, 2 steps', async () => {
    const straight = new FakeEngine();
    const store = memoryStore();
    const cfg = config({ max_steps: 4, save_steps: 2, lr_scheduler_type: 'linear' });
    const all = await collect(trainGRPO({ engine: straight.asEngine(), config: cfg, dataset, rollouts: fakeRollouts(straight), rewardFuncs: [fracOnes], saveState: store.save }));
    expect([...store.saved.keys()]).toEqual([2, 4]);
    expect(all[1]!.checkpoint).toBe('memory:checkpoint-2');

    const resumed = new FakeEngine(99); // different init: everything must come from the checkpoint
    const ckpt = deserializeTrainerState(store.saved.get(2)!);
    const rest = await collect(trainGRPO({ engine: resumed.asEngine(), config: cfg, dataset, rollouts: fakeRollouts(resumed), rewardFuncs: [fracOnes], resume: ckpt }));
    expect(rest.map((e) => e.step)).toEqual([3, 4]);
    const strip = (e: GrpoStepEvent) => {
      const { step_time: _t, ...m } = e.metrics;
      // The logging window restarts on resume, as TRL's does: averaged logs may span fewer steps.
      return { ...e, metrics: m, checkpoint: undefined, logs: undefined };
    };
    expect(rest.map(strip)).toEqual(all.slice(2).map(strip));
    expect(Array.from(resumed.theta)).toEqual(Array.from(straight.theta));
  });

  it('a NaN loss stops with a clear error before any update', async () => {
    const fake = new FakeEngine();
    fake.poison = true;
    await expect(collect(trainGRPO({ engine: fake.asEngine(), config: config({ beta: 0.04 }), dataset, rollouts: fakeRollouts(fake), rewardFuncs: [fracOnes] }))).rejects.toThrow(
      TrainingError,
    );
    await expect(collect(trainGRPO({ engine: fake.asEngine(), config: config({ beta: 0.04 }), dataset, rollouts: fakeRollouts(fake), rewardFuncs: [fracOnes] }))).rejects.toThrow(
      /step 1: the loss is NaN/,
    );
    expect(fake.calls.some((c) => c.kind === 'step')).toBe(false);
  });

  it('an aborted signal pauses at the generation boundary and saves a checkpoint', async () => {
    const fake = new FakeEngine();
    const store = memoryStore();
    const ctrl = new AbortController();
    const events: GrpoStepEvent[] = [];
    for await (const e of trainGRPO({ engine: fake.asEngine(), config: config({ max_steps: 5 }), dataset, rollouts: fakeRollouts(fake), rewardFuncs: [fracOnes], saveState: store.save, signal: ctrl.signal })) {
      events.push(e);
      if (e.step === 2) ctrl.abort();
    }
    expect(events.map((e) => e.step)).toEqual([1, 2]);
    expect([...store.saved.keys()]).toEqual([2]);
    expect(deserializeTrainerState(store.saved.get(2)!).counters).toMatchObject({ step: 2, generation: 2 });
  });

  it('a pause while a generation plays resumes exactly, its tokens counted once', async () => {
    const straight = new FakeEngine();
    const cfg = config({ max_steps: 2 });
    const all = await collect(trainGRPO({ engine: straight.asEngine(), config: cfg, dataset, rollouts: fakeRollouts(straight), rewardFuncs: [fracOnes] }));

    // The pause arrives while generation 2 is played: it finishes, then the trainer stops before its step.
    const paused = new FakeEngine();
    const store = memoryStore();
    const ctrl = new AbortController();
    const play = fakeRollouts(paused);
    const rollouts = async (req: GenerationRequest) => {
      if (req.step === 1) ctrl.abort();
      return play(req);
    };
    const first = await collect(trainGRPO({ engine: paused.asEngine(), config: cfg, dataset, rollouts, rewardFuncs: [fracOnes], saveState: store.save, signal: ctrl.signal }));
    expect(first.map((e) => e.step)).toEqual([1]);
    const ckpt = deserializeTrainerState(store.saved.get(1)!);
    expect(ckpt.counters.numTokens).toBe(all[0]!.metrics.num_tokens);
    const resumed = new FakeEngine(99);
    const rest = await collect(trainGRPO({ engine: resumed.asEngine(), config: cfg, dataset, rollouts: fakeRollouts(resumed), rewardFuncs: [fracOnes], resume: ckpt }));
    expect(rest.map((e) => e.metrics.num_tokens)).toEqual([all[1]!.metrics.num_tokens]);
  });

  it('an env failure makes the rollout unscorable (advantage 0) and is reported', async () => {
    const fake = new FakeEngine();
    const base = fakeRollouts(fake);
    const failing = async (req: GenerationRequest) => {
      const out = await base(req);
      out[0] = { ...out[0]!, error: 'Upstream closed: 1006' };
      return out;
    };
    const [e] = await collect(trainGRPO({ engine: fake.asEngine(), config: config({ max_steps: 1, log_completions: true }), dataset, rollouts: failing, rewardFuncs: [fracOnes] }));
    expect(e!.unscorable).toEqual([{ rollout: 0, reason: 'Upstream closed: 1006' }]);
    expect(e!.completions[0]!.advantage).toBe(0);
    expect(e!.completions[0]!.rewards.frac_ones).toBeNull();
  });

  it('learns: the fake policy raises its reward', async () => {
    const fake = new FakeEngine();
    const events = await collect(
      trainGRPO({
        engine: fake.asEngine(),
        config: config({ max_steps: 40, num_generations: 4, per_device_train_batch_size: 4, gradient_accumulation_steps: 2, lr_scheduler_type: 'constant' }),
        dataset,
        rollouts: fakeRollouts(fake),
        rewardFuncs: [fracOnes],
      }),
    );
    const mean = (es: GrpoStepEvent[]) => es.reduce((s, e) => s + e.metrics.reward!, 0) / es.length;
    expect(mean(events.slice(-8))).toBeGreaterThan(mean(events.slice(0, 8)) + 0.2);
  });
});
