// The setup form's fields as the user types them: each text read by the CLI's own parser
// (configValueFromText in src/rl/config.ts: the same text gives the same value in both front ends) and
// checked on its own, so the error shows beside its field at once; then the whole config checked by the
// same code the CLI uses, with a cross-field error placed beside the first field it names.
import { CONFIG_KEYS, ConfigError, configFromObject, configValueFromText, type GRPOConfig } from '../rl/config.ts';

export type FieldErrors = Record<string, string>;

const isKey = (k: string): k is keyof GRPOConfig => Object.prototype.hasOwnProperty.call(CONFIG_KEYS, k);

/** The parser's message without its `key: ` prefix: the form shows it beside the key's field. */
function withoutKey(key: string, err: unknown): string | null {
  if (!(err instanceof ConfigError)) throw err;
  return err.message.startsWith(`${key}: `) ? err.message.slice(key.length + 2) : null;
}

/** One field's text as a typed value, or the reason it is not one (the parser's words, without the key). */
export function parseField(key: keyof GRPOConfig, text: string): { value: unknown } | { error: string } {
  let value: unknown;
  try {
    value = configValueFromText(key, text);
  } catch (err) {
    return { error: withoutKey(key, err) ?? (err as Error).message };
  }
  // The checks between keys that concern this one against the defaults (epsilon < 1, min_p unsupported, …).
  try {
    configFromObject({ [key]: value });
  } catch (err) {
    const own = withoutKey(key, err);
    if (own !== null) return { error: own };
  }
  return { value };
}

/** Every field's error, plus the config when all of it is valid. */
export function checkFields(values: Record<string, string>): { errors: FieldErrors; config: GRPOConfig | null; formError: string | null } {
  const errors: FieldErrors = {};
  const typed: Record<string, unknown> = {};
  for (const [k, text] of Object.entries(values)) {
    if (!isKey(k)) continue;
    const r = parseField(k, text);
    if ('error' in r) errors[k] = r.error;
    else typed[k] = r.value;
  }
  if (Object.keys(errors).length) return { errors, config: null, formError: null };
  try {
    return { errors, config: configFromObject(typed), formError: null };
  } catch (err) {
    const message = (err as Error).message;
    // "generation_batch_size (8) must be divisible by num_generations (3)": beside the first named field shown.
    const named = Object.keys(values).map((k) => ({ k, at: message.search(new RegExp(`\\b${k}\\b`)) })).filter((x) => x.at >= 0).sort((a, b) => a.at - b.at);
    if (named.length) errors[named[0]!.k] = message;
    return { errors, config: null, formError: message };
  }
}
