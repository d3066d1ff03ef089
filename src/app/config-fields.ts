// The setup form's fields as the user types them: each text checked on its own (so the error shows
// beside its field at once), then the whole config checked by the same code the CLI uses
// (src/rl/config.ts), with a cross-field error placed beside the first field it names.
import { CONFIG_KEYS, configFromObject, type GRPOConfig } from '../rl/config.ts';

export type FieldErrors = Record<string, string>;

const isKey = (k: string): k is keyof GRPOConfig => Object.prototype.hasOwnProperty.call(CONFIG_KEYS, k);

/** One field's text as a typed value, or the reason it is not one (worded for a person, without the key). */
export function parseField(key: keyof GRPOConfig, text: string): { value: unknown } | { error: string } {
  const spec = CONFIG_KEYS[key];
  const t = text.trim();
  if (t === 'null' || t === 'None') return spec.nullable ? { value: null } : { error: 'cannot be null here' };
  let value: unknown;
  switch (spec.kind) {
    case 'int':
    case 'number':
      if (t === '' || !Number.isFinite(Number(t))) return { error: spec.kind === 'int' ? 'expected a whole number' : 'expected a number' };
      if (spec.kind === 'int' && !Number.isInteger(Number(t))) return { error: 'expected a whole number' };
      value = Number(t);
      break;
    case 'bool':
      if (t === 'true' || t === 'True') value = true;
      else if (t === 'false' || t === 'False') value = false;
      else return { error: 'expected true or false' };
      break;
    case 'json':
      try {
        value = JSON.parse(t);
      } catch {
        return { error: 'not valid JSON' };
      }
      break;
    default:
      value = t;
  }
  // Ranges, choices and shapes: the CLI's own checks, applied to this key alone.
  try {
    configFromObject({ [key]: value });
  } catch (err) {
    const message = (err as Error).message;
    if (message.startsWith(`${key}: `)) return { error: message.slice(key.length + 2) };
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
