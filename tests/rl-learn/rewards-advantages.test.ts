import { describe, expect, it } from 'vitest';
import { fracZeroStd, groupAdvantages, normalizeThenSumAdvantages } from '../../src/rl/grpo/advantages.ts';
import { computeRewardMatrix, envRewardFunction, rewardSources, rewardWeights, weightedRewardSum, type RewardArgs, type RewardFunction } from '../../src/rl/grpo/rewards.ts';
import { nanstd } from '../../src/rl/grpo/stats.ts';

const close = (xs: ArrayLike<number>, ys: number[], digits = 9) => {
  expect(xs.length).toBe(ys.length);
  ys.forEach((y, i) => expect(xs[i]).toBeCloseTo(y, digits));
};

describe('advantages (§10)', () => {
  it("the spec's example: [1,0,0,0] → [0.75, −0.25 ×3] / 0.5001", () => {
    const { advantages, std } = groupAdvantages([1, 0, 0, 0], 4, 'group');
    close(advantages, [0.75 / 0.5001, -0.25 / 0.5001, -0.25 / 0.5001, -0.25 / 0.5001]);
    expect(advantages[0]).toBeCloseTo(1.4997, 4);
    close(std, [0.5, 0.5, 0.5, 0.5]);
  });

  it('nanstd is unbiased and NaN below two values', () => {
    expect(nanstd([1, 0, 0, 0])).toBeCloseTo(0.5, 12);
    expect(nanstd([3, NaN])).toBeNaN();
    expect(nanstd([1, NaN, 0, 0])).toBeCloseTo(Math.sqrt(1 / 3), 12);
  });

  it('batch scaling uses the std over the whole batch; none only centers', () => {
    const r = [1, 0, 0, 0, 1, 1, 0, 0];
    const batchStd = Math.sqrt(1.875 / 7);
    const batch = groupAdvantages(r, 4, 'batch');
    close(batch.advantages, [0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5].map((x) => x / (batchStd + 1e-4)));
    close(groupAdvantages(r, 4, 'none').advantages, [0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5]);
  });

  it('NaN rewards are left out of μ and σ and get advantage 0; singleton groups get 0', () => {
    const { advantages } = groupAdvantages([1, NaN, 0, 0], 4, 'group');
    const s = Math.sqrt(1 / 3) + 1e-4;
    close(advantages, [2 / 3 / s, 0, -1 / 3 / s, -1 / 3 / s]);
    close(groupAdvantages([5, NaN, 2, 2], 2, 'group').advantages, [0, 0, 0, 0]);
  });

  it('frac_reward_zero_std counts samples whose group has σ ≈ 0', () => {
    const { std } = groupAdvantages([1, 1, 0, 1, 2, 2], 2, 'group');
    expect(fracZeroStd(std)).toBeCloseTo(4 / 6, 12);
  });

  it('normalize_then_sum: per-function group normalization, weighted nansum, batch normalization', () => {
    const R = [Float64Array.from([1, 0, 2, 2]), Float64Array.from([0, 4, NaN, 1])];
    const w = [1, 0.5];
    const { advantages } = normalizeThenSumAdvantages(R, w, 2);
    // group stds: f0 → [0.7071, 0]; f1 → [2.8284, NaN]
    const s0 = Math.SQRT1_2;
    const s1 = 2 * Math.SQRT2;
    const combined = [0.5 / (s0 + 1e-4) + 0.5 * (-2 / (s1 + 1e-4)), -0.5 / (s0 + 1e-4) + 0.5 * (2 / (s1 + 1e-4)), 0, 0];
    const mu = combined.reduce((a, b) => a + b, 0) / 4;
    const sd = nanstd(combined);
    close(advantages, combined.map((x) => (x - mu) / (sd + 1e-4)));
  });
});

describe('rewards (§9)', () => {
  const args = (n: number, extra: Record<string, unknown> = {}): RewardArgs => ({
    prompts: Array.from({ length: n }, () => [{ role: 'user', content: 'q' }]),
    completions: Array.from({ length: n }, (_, i) => [{ role: 'assistant', content: `a${i}` }]),
    completion_ids: Array.from({ length: n }, (_, i) => [i]),
    environments: Array.from({ length: n }, () => ({})),
    trainer_state: { global_step: 0 },
    ...extra,
  });

  it('calls functions with TRL keyword names and columns; null → NaN; async allowed', async () => {
    const seen: unknown[] = [];
    const f: RewardFunction = async function answer_len({ completions, kind }) {
      seen.push(kind);
      return completions.map((c, i) => (i === 1 ? null : String(c[0]!.content).length));
    };
    const R = await computeRewardMatrix([f], args(3, { kind: ['x', 'y', 'z'] }));
    expect(Array.from(R[0]!)).toEqual([2, NaN, 2]);
    expect(seen).toEqual([['x', 'y', 'z']]);
  });

  it('weighted sum with nansum; a rollout with every reward NaN stays NaN (unscorable)', () => {
    const R = [Float64Array.from([1, NaN, NaN]), Float64Array.from([2, 3, NaN])];
    expect(Array.from(weightedRewardSum(R, rewardWeights([1, 0.5], [(() => []) as RewardFunction, (() => []) as RewardFunction])))).toEqual([2, 1.5, NaN]);
  });

  it('env getReward becomes a reward function named after the class, null for other classes', async () => {
    class CatchEnv {
      getReward() {
        return 1;
      }
    }
    class WordleEnv {
      async getReward() {
        return 0.5;
      }
    }
    const funcs = rewardSources([], new CatchEnv());
    expect(funcs.map((f) => f.name)).toEqual(['CatchEnv']);
    const R = await computeRewardMatrix([envRewardFunction('CatchEnv'), envRewardFunction('WordleEnv')], args(2, { environments: [new CatchEnv(), new WordleEnv()] }));
    expect(Array.from(R[0]!)).toEqual([1, NaN]);
    expect(Array.from(R[1]!)).toEqual([NaN, 0.5]);
  });

  it('bad reward sources and outputs are named', async () => {
    expect(() => rewardSources([], {})).toThrow(/no reward source/);
    const bad: RewardFunction = function short() {
      return [1];
    };
    await expect(computeRewardMatrix([bad], args(2))).rejects.toThrow(/'short' returned 1 values for 2 completions/);
    const str = (function text() {
      return ['1', '2'];
    }) as unknown as RewardFunction;
    await expect(computeRewardMatrix([str], args(2))).rejects.toThrow(/'text' returned a string/);
    expect(() => rewardWeights([1], [bad, bad])).toThrow(/reward_weights has 1 entries but there are 2/);
  });
});
