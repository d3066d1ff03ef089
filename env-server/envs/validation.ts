// Action validation that reproduces pydantic 2 (lax, Python mode) for OpenEnv Action models:
// `extra="forbid"`, a `metadata` dict always allowed, fields checked in declaration order
// (metadata first, as it is declared on the base Action), then extra keys in input order.
// Error objects carry pydantic's type/loc/msg/input/[ctx]/url, with `loc` relative to the action.

import type { ActionCheck, ValidationIssue } from './types.ts';
import { modelSchema, type JsonSchema, type SchemaField } from './json-schema.ts';

const PYDANTIC_DOCS = 'https://errors.pydantic.dev/2.13/v/';

export type FieldKind =
  | { kind: 'string'; minLength?: number }
  | { kind: 'int' }
  | { kind: 'dict' }
  /** A `Literal["…"]` string field (MCP's action `type` discriminators). */
  | { kind: 'literal'; value: string };

export interface ModelField {
  name: string;
  type: FieldKind;
  description?: string;
  /** Literal default (shown in the JSON Schema). */
  default?: string | number | null;
  /** Fresh default per instance (not shown in the JSON Schema, like pydantic's default_factory). */
  defaultFactory?: () => unknown;
}

export interface ActionModel {
  /** Class name, used in `model_type` errors and as the schema title. */
  title: string;
  description: string;
  /** Declaration order, base `metadata` first. */
  fields: readonly ModelField[];
}

const METADATA_FIELD: ModelField = {
  name: 'metadata',
  type: { kind: 'dict' },
  description: 'Additional metadata for the action',
  defaultFactory: () => ({}),
};

/** An Action model: the env's fields after the base Action's `metadata`. */
export function actionModel(title: string, description: string, fields: readonly ModelField[]): ActionModel {
  return { title, description, fields: [METADATA_FIELD, ...fields] };
}

export function issue(
  type: string,
  loc: (string | number)[],
  msg: string,
  input: unknown,
  ctx?: Record<string, unknown>,
): ValidationIssue {
  const out: ValidationIssue = { type, loc, msg, input };
  if (ctx !== undefined) out.ctx = ctx;
  out.url = PYDANTIC_DOCS + type;
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

type Coerced = { ok: true; value: unknown } | { ok: false; issue: ValidationIssue };

// pydantic-core accepts Python-style integer strings: surrounding whitespace, a sign, single
// underscores between digits, and a fractional part made only of zeros ("3.0").
const INT_STRING = /^[+-]?\d+(?:_\d+)*(?:\.0*)?$/;

function coerceInt(value: unknown, loc: (string | number)[]): Coerced {
  if (typeof value === 'boolean') return { ok: true, value: value ? 1 : 0 };
  if (typeof value === 'number') {
    if (Number.isInteger(value)) return { ok: true, value };
    if (Number.isFinite(value)) {
      return {
        ok: false,
        issue: issue('int_from_float', loc, 'Input should be a valid integer, got a number with a fractional part', value),
      };
    }
    return { ok: false, issue: issue('finite_number', loc, 'Input should be a finite number', value) };
  }
  if (typeof value === 'string') {
    const text = value.trim();
    if (INT_STRING.test(text)) {
      const digits = text.replace(/_/g, '').replace(/\.0*$/, '');
      return { ok: true, value: Number(digits) };
    }
    return {
      ok: false,
      issue: issue('int_parsing', loc, 'Input should be a valid integer, unable to parse string as an integer', value),
    };
  }
  return { ok: false, issue: issue('int_type', loc, 'Input should be a valid integer', value) };
}

function coerceString(value: unknown, loc: (string | number)[], minLength: number | undefined): Coerced {
  if (typeof value !== 'string') {
    return { ok: false, issue: issue('string_type', loc, 'Input should be a valid string', value) };
  }
  // Python counts code points, not UTF-16 units: an emoji is one character.
  if (minLength !== undefined && [...value].length < minLength) {
    const unit = minLength === 1 ? 'character' : 'characters';
    return {
      ok: false,
      issue: issue('string_too_short', loc, `String should have at least ${minLength} ${unit}`, value, {
        min_length: minLength,
      }),
    };
  }
  return { ok: true, value };
}

function coerceField(field: ModelField, value: unknown): Coerced {
  const loc = [field.name];
  switch (field.type.kind) {
    case 'string':
      return coerceString(value, loc, field.type.minLength);
    case 'int':
      return coerceInt(value, loc);
    case 'dict':
      return isPlainObject(value)
        ? { ok: true, value }
        : { ok: false, issue: issue('dict_type', loc, 'Input should be a valid dictionary', value) };
    case 'literal': {
      const expected = `'${field.type.value}'`;
      return value === field.type.value
        ? { ok: true, value }
        : { ok: false, issue: issue('literal_error', loc, `Input should be ${expected}`, value, { expected }) };
    }
  }
}

/** Validates `data` (parsed JSON) against the model; on success returns the action with defaults filled in. */
export function validateModel(model: ActionModel, data: unknown): ActionCheck {
  if (!isPlainObject(data)) {
    return {
      ok: false,
      errors: [
        issue('model_type', [], `Input should be a valid dictionary or instance of ${model.title}`, data, {
          class_name: model.title,
        }),
      ],
    };
  }
  const errors: ValidationIssue[] = [];
  const action: Record<string, unknown> = {};
  const known = new Set<string>();
  for (const field of model.fields) {
    known.add(field.name);
    if (!Object.prototype.hasOwnProperty.call(data, field.name)) {
      if (field.defaultFactory !== undefined) action[field.name] = field.defaultFactory();
      else if ('default' in field) action[field.name] = field.default;
      else errors.push(issue('missing', [field.name], 'Field required', data));
      continue;
    }
    const result = coerceField(field, data[field.name]);
    if (result.ok) action[field.name] = result.value;
    else errors.push(result.issue);
  }
  for (const [key, value] of Object.entries(data)) {
    if (!known.has(key)) errors.push(issue('extra_forbidden', [key], 'Extra inputs are not permitted', value));
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, action };
}

/**
 * For env `step()`: the transport validates first, but a direct caller may not have.
 * Returns the coerced action or throws an error that names every problem.
 */
export function requireValidAction(model: ActionModel, data: unknown): Record<string, unknown> {
  const check = validateModel(model, data);
  if (check.ok) return check.action;
  const problems = check.errors.map((e) => `${e.loc.length > 0 ? e.loc.join('.') : '(action)'}: ${e.msg}`);
  throw new Error(`Invalid ${model.title}: ${problems.join('; ')}`);
}

function fieldTypeSchema(type: FieldKind): JsonSchema {
  switch (type.kind) {
    case 'string':
      return type.minLength !== undefined ? { type: 'string', minLength: type.minLength } : { type: 'string' };
    case 'int':
      return { type: 'integer' };
    case 'dict':
      return { type: 'object', additionalProperties: true };
    case 'literal':
      return { const: type.value, type: 'string' };
  }
}

/** The action's JSON Schema (pydantic `model_json_schema()` shape, `additionalProperties: false`). */
export function actionJsonSchema(model: ActionModel): JsonSchema {
  const fields: SchemaField[] = model.fields.map((field) => {
    const out: SchemaField = { name: field.name, schema: fieldTypeSchema(field.type) };
    if (field.description !== undefined) out.description = field.description;
    if ('default' in field) out.default = field.default;
    else if (field.defaultFactory === undefined) out.required = true;
    return out;
  });
  return modelSchema({ title: model.title, description: model.description, fields, additionalProperties: false });
}
