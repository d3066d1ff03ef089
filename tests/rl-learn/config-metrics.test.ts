import { describe, expect, it } from 'vitest';
import { parseCli, type OptionTable } from '../../src/cli/args.ts';
import { BOOL_KEYS, CONFIG_KEYS, ConfigError, configFromJson, configFromObject, configFromText, configHelp, DEFAULT_CONFIG, generationBatchSize } from '../../src/rl/config.ts';
import { stepMetrics, toolMetrics, type RolloutStats } from '../../src/rl/grpo/metrics.ts';
import { learningRateAt } from '../../src/rl/grpo/schedule.ts';
import { MetricsWindow } from '../../src/rl/grpo/logging.ts';

describe('GRPOConfig', () => {
  it("has TRL's defaults", () => {
    expect(DEFAULT_CONFIG).toMatchObject({
      learning_rate: 1e-6, num_generations: 8, per_device_train_batch_size: 8, gradient_accumulation_steps: 1, num_iterations: 1,
      max_completion_length: 512, temperature: 1, top_p: 1, top_k: 0, loss_type: 'dapo', beta: 0, epsilon: 0.2, epsilon_high: null,
      delta: null, scale_rewards: 'group', multi_objective_aggregation: 'sum_then_normalize', importance_sampling_level: 'token',
      mask_truncated_completions: false, top_entropy_quantile: 1, lr_scheduler_type: 'linear', weight_decay: 0, max_grad_norm: 1,
      adam_beta1: 0.9, adam_beta2: 0.999, adam_epsilon: 1e-8, logging_steps: 10, num_train_epochs: 3, max_steps: -1,
    });
    expect(generationBatchSize(configFromObject({ per_device_train_batch_size: 4, gradient_accumulation_steps: 4, num_generations: 8 }))).toBe(16);
  });

  // The CLI's one parser (util.parseArgs) splits the flags; configFromText coerces the values.
  const OPTIONS: OptionTable = { model: { type: 'string' }, ...Object.fromEntries(Object.keys(CONFIG_KEYS).map((k) => [k, { type: 'string' as const }])) };
  const fromFlags = (argv: string[]) => {
    const { model, ...values } = parseCli(argv, OPTIONS, { bareTrue: BOOL_KEYS }).values;
    return { model, config: configFromText(values as Record<string, string>, configFromObject({})) };
  };

  it('parses --TRLNAME value flags beside other options; a bool flag may stand alone', () => {
    const { config, model } = fromFlags(
      ['--model', 'm', '--learning_rate', '3e-5', '--loss_type=grpo', '--mask_truncated_completions', '--scale_rewards', 'false', '--chat_template_kwargs', '{"enable_thinking": false}', '--lora_target_modules', 'q_proj,v_proj', '--epsilon_high', 'None'],
    );
    expect(model).toBe('m');
    expect(fromFlags(['--log_completions', 'false']).config.log_completions).toBe(false);
    expect(() => fromFlags(['--learning-rate', '1'])).toThrow("unknown option '--learning-rate' (see --help) (did you mean --learning_rate?)");
    expect(config).toMatchObject({ learning_rate: 3e-5, loss_type: 'grpo', mask_truncated_completions: true, scale_rewards: 'none', chat_template_kwargs: { enable_thinking: false }, lora_target_modules: ['q_proj', 'v_proj'], epsilon_high: null });
  });

  it('rejects bad values with an error naming the key', () => {
    expect(() => configFromObject({ loss_type: 'ppo' })).toThrow(/loss_type: must be one of dapo, grpo, bnpo, dr_grpo, got 'ppo'/);
    expect(() => configFromObject({ num_generations: 1 })).toThrow(/num_generations: must be ≥ 2/);
    expect(() => configFromObject({ learning_rate: 'fast' })).toThrow(/learning_rate: expected a number/);
    expect(() => configFromObject({ learningrate: 1 })).toThrow(/unknown config key 'learningrate' \(did you mean 'learning_rate'\?\)/);
    expect(() => configFromObject({ num_generations: 3, per_device_train_batch_size: 4 })).toThrow(/divisible by num_generations/);
    expect(() => configFromObject({ lora_target_modules: ['qkv'] })).toThrow(/unknown module 'qkv'/);
    // Qwen3.5's Gated DeltaNet linears, as PEFT/TRL users write them.
    expect(configFromObject({ lora_target_modules: ['in_proj_qkv', 'in_proj_z', 'in_proj_b', 'in_proj_a', 'out_proj', 'q_proj'] }).lora_target_modules).toHaveLength(6);
    expect(() => configFromJson('{oops')).toThrow(ConfigError);
    expect(() => fromFlags(['--beta'])).toThrow(/--beta needs a value/);
  });

  it('max_concurrent_envs: null by default (as many as decode slots), an integer ≥ 1 from a flag', () => {
    expect(DEFAULT_CONFIG.max_concurrent_envs).toBeNull();
    expect(fromFlags(['--max_concurrent_envs', '8']).config.max_concurrent_envs).toBe(8);
    expect(() => fromFlags(['--max_concurrent_envs', '0'])).toThrow('max_concurrent_envs: must be ≥ 1, got 0');
    expect(() => configFromObject({ max_concurrent_envs: 2.5 })).toThrow('max_concurrent_envs: expected an integer, got 2.5');
  });

  it('has one help line per key', () => {
    const help = configHelp();
    expect(help).toContain('--num_generations int (default 8)');
    expect(help.split('\n').length).toBe(Object.keys(DEFAULT_CONFIG).length);
  });
});

