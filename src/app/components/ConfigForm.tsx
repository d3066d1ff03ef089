// TRL's config keys with their defaults and one-line help, edited as text and validated by the
// same code the CLI uses (src/rl/config.ts).
import { CONFIG_KEYS, DEFAULT_CONFIG, type GRPOConfig } from '../../rl/config.ts';

const GROUPS: { title: string; keys: (keyof GRPOConfig)[] }[] = [
  { title: 'Batch and sampling', keys: ['num_generations', 'per_device_train_batch_size', 'gradient_accumulation_steps', 'max_completion_length', 'max_tool_calling_iterations', 'temperature', 'top_p', 'top_k'] },
  { title: 'Optimization', keys: ['learning_rate', 'lr_scheduler_type', 'warmup_steps', 'max_steps', 'weight_decay', 'max_grad_norm', 'seed'] },
  { title: 'Loss', keys: ['loss_type', 'beta', 'epsilon', 'epsilon_high', 'scale_rewards', 'num_iterations', 'mask_truncated_completions'] },
  { title: 'LoRA', keys: ['train_mode', 'lora_r', 'lora_alpha', 'lora_target_modules'] },
  { title: 'SFT warm-up', keys: ['sft_steps', 'sft_learning_rate', 'sft_batch_size'] },
  { title: 'Rollouts', keys: ['rollout_scheduler', 'episode_timeout_s', 'env_call_timeout_s', 'mask_stubborn_steps', 'stubborn_threshold'] },
  { title: 'Logging', keys: ['save_steps', 'chat_template_kwargs'] },
];

const show = (v: unknown) => (v === null ? 'null' : typeof v === 'object' ? JSON.stringify(v) : String(v));

export function ConfigForm({ values, onChange, error }: { values: Record<string, string>; onChange: (key: string, text: string) => void; error: string | null }) {
  return (
    <section className="panel config">
      <h3>Config <span className="muted">(TRL GRPOConfig names)</span></h3>
      {GROUPS.map((g) => (
        <fieldset key={g.title}>
          <legend>{g.title}</legend>
          {g.keys.map((k) => {
            const spec = CONFIG_KEYS[k];
            return (
              <label key={k} className="config-row" title={spec.help}>
                <code>{k}</code>
                {spec.choices ? (
                  <select value={values[k] ?? show(DEFAULT_CONFIG[k])} onChange={(e) => onChange(k, e.target.value)}>
                    {spec.choices.map((c) => <option key={c}>{c}</option>)}
                  </select>
                ) : (
                  <input aria-label={k} value={values[k] ?? show(DEFAULT_CONFIG[k])} onChange={(e) => onChange(k, e.target.value)} />
                )}
                <span className="help">{spec.help}</span>
              </label>
            );
          })}
        </fieldset>
      ))}
      {error && <p className="error" role="alert">{error}</p>}
    </section>
  );
}

/** Turns the form's text values into typed config values (the validation happens in configFromObject). */
export function parseFormValues(values: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, text] of Object.entries(values)) {
    const spec = CONFIG_KEYS[k as keyof GRPOConfig];
    if (!spec) continue;
    const t = text.trim();
    if (t === 'null' && spec.nullable) out[k] = null;
    else if (spec.kind === 'int' || spec.kind === 'number') out[k] = t === '' ? NaN : Number(t);
    else if (spec.kind === 'bool') out[k] = t === 'true';
    else if (spec.kind === 'json') {
      try {
        out[k] = JSON.parse(t);
      } catch {
        throw new Error(`${k}: not valid JSON: ${t}`);
      }
    } else out[k] = t;
  }
  return out;
}

export const formValuesOf = (config: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(Object.entries(config).filter(([k]) => k in CONFIG_KEYS).map(([k, v]) => [k, show(v)]));
