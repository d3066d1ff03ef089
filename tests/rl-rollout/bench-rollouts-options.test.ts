// `webgrpo bench rollouts` options (bench/rollouts/options.ts): the task chosen and what it plays, the
// defaults, and a clear error for every bad value — all before an engine or env is started.

import { describe, expect, it } from 'vitest';
import { parseBenchRolloutsOptions } from '../../bench/rollouts/options.ts';
import { COMPACT_CATCH_TASK } from '../../src/rl/tasks/compact-catch.ts';

describe('bench rollouts options', () => {
  it('defaults: compact catch on /envs/catch, 16 episodes in 16 slots, both schedulers, relay on', async () => {
    const o = parseBenchRolloutsOptions({});
    expect(o.task.name).toBe('catch');
    expect(await o.task.task()).toBe(COMPACT_CATCH_TASK);
    expect(o.task.env).toBe('catch');
    expect([o.task.maxCompletionLength, o.task.maxTokensPerSequence]).toEqual([400, 512]);
    expect(o).toMatchObject({ env: null, model: null, episodes: 16, maxBatch: 16, seed: 42, sftSteps: 70, sftLearningRate: 2e-2, schedulers: ['lockstep', 'continuous'], latency: true, latencySeed: 1 });
  });

  it('--task browsergym: the browsergym task over the mix (or the named tasks) on /envs/browsergym', async () => {
    const o = parseBenchRolloutsOptions({ task: 'browsergym', episodes: '64', 'max-batch': '16', scheduler: 'continuous', 'sft-steps': '120', 'sft-lr': '1e-2' });
    const task = await o.task.task();
    expect([o.task.name, task.name, o.task.env]).toEqual(['browsergym', 'browsergym', 'browsergym']);
    expect(task.template).toBeUndefined(); // the checkpoint's own template with TRL's five tools
    expect(o.task.maxCompletionLength).toBe(1024);
    expect(parseBenchRolloutsOptions({ task: 'browsergym' }).sftSteps).toBe(200);
    expect(o).toMatchObject({ episodes: 64, maxBatch: 16, schedulers: ['continuous'], sftSteps: 120, sftLearningRate: 1e-2 });
    const rows = (await parseBenchRolloutsOptions({ task: 'browsergym', tasks: 'enter-text,login-user' }).task.task()).dataset(3);
    expect(rows.map((r) => r.task_name)).toEqual(['enter-text', 'login-user', 'enter-text']);
    expect(new Set(task.dataset(40).map((r) => r.task_name)).size).toBeGreaterThan(5); // the mix
  });

  it('bad values are errors naming the option and the value', () => {
    expect(() => parseBenchRolloutsOptions({ task: 'wordle' })).toThrow("bench rollouts: --task must be catch or browsergym, got 'wordle'");
    expect(() => parseBenchRolloutsOptions({ tasks: 'click-test' })).toThrow('--tasks (the browsergym task mix) needs --task browsergym');
    expect(() => parseBenchRolloutsOptions({ task: 'browsergym', tasks: 'click-pie' })).toThrow("unknown task 'click-pie'");
    expect(() => parseBenchRolloutsOptions({ scheduler: 'async' })).toThrow("--scheduler must be lockstep, continuous or both, got 'async'");
    expect(() => parseBenchRolloutsOptions({ latency: 'yes' })).toThrow("--latency must be on or off, got 'yes'");
    expect(() => parseBenchRolloutsOptions({ episodes: '0' })).toThrow('--episodes must be ≥ 1');
    expect(() => parseBenchRolloutsOptions({ episodes: '2.5' })).toThrow("--episodes must be a non-negative integer, got '2.5'");
    expect(() => parseBenchRolloutsOptions({ 'max-batch': '0' })).toThrow('--max-batch must be ≥ 1');
    expect(() => parseBenchRolloutsOptions({ 'sft-lr': '-1' })).toThrow("--sft-lr must be a positive number, got '-1'");
  });
});