describe('metrics (§13)', () => {
  const r = (modelTokens: number, truncated: boolean, toolCalls: number, toolFailures: number): RolloutStats => ({ modelTokens, totalTokens: modelTokens + 10, truncated, toolCalls, toolFailures });

  it('tools: 3 completions, 2 calls, 1 failure → call_frequency 2/3, failure_frequency 1/2; no calls → 0', () => {
    const m = toolMetrics([r(5, false, 1, 1), r(5, false, 1, 0), r(5, false, 0, 0)]);
    expect(m['tools/call_frequency']).toBeCloseTo(2 / 3, 12);
    expect(m['tools/failure_frequency']).toBe(0.5);
    expect(toolMetrics([r(1, false, 0, 0)])['tools/failure_frequency']).toBe(0);
  });

  it('tools/stubborn_frequency = stubborn repeats / calls, rollouts/timed_out counts timed-out episodes', () => {
    const m = toolMetrics([{ ...r(5, false, 3, 3), stubbornCalls: 1 }, { ...r(5, false, 1, 0), timedOut: true }, { ...r(5, false, 0, 0), timedOut: true }]);
    expect(m['tools/stubborn_frequency']).toBe(0.25);
    expect(m['rollouts/timed_out']).toBe(2);
    expect(toolMetrics([r(1, false, 0, 0)])).toMatchObject({ 'tools/stubborn_frequency': 0, 'rollouts/timed_out': 0 });
  });

  it('tools/over_budget_frequency = completions whose tool results were rolled back for the budget / completions', () => {
    expect(toolMetrics([{ ...r(5, false, 1, 0), overBudget: true }, r(5, false, 1, 0), r(5, false, 0, 0), { ...r(5, false, 2, 1), overBudget: true }])['tools/over_budget_frequency']).toBe(0.5);
    expect(toolMetrics([])['tools/over_budget_frequency']).toBe(0);
  });

  it('lengths, clipped ratio, rewards per function, clip ratios', () => {
    const m = stepMetrics({
      rollouts: [r(4, false, 0, 0), r(10, true, 0, 0), r(6, false, 0, 0), r(2, true, 0, 0)],
      rewardNames: ['a'],
      rewardMatrix: [Float64Array.from([1, NaN, 0, 0])],
      rewards: [1, NaN, 0, 0],
      rewardStd: [Math.SQRT1_2, Math.SQRT1_2, 0, 0],
      lossMetrics: [
        { clipLowMean: 0.1, clipHighMean: 0, clipRegionMean: 0.1, clipLowMin: 0, clipHighMax: 0, kl: NaN, entropy: 1, policyLoss: 0, tokens: 4 },
        { clipLowMean: 0.3, clipHighMean: 0.2, clipRegionMean: 0.5, clipLowMin: 0.2, clipHighMax: 0.4, kl: NaN, entropy: 2, policyLoss: 0, tokens: 4 },
      ],
      loss: 0.5,
      gradNorm: 1,
      learningRate: 1e-6,
      numTokens: 100,
      stepTime: 2,
      beta: 0,
      entropyCoef: 0,
    });
    expect(m).toMatchObject({
      'completions/mean_length': 5.5, 'completions/min_length': 2, 'completions/max_length': 10,
      'completions/mean_terminated_length': 5, 'completions/min_terminated_length': 4, 'completions/max_terminated_length': 6,
      'completions/clipped_ratio': 0.5, 'rewards/a/mean': 1 / 3, reward: 1 / 3, frac_reward_zero_std: 0.5, entropy: 1.5,
      'clip_ratio/low_mean': 0.2, 'clip_ratio/low_min': 0, 'clip_ratio/high_max': 0.4, 'clip_ratio/region_mean': 0.3,
    });
    expect(m['rewards/a/std']).toBeCloseTo(Math.sqrt(1 / 3), 12);
    expect(m).not.toHaveProperty('kl');
  });
});

describe('learning-rate schedules', () => {
  it('linear decay to 0 without warmup (step k uses factor (total − k)/total); warmup ramps; cosine; constant', () => {
    const s = { type: 'linear' as const, peak: 1, warmupSteps: 0, totalSteps: 4 };
    expect([0, 1, 2, 3].map((k) => learningRateAt(s, k))).toEqual([1, 0.75, 0.5, 0.25]);
    const w = { ...s, warmupSteps: 2 };
    expect([0, 1, 2, 3].map((k) => learningRateAt(w, k))).toEqual([0, 0.5, 1, 0.5]);
    const cos = { ...s, type: 'cosine' as const };
    expect(learningRateAt(cos, 2)).toBeCloseTo(0.5, 12);
    expect(learningRateAt({ ...w, type: 'constant' as const }, 0)).toBe(1);
  });
});

describe('logging_steps (TRL): one record every N steps, NaN-filtered means since the previous one', () => {
  it('averages rates, keeps the latest position values, and logs after the last step', () => {
    const w = new MetricsWindow(2);
    expect(w.add(1, { reward: 0.2, learning_rate: 1e-3, num_tokens: 10, kl: NaN }, false)).toBeUndefined();
    expect(w.add(2, { reward: 0.6, learning_rate: 5e-4, num_tokens: 25, kl: 0.5 }, false)).toEqual({ reward: 0.4, learning_rate: 5e-4, num_tokens: 25, kl: 0.5 });
    expect(w.add(3, { reward: 1, learning_rate: 1e-4, num_tokens: 30, kl: NaN }, true)).toEqual({ reward: 1, learning_rate: 1e-4, num_tokens: 30, kl: NaN });
    // logging_steps is checked once, by the config.
    expect(() => configFromObject({ logging_steps: 0 })).toThrow('logging_steps: must be ≥ 1, got 0');
  });
});
