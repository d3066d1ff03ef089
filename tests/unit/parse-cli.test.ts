// The CLIs' shared util.parseArgs wrapper: errors name the flag; negative numbers are values.

import { describe, expect, it } from 'vitest';
import { choiceOption, intOption, numOption, parseCli } from '../../src/cli/args.ts';

const OPTIONS = { model: { type: 'string' }, temperature: { type: 'string' }, n: { type: 'string' }, queue: { type: 'boolean' } } as const;

describe('parseCli', () => {
  it('parses strings, booleans and --help; negative numbers are values', () => {
    const p = parseCli(['--model', 'm', '--temperature', '-0.5', '--queue', '--n=3'], OPTIONS);
    expect(p.values).toEqual({ model: 'm', temperature: '-0.5', queue: true, n: '3' });
    expect(p.help).toBe(false);
    expect(numOption(p, 'temperature', 1)).toBe(-0.5);
    expect(intOption(p, 'n', 1, 1)).toBe(3);
    expect(parseCli(['-h'], OPTIONS).help).toBe(true);
  });

  it('names the flag in every error', () => {
    expect(() => parseCli(['--bogus', '1'], OPTIONS)).toThrow("unknown option '--bogus' (see --help)");
    expect(() => parseCli(['--model'], OPTIONS)).toThrow('--model needs a value');
    expect(() => parseCli(['--model', '--n', '2'], OPTIONS)).toThrow("--model needs a value (write --model=VALUE for a value starting with '-')");
    expect(() => parseCli(['--queue=yes'], OPTIONS)).toThrow('--queue takes no value');
    expect(() => parseCli(['stray'], OPTIONS)).toThrow(/unexpected argument stray/);
    expect(() => intOption(parseCli(['--n', '0'], OPTIONS), 'n', 1, 1)).toThrow("--n must be an integer ≥ 1, got '0'");
    expect(() => numOption(parseCli(['--temperature', 'hot'], OPTIONS), 'temperature', 1)).toThrow("--temperature needs a number, got 'hot'");
    expect(() => choiceOption(parseCli(['--model', 'x'], OPTIONS), 'model', ['a', 'b', 'c'] as const, 'a')).toThrow("--model must be a, b or c, got 'x'");
  });
});
