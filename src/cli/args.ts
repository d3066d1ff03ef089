// Argument parsing shared by every `webgrpo` command: Node's util.parseArgs (strict), with its
// errors rewritten to name the flag the way our help texts do ("--model needs a value",
// "unknown option '--bogus' (see --help)", "… (did you mean --learning_rate?)"), and number helpers
// that say which flag was wrong.

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { closestName } from '../model/closest-name.ts';

export type OptionTable = NonNullable<ParseArgsConfig['options']>;

/** `--help` / `-h`, added to every command's table. */
const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const;

export interface Parsed {
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
  help: boolean;
}

/**
 * `--learning-rate` → ` (did you mean --learning_rate?)`, `--max_step` → ` (did you mean --max_steps?)`:
 * the known flag nearest by edit distance, other separators and case not counting.
 */
function suggestion(flag: string | undefined, options: OptionTable): string {
  if (!flag) return '';
  const norm = (k: string) => k.replace(/^-+/, '').replace(/[-_]/g, '').toLowerCase();
  const byNorm = new Map(Object.keys(options).map((k) => [norm(k), k]));
  const close = closestName(norm(flag), byNorm.keys());
  return close !== null ? ` (did you mean --${byNorm.get(close)}?)` : '';
}

function rewrite(err: unknown, options: OptionTable): Error {
  const e = err as Error & { code?: string };
  const flag = /'(?:-\w, )?(-{1,2}[^' <]+)/.exec(e.message)?.[1];
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return new Error(`unknown option '${flag ?? e.message}' (see --help)${suggestion(flag, options)}`);
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (/does not take an argument/.test(e.message)) return new Error(`${flag} takes no value`);
      if (/ambiguous/.test(e.message)) return new Error(`${flag} needs a value (write ${flag}=VALUE for a value starting with '-')`);
      return new Error(`${flag} needs a value`);
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new Error(`unexpected argument ${/'([^']*)'/.exec(e.message)?.[1] ?? ''} (options are written --name value; see --help)`);
    default:
      return e;
  }
}

/** `--max_steps -1` → `--max_steps=-1`: parseArgs would take a value starting with '-' for a flag. */
function joinNegativeNumbers(argv: string[], options: OptionTable): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const name = /^--([^=]+)$/.exec(argv[i]!)?.[1];
    const next = argv[i + 1];
    if (name && options[name]?.type === 'string' && next !== undefined && /^-(\d|\.\d)/.test(next)) {
      out.push(`${argv[i]}=${next}`);
      i++;
    } else {
      out.push(argv[i]!);
    }
  }
  return out;
}

/** `--log_completions` standing alone → `--log_completions=true`, for the string options named in `bare`. */
function bareTrue(argv: string[], bare: ReadonlySet<string>): string[] {
  return argv.map((a, i) => {
    const name = /^--([^=]+)$/.exec(a)?.[1];
    const next = argv[i + 1];
    return name && bare.has(name) && (next === undefined || next.startsWith('--')) ? `${a}=true` : a;
  });
}

export interface ParseCliOptions {
  positionals?: boolean;
  /**
   * String options that may also stand alone, meaning `true` (TRL's bool flags: `--log_completions`
   * and `--log_completions false` both parse, as with TRL's argument parser).
   */
  bareTrue?: ReadonlySet<string>;
}

/** Strict parse of `argv` against `options` (+ --help); unknown flags and missing values throw by name. */
export function parseCli(argv: string[], options: OptionTable, opts: ParseCliOptions = {}): Parsed {
  let out;
  try {
    const args = joinNegativeNumbers(opts.bareTrue ? bareTrue(argv, opts.bareTrue) : argv, options);
    out = parseArgs({ args, options: { ...options, ...HELP_OPTION }, strict: true, allowPositionals: opts.positionals ?? false });
  } catch (err) {
    throw rewrite(err, options);
  }
  const { help, ...values } = out.values as Record<string, string | boolean | undefined>;
  return { values, positionals: out.positionals, help: help === true };
}

/** A string option's value, or undefined. */
export function str(p: Parsed, name: string): string | undefined {
  const v = p.values[name];
  return typeof v === 'string' ? v : undefined;
}

export function num(text: string, flag: string): number {
  const v = Number(text);
  if (text.trim() === '' || !Number.isFinite(v)) throw new Error(`${flag} needs a number, got '${text}'`);
  return v;
}

/** An integer ≥ min, or `dflt` when the flag is absent. */
export function intOption(p: Parsed, name: string, dflt: number, min: number): number {
  const text = str(p, name);
  if (text === undefined) return dflt;
  const v = num(text, `--${name}`);
  if (!Number.isInteger(v) || v < min) throw new Error(`--${name} must be an integer ≥ ${min}, got '${text}'`);
  return v;
}

/** A finite number, or `dflt` when the flag is absent. */
export function numOption(p: Parsed, name: string, dflt: number): number {
  const text = str(p, name);
  return text === undefined ? dflt : num(text, `--${name}`);
}

/** One of `choices`, or `dflt` when the flag is absent. */
export function choiceOption<T extends string>(p: Parsed, name: string, choices: readonly T[], dflt: T): T {
  const text = str(p, name);
  if (text === undefined) return dflt;
  if (!choices.includes(text as T)) throw new Error(`--${name} must be ${choices.join(', ').replace(/, ([^,]*)$/, ' or $1')}, got '${text}'`);
  return text as T;
}
