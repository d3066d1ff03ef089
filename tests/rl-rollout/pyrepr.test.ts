import { describe, expect, it } from 'vitest';
import { pyRepr, pyStr } from '../../src/pyrepr.ts';

describe('pyStr / pyRepr (grpo-semantics.md §6)', () => {
  it('str() of scalars', () => {
    expect(pyStr(1)).toBe('1');
    expect(pyStr(0.5)).toBe('0.5');
    expect(pyStr(true)).toBe('True');
    expect(pyStr(null)).toBe('None');
    expect(pyStr('plain text\nkept')).toBe('plain text\nkept');
  });

  it('dicts use the Python repr', () => {
    expect(pyStr({ error: 'Game over.' })).toBe("{'error': 'Game over.'}");
    expect(pyStr({ error: "Invalid direction 'up': must be 'left' or 'right'." })).toBe(
      `{'error': "Invalid direction 'up': must be 'left' or 'right'."}`,
    );
    expect(pyStr({ error: 'a\nb "q" \'s\'' })).toBe(`{'error': 'a\\nb "q" \\'s\\''}`);
  });

  it('quotes and escapes strings like repr()', () => {
    expect(pyRepr('it\'s')).toBe(`"it's"`);
    expect(pyRepr('say "hi"')).toBe(`'say "hi"'`);
    expect(pyRepr('back\\slash\ttab\rcr')).toBe(`'back\\\\slash\\ttab\\rcr'`);
    expect(pyRepr('héllo ✓ 🎉')).toBe(`'héllo ✓ 🎉'`);
    expect(pyRepr('\u0000\u007f\u200b')).toBe(`'\\x00\\x7f\\u200b'`);
  });

  it('numbers, lists and nesting', () => {
    expect(pyRepr([1, 2.25, 'a', null, false, { k: [] }])).toBe("[1, 2.25, 'a', None, False, {'k': []}]");
    expect(pyRepr(1e-5)).toBe('1e-05');
    expect(pyRepr(1.5e-7)).toBe('1.5e-07');
    expect(pyRepr(0.0001)).toBe('0.0001');
    expect(pyRepr(0.30000000000000004)).toBe('0.30000000000000004');
    expect(pyRepr(1.5e20)).toBe('150000000000000000000');
    expect(pyRepr(NaN)).toBe('nan');
    expect(pyRepr(-Infinity)).toBe('-inf');
    expect(pyRepr({})).toBe('{}');
  });
});
