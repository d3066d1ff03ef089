// TRL's config keys with their defaults and one-line help, edited as text and checked as the user
// types (src/app/config-fields.ts, which defers to the CLI's own checks): a field's error sits beside
// it, in place of its help, and the field is outlined.
import { CONFIG_KEYS, DEFAULT_CONFIG, type GRPOConfig } from '../../rl/config.ts';

const GROUPS: { title: string; keys: (keyof GRPOConfig)[] }[] = [
  { title: 'Batch and sampling', keys: ['num_generations', 'per_device_train_batch_size', 'gradient_accumulation_steps', 'max_completion_length', 'max_tool_calling_iterations', 'temperature', 'top_p', 'top_k'] },
  { title: 'Optimization', keys: ['learning_rate', 'lr_scheduler_type', 'warmup_steps', 'max_steps', 'weight_decay', 'max_grad_norm', 'seed'] },
  { title: 'Loss', keys: ['loss_type', 'beta', 'epsilon', 'epsilon_high', 'scale_rewards', 'num_iterations', 'mask_truncated_completions'] },
  { title: 'LoRA', keys: ['train_mode', 'freeze_vision_tower', 'lora_r', 'lora_alpha', 'lora_target_modules', 'vision_lora_target_modules'] },
  { title: 'SFT warm-up', keys: ['sft_steps', 'sft_learning_rate', 'sft_batch_size'] },
  { title: 'Rollouts', keys: ['rollout_scheduler', 'episode_timeout_s', 'env_call_timeout_s', 'max_concurrent_envs', 'mask_stubborn_steps', 'stubborn_threshold', 'max_context_images'] },
  { title: 'Evaluation (held-out split)', keys: ['eval_strategy', 'eval_steps', 'eval_on_start', 'num_generations_eval', 'per_device_eval_batch_size'] },
  { title: 'Logging', keys: ['save_steps', 'chat_template_kwargs'] },
];

const show = (v: unknown) => (v === null ? 'null' : typeof v === 'object' ? JSON.stringify(v) : String(v));

export function ConfigForm({ values, onChange, errors, error }: { values: Record<string, string>; onChange: (key: string, text: string) => void; errors: Record<string, string>; error: string | null }) {
  return (
    <section className="panel config">
      <h3>Config <span className="muted">(TRL GRPOConfig names)</span></h3>
      {GROUPS.map((g) => (
        <fieldset key={g.title}>
          <legend>{g.title}</legend>
          {g.keys.map((k) => {
            const spec = CONFIG_KEYS[k];
            const bad = errors[k];
            const note = `note-${k}`;
            return (
              <label key={k} className={bad ? 'config-row invalid' : 'config-row'} title={spec.help}>
                <code>{k}</code>
                {spec.choices ? (
                  <select value={values[k] ?? show(DEFAULT_CONFIG[k])} onChange={(e) => onChange(k, e.target.value)}>
                    {spec.choices.map((c) => <option key={c}>{c}</option>)}
                  </select>
                ) : (
                  <input aria-label={k} aria-invalid={bad ? true : undefined} aria-describedby={note} value={values[k] ?? show(DEFAULT_CONFIG[k])} onChange={(e) => onChange(k, e.target.value)} />
                )}
                {bad ? (
                  <span id={note} className="field-error" role="alert" data-testid={`field-error-${k}`}>{bad}</span>
                ) : (
                  <span id={note} className="help">{spec.help}</span>
                )}
              </label>
            );
          })}
        </fieldset>
      ))}
      {error && <p className="error" role="alert">{error}</p>}
    </section>
  );
}

export const formValuesOf = (config: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(Object.entries(config).filter(([k]) => k in CONFIG_KEYS).map(([k, v]) => [k, show(v)]));
