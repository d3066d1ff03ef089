import type { Page } from 'playwright-core';

// The run the end-to-end tests train: the catch recipe shrunk to seconds per step on SwiftShader
// (one group of two rollouts, one tool call each, a handful of tokens), TRL names throughout.
export const E2E_RUN_CONFIG: Record<string, unknown> = {
  // The built-in models' presets fine-tune fully; these tests train and download a LoRA adapter.
  train_mode: 'lora',
  num_generations: 2,
  per_device_train_batch_size: 2,
  max_completion_length: 24,
  max_tool_calling_iterations: 1,
  max_steps: 2,
  learning_rate: 5e-3,
  lora_r: 4,
  lora_alpha: 8,
  sft_steps: 1,
  sft_batch_size: 2,
  sft_learning_rate: 1e-2,
  save_steps: 1,
  log_completions: true,
  logging_steps: 1,
  chat_template_kwargs: { enable_thinking: false },
};

/** Types `config` into the setup page's form: text fields by their label, choices (e.g. train_mode) by their select. */
export async function fillConfig(page: Page, config: Record<string, unknown>): Promise<void> {
  for (const [key, value] of Object.entries(config)) {
    const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
    const input = page.getByLabel(key, { exact: true });
    if ((await input.count()) === 1) {
      await input.fill(text);
      continue;
    }
    const select = page.locator('label.config-row', { has: page.locator('code', { hasText: new RegExp(`^${key}$`) }) }).locator('select');
    if ((await select.count()) === 1) await select.selectOption(text);
  }
}
