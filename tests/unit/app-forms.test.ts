// The setup form's checks and the page-side metrics and tick labels: plain functions, no browser.
import { describe, expect, it } from 'vitest';
import { parseCli, type OptionTable } from '../../src/cli/args.ts';
import { checkFields, parseField } from '../../src/app/config-fields.ts';
import { BOOL_KEYS, CONFIG_KEYS, configFromObject, configFromText } from '../../src/rl/config.ts';
import { successRate } from '../../src/app/run-metrics.ts';
import { distinctTickLabels } from '../../src/app/components/ticks.ts';
import type { RolloutView } from '../../workers/api.ts';

describe('setup form fields', () => {
  it("says what is wrong with one field, in the CLI parser's words, without the key", () => {
    expect(parseField('learning_rate', 'abc')).toEqual({ error: 'expected a number, got "abc"' });
    expect(parseField('learning_rate', '')).toEqual({ error: 'expected a number, got ""' });
    expect(parseField('num_generations', '2.5')).toEqual({ error: 'expected an integer, got 2.5' });
    expect(parseField('mask_truncated_completions', 'yes')).toEqual({ error: 'expected true or false, got "yes"' });
    expect(parseField('mask_truncated_completions', 'false')).toEqual({ value: false });
    expect(parseField('num_generations', '1')).toEqual({ error: 'must be ≥ 2, got 1' });
    expect(parseField('top_p', '0')).toEqual({ error: 'must be > 0, got 0' });
    expect(parseField('lora_target_modules', '["q_proj", "nope"]')).toMatchObject({ error: expect.stringMatching(/unknown module 'nope'/) });
    expect(parseField('chat_template_kwargs', '{oops')).toMatchObject({ error: expect.stringMatching(/^not valid JSON/) });
    expect(parseField('epsilon_high', 'null')).toEqual({ value: null });
    expect(parseField('learning_rate', 'null')).toEqual({ error: 'null is not allowed' });
    expect(parseField('learning_rate', ' 5e-3 ')).toEqual({ value: 5e-3 });
    // Checks between keys, against the defaults: epsilon's clip bound.
    expect(parseField('epsilon', '1.5')).toMatchObject({ error: expect.stringMatching(/^must be < 1/) });
  });

  it('collects every field error at once, and puts a cross-field error beside the field it names', () => {
    const bad = checkFields({ learning_rate: 'abc', beta: 'x', num_generations: '4' });
    expect(bad.config).toBeNull();
    expect(bad.errors).toEqual({ learning_rate: 'expected a number, got "abc"', beta: 'expected a number, got "x"' });
    const cross = checkFields({ num_generations: '3', per_device_train_batch_size: '8' });
    expect(cross.config).toBeNull();
    expect(cross.formError).toMatch(/divisible by num_generations \(3\)/);
    expect(Object.keys(cross.errors)).toEqual(['num_generations']);
    const ok = checkFields({ num_generations: '4', per_device_train_batch_size: '8', learning_rate: '1e-3' });
    expect(ok.errors).toEqual({});
    expect(ok.config?.learning_rate).toBe(1e-3);
  });
});

describe('one text→config parser for both front ends', () => {
  // The `train` CLI's config flags: every key a string option, bool keys may stand alone (src/cli/train.ts).
  const OPTIONS: OptionTable = Object.fromEntries(Object.keys(CONFIG_KEYS).map((k) => [k, { type: 'string' as const }]));
  const fromFlags = (values: Record<string, string>) => {
    const argv = Object.entries(values).flatMap(([k, v]) => [`--${k}=${v}`]);
    return configFromText(parseCli(argv, OPTIONS, { bareTrue: BOOL_KEYS }).values as Record<string, string>, configFromObject({}));
  };

  it('gives the same config from the same texts in the setup form and on the command line', () => {
    const texts = {
      num_generations: '4',
      per_device_train_batch_size: '4',
      learning_rate: ' 3e-5',
      mask_truncated_completions: '1',
      log_completions: '0',
      use_bias_correction_kl: 'True',
      scale_rewards: 'false',
      lora_target_modules: 'q_proj, v_proj',
      vision_lora_target_modules: '[]',
      reward_weights: '1,0.5',
      epsilon_high: 'None',
      max_context_images: 'null',
      chat_template_kwargs: '{"enable_thinking": false}',
      rollout_scheduler: 'lockstep',
      max_steps: '-1',
    };
    const form = checkFields(texts);
    expect(form.errors).toEqual({});
    expect(form.config).toEqual(fromFlags(texts));
    expect(form.config).toMatchObject({ mask_truncated_completions: true, log_completions: false, scale_rewards: 'none', lora_target_modules: ['q_proj', 'v_proj'], reward_weights: [1, 0.5], epsilon_high: null });
  });

  it('refuses the same texts in both, with the same words', () => {
    for (const [key, text] of [['mask_truncated_completions', 'yes'], ['num_generations', '2.5'], ['lora_target_modules', 'q_proj,nope'], ['reward_weights', '1,x'], ['loss_type', 'ppo']] as const) {
      const form = parseField(key, text);
      expect(form, `${key}=${text}`).toHaveProperty('error');
      expect(() => fromFlags({ [key]: text }), `${key}=${text}`).toThrow(`${key}: ${(form as { error: string }).error}`);
    }
  });
});

const view = (rewards: Record<string, number | null>, error?: string): RolloutView => ({ group: 0, index: 0, turns: [], reward: null, advantage: 0, rewards, ...(error ? { error } : {}) });

describe('success rate', () => {
  it('is the fraction of rollouts whose outcome (first) reward is positive; unscorable ones fail', () => {
    expect(successRate([view({ caught: 1, progress: 0.2 }), view({ caught: 0, progress: 0.9 }), view({ caught: 1 }, 'env died'), view({ caught: null })])).toBe(0.25);
    expect(successRate([])).toBeNull();
  });
});

describe('axis tick labels', () => {
  it('uses just enough digits that neighbouring labels differ', () => {
    expect(distinctTickLabels([5.5451, 5.5452, 5.5453])).toEqual(['5.5451', '5.5452', '5.5453']);
    expect(distinctTickLabels([0, 0.5, 1])).toEqual(['0', '0.5', '1']);
    expect(distinctTickLabels([0, 1000, 2000])).toEqual(['0', '1000', '2000']);
    expect(distinctTickLabels([0.00001, 0.00002])).toEqual(['1.0e-5', '2.0e-5']);
    // Never a rounded label that misstates its tick.
    expect(distinctTickLabels([0, 0.25, 0.5, 0.75, 1])).toEqual(['0', '0.25', '0.5', '0.75', '1']);
    expect(distinctTickLabels([0, 2.5, 5])).toEqual(['0', '2.5', '5']);
    expect(distinctTickLabels([6.22278, 6.222785, 6.22279])).toEqual(['6.22278', '6.222785', '6.22279']);
  });
});
