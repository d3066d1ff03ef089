// The run defaults of the built-in tasks, one set for the `train` CLI and the app: TRL's example
// settings (grpo-semantics.md §14) scaled to what a browser tab trains in minutes, in two tiers. A
// preset is a value — the same keys whatever was clicked before — chosen by the task and by the
// size of the model:
//  - 'tiny': the built-in demo model and other toy models (< TINY_MODEL_MAX_PARAMS parameters). Full
//    fine-tuning at a high learning rate, catch through its compact variant; sized so the demo run
//    (the built-in demo model, untouched) ends clearly higher than it started within minutes on a
//    CPU-emulated adapter (tests/e2e/demo-learns-catch.test.ts);
//  - 'full-size': real Qwen3 checkpoints. LoRA at small learning rates, TRL's prompts and budgets.

import { qwen3ParamCount } from '../../model/qwen3-tensors.ts';
import type { ModelConfig } from '../../model/types.ts';

/** A built-in env's preset, or a task's own where one env serves two tasks (browsergym-vlm plays browsergym). */
export type PresetEnv = 'echo' | 'catch' | 'wordle' | 'browsergym' | 'browsergym-vlm';
export type ModelTier = 'tiny' | 'full-size';

/** Models below this many parameters get the 'tiny' tier (the built-in ones have ~0.1 M). */
export const TINY_MODEL_MAX_PARAMS = 20_000_000;

export function modelTier(params: number): ModelTier {
  return params < TINY_MODEL_MAX_PARAMS ? 'tiny' : 'full-size';
}

export function modelTierOf(config: ModelConfig): ModelTier {
  return modelTier(qwen3ParamCount(config));
}

const COMMON = { chat_template_kwargs: { enable_thinking: false }, logging_steps: 1, log_completions: true };

/** The demo runs: full fine-tuning of the built-in demo model, no warm-up (the model already speaks the format). */
const TINY_COMMON = { ...COMMON, train_mode: 'full', sft_steps: 0, sft_learning_rate: 1e-2, sft_batch_size: 4, lr_scheduler_type: 'constant', temperature: 1, save_steps: 10 };

export const PRESET_CONFIGS: Record<PresetEnv, Record<ModelTier, Record<string, unknown>>> = {
  echo: {
    'full-size': { ...COMMON, num_generations: 4, per_device_train_batch_size: 8, max_completion_length: 128, max_tool_calling_iterations: 1, learning_rate: 1e-5, max_steps: 50, sft_steps: 0 },
    tiny: { ...TINY_COMMON, num_generations: 8, per_device_train_batch_size: 16, max_completion_length: 128, max_tool_calling_iterations: 1, learning_rate: 5e-4, max_steps: 12 },
  },
  catch: {
    'full-size': { ...COMMON, num_generations: 8, per_device_train_batch_size: 8, max_completion_length: 512, max_tool_calling_iterations: 10, learning_rate: 1e-5, max_steps: 50, sft_steps: 20 },
    // 8 groups a step at lr 2e-3: 2 groups (batch 16) or lr 5e-4 only drift (BENCHMARKS.md, demo catch recipes).
    tiny: { ...TINY_COMMON, num_generations: 8, per_device_train_batch_size: 64, max_completion_length: 400, max_tool_calling_iterations: 10, learning_rate: 2e-3, max_steps: 12 },
  },
  wordle: {
    'full-size': { ...COMMON, num_generations: 4, per_device_train_batch_size: 4, max_completion_length: 1024, max_tool_calling_iterations: 6, learning_rate: 1e-6, max_steps: 100, sft_steps: 10 },
    // The demo model never saw wordle: it needs the scripted solver's warm-up first.
    tiny: { ...TINY_COMMON, num_generations: 4, per_device_train_batch_size: 4, max_completion_length: 400, max_tool_calling_iterations: 6, learning_rate: 5e-4, max_steps: 10, sft_steps: 30 },
  },
  browsergym: {
    // TRL's browsergym_llm.py settings (10-step cap, temperature 0.7, top_k 50).
    'full-size': { ...COMMON, num_generations: 4, per_device_train_batch_size: 4, max_completion_length: 1024, max_tool_calling_iterations: 10, learning_rate: 5e-6, temperature: 0.7, top_k: 50, max_steps: 50, sft_steps: 10 },
    // The page trees make ~3k-token prompts: slow on a CPU adapter, and the demo model never saw a web page.
    tiny: { ...TINY_COMMON, num_generations: 4, per_device_train_batch_size: 4, max_completion_length: 256, max_tool_calling_iterations: 10, learning_rate: 5e-4, max_steps: 10, sft_steps: 10 },
  },
  'browsergym-vlm': {
    // TRL's browsergym.py settings (10-step cap; temperature and top_k at GRPOConfig's defaults), the
    // context holding the last two screenshots. No warm-up: the scripted solver's transcripts have no screenshots.
    'full-size': { ...COMMON, num_generations: 4, per_device_train_batch_size: 4, max_completion_length: 1024, max_tool_calling_iterations: 10, learning_rate: 5e-6, max_steps: 50, sft_steps: 0, max_context_images: 2 },
    tiny: { ...TINY_COMMON, num_generations: 4, per_device_train_batch_size: 4, max_completion_length: 256, max_tool_calling_iterations: 10, learning_rate: 5e-4, max_steps: 10, max_context_images: 2 },
  },
};

export function isPresetEnv(name: string): name is PresetEnv {
  return name in PRESET_CONFIGS;
}

/** The preset's GRPOConfig keys (over DEFAULT_CONFIG) for a task and a model tier. */
export function presetConfig(env: PresetEnv, tier: ModelTier): Record<string, unknown> {
  return structuredClone(PRESET_CONFIGS[env][tier]);
}
