import { describe, expect, it } from 'vitest';
import { actionJsonSchema, actionModel, requireValidAction, validateModel } from '../../env-server/envs/validation.ts';
import { BUILTIN_ENVS } from '../../env-server/envs/index.ts';
import { BASE_STATE_SCHEMA } from '../../env-server/envs/json-schema.ts';
import { seededRng } from '../../env-server/envs/rng.ts';

const MODEL = actionModel('ProbeAction', 'A model exercising every field kind.', [
  { name: 'count', type: { kind: 'int' } },
  { name: 'word', type: { kind: 'string', minLength: 2 } },
  { name: 'mode', type: { kind: 'string' }, default: 'fast' },
]);

function errorsOf(data: unknown): unknown[] {
  const check = validateModel(MODEL, data);
  if (check.ok) throw new Error(`expected errors for ${JSON.stringify(data)}`);
  return check.errors;
}

describe('pydantic-style action validation', () => {
  it('coerces ints in lax mode like pydantic', () => {
    const count = (value: unknown): unknown => {
      const check = validateModel(MODEL, { count: value, word: 'ok' });
      return check.ok ? check.action.count : check.errors[0]!.type;
    };
    expect(count(4)).toBe(4);
    expect(count(4.0)).toBe(4);
    expect(count('  -12 ')).toBe(-12);
    expect(count('+7')).toBe(7);
    expect(count('1_000')).toBe(1000);
    expect(count('3.00')).toBe(3);
    expect(count(true)).toBe(1);
    expect(count(false)).toBe(0);
    expect(count('1__0')).toBe('int_parsing');
    expect(count('')).toBe('int_parsing');
    expect(count('0x10')).toBe('int_parsing');
    expect(count(2.5)).toBe('int_from_float');
    expect(count(null)).toBe('int_type');
    expect(count([1])).toBe('int_type');
    expect(count({})).toBe('int_type');
  });

  it('measures string length in code points and pluralizes the message', () => {
    expect(validateModel(MODEL, { count: 1, word: '😀a' }).ok).toBe(true);
    expect(errorsOf({ count: 1, word: '😀' })).toEqual([
      {
        type: 'string_too_short',
        loc: ['word'],
        msg: 'String should have at least 2 characters',
        input: '😀',
        ctx: { min_length: 2 },
        url: 'https://errors.pydantic.dev/2.13/v/string_too_short',
      },
    ]);
  });

  it('reports field errors in declaration order (metadata first), then extras in input order', () => {
    const data = { zeta: 1, word: 5, metadata: null, alpha: 2 };
    expect(errorsOf(data)).toEqual([
      { type: 'dict_type', loc: ['metadata'], msg: 'Input should be a valid dictionary', input: null, url: 'https://errors.pydantic.dev/2.13/v/dict_type' },
      { type: 'missing', loc: ['count'], msg: 'Field required', input: data, url: 'https://errors.pydantic.dev/2.13/v/missing' },
      { type: 'string_type', loc: ['word'], msg: 'Input should be a valid string', input: 5, url: 'https://errors.pydantic.dev/2.13/v/string_type' },
      { type: 'extra_forbidden', loc: ['zeta'], msg: 'Extra inputs are not permitted', input: 1, url: 'https://errors.pydantic.dev/2.13/v/extra_forbidden' },
      { type: 'extra_forbidden', loc: ['alpha'], msg: 'Extra inputs are not permitted', input: 2, url: 'https://errors.pydantic.dev/2.13/v/extra_forbidden' },
    ]);
  });

  it('rejects non-objects with model_type and empty loc', () => {
    for (const data of [null, 'text', 3, [], true]) {
      expect(errorsOf(data)).toEqual([
        {
          type: 'model_type',
          loc: [],
          msg: 'Input should be a valid dictionary or instance of ProbeAction',
          input: data,
          ctx: { class_name: 'ProbeAction' },
          url: 'https://errors.pydantic.dev/2.13/v/model_type',
        },
      ]);
    }
  });

  it('fills defaults with a fresh metadata object each time', () => {
    const a = validateModel(MODEL, { count: 1, word: 'ab' });
    const b = validateModel(MODEL, { count: 1, word: 'ab' });
    expect(a).toEqual({ ok: true, action: { metadata: {}, count: 1, word: 'ab', mode: 'fast' } });
    if (a.ok && b.ok) expect(a.action.metadata).not.toBe(b.action.metadata);
  });

  it('requireValidAction names every problem', () => {
    expect(() => requireValidAction(MODEL, { word: 'a', x: 1 })).toThrow(
      'Invalid ProbeAction: count: Field required; word: String should have at least 2 characters; x: Extra inputs are not permitted',
    );
    expect(() => requireValidAction(MODEL, 'nope')).toThrow('Invalid ProbeAction: (action): Input should be a valid dictionary or instance of ProbeAction');
  });

  it('builds a pydantic-shaped action schema with sorted keywords and ordered properties', () => {
    const schema = actionJsonSchema(MODEL);
    expect(JSON.stringify(schema)).toBe(
      JSON.stringify({
        additionalProperties: false,
        description: 'A model exercising every field kind.',
        properties: {
          metadata: { additionalProperties: true, description: 'Additional metadata for the action', title: 'Metadata', type: 'object' },
          count: { title: 'Count', type: 'integer' },
          word: { minLength: 2, title: 'Word', type: 'string' },
          mode: { default: 'fast', title: 'Mode', type: 'string' },
        },
        required: ['count', 'word'],
        title: 'ProbeAction',
        type: 'object',
      }),
    );
  });
});

describe('BUILTIN_ENVS', () => {
  it('has echo, catch, wordle, sudoku and browsergym, each serving the base State schema', () => {
    expect(Object.keys(BUILTIN_ENVS)).toEqual(['echo', 'catch', 'wordle', 'sudoku', 'browsergym']);
    for (const [key, env] of Object.entries(BUILTIN_ENVS)) {
      expect(env.name).toBe(key);
      expect(env.schema.state).toBe(BASE_STATE_SCHEMA);
      expect(env.metadata.version).toBe('1.0.0');
      expect(env.metadata.description).toBe(`${env.metadata.name} environment`);
    }
  });
});

describe('seeded RNG', () => {
  it('is reproducible, seed-dependent, in range and roughly uniform', () => {
    const draw = (seed: number): number[] => {
      const rng = seededRng(seed);
      return Array.from({ length: 5000 }, () => rng.int(5));
    };
    const a = draw(123);
    expect(draw(123)).toEqual(a);
    expect(draw(124)).not.toEqual(a);
    const counts = [0, 0, 0, 0, 0];
    for (const v of a) counts[v]! += 1;
    for (const c of counts) expect(c).toBeGreaterThan(850); // expected 1000 each
    expect(() => seededRng(-1)).toThrow('seed must be a non-negative integer, got -1');
    expect(() => seededRng(0).int(0)).toThrow('Rng.int: n must be an integer in [1, 2^32], got 0');
  });
});
