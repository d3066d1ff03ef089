// Recipes for the built-in environments: TRL's example configs (grpo-semantics.md §14), scaled to
// what a browser tab trains in minutes. The tiny built-in model needs a higher learning rate and an
// SFT warm-up before GRPO has any reward signal to work with.
import type { BuiltinEnvName } from './worker-api.ts';

export interface Preset {
  label: string;
  env: BuiltinEnvName;
  config: Record<string, unknown>;
  description: string;
}

const COMMON = { chat_template_kwargs: { enable_thinking: false }, logging_steps: 1, log_completions: true, rollout_scheduler: 'continuous' };

export const PRESETS: Record<BuiltinEnvName, Preset> = {
  echo: {
    label: 'echo',
    env: 'echo',
    description: 'Call echo(message); reward = 0.1 × length of the echoed message (TRL examples/openenv/echo.py).',
    config: { ...COMMON, num_generations: 4, per_device_train_batch_size: 8, max_completion_length: 128, max_tool_calling_iterations: 1, learning_rate: 1e-5, max_steps: 50, sft_steps: 0 },
  },
  catch: {
    label: 'catch',
    env: 'catch',
    description: 'Move the paddle under the falling ball with move(direction)/stay(); +1 for a catch (TRL catch.py).',
    config: { ...COMMON, num_generations: 8, per_device_train_batch_size: 8, max_completion_length: 512, max_tool_calling_iterations: 10, learning_rate: 1e-5, max_steps: 50, sft_steps: 20 },
  },
  wordle: {
    label: 'wordle',
    env: 'wordle',
    description: 'Guess a 5-letter word in 6 tries with guess("[abcde]"); reward on a win (TRL wordle.py).',
    config: { ...COMMON, num_generations: 4, per_device_train_batch_size: 4, max_completion_length: 1024, max_tool_calling_iterations: 6, learning_rate: 1e-6, max_steps: 100, sft_steps: 10 },
  },
  browsergym: {
    label: 'web: click-test',
    env: 'browsergym',
    description: "Click the button on a web page, read through its accessibility tree, with click/fill/send_keys/scroll/noop; 1.0 when the page says solved (TRL browsergym_llm.py, headless Chromium on the env-server).",
    config: { ...COMMON, num_generations: 4, per_device_train_batch_size: 4, max_completion_length: 1024, max_tool_calling_iterations: 10, learning_rate: 5e-6, temperature: 0.7, top_k: 50, max_steps: 50, sft_steps: 10 },
  },
};

/** The tiny built-in model learns only with a much larger step size and short episodes. */
export const TINY_MODEL_OVERRIDES: Record<string, unknown> = {
  learning_rate: 5e-3,
  sft_learning_rate: 1e-2,
  max_completion_length: 96,
  num_generations: 4,
  per_device_train_batch_size: 4,
  max_steps: 10,
  lora_r: 8,
  lora_alpha: 16,
};
