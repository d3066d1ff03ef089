// The HTTP request bodies of `/reset` and `/step` (OpenEnv's ResetRequest and StepRequest, extra keys
// allowed), checked the way FastAPI + pydantic check them, with the same 422 `detail` entries
// (specs/openenv-protocol.md §2). FastAPI's own errors carry no `url`.

import type { WireValidationIssue } from '../src/openenv/types.ts';
import { isPlainObject } from './envelope.ts';
import { DEFAULT_MAX_JSON_DEPTH, parseBoundedJson } from './json-limits.ts';
import { pythonJsonErrorAt } from './python-json-error.ts';

export type BodyCheck = { ok: true; body: Record<string, unknown> } | { ok: false; detail: WireValidationIssue[] };

/** Parses a request body; `required` says whether an empty body is a 422 (`/step`) or `{}` (`/reset`). */
export function parseJsonBody(raw: Buffer, required: boolean, maxDepth = DEFAULT_MAX_JSON_DEPTH): BodyCheck {
  const text = raw.toString('utf8');
  if (text.trim() === '') {
    if (required) return { ok: false, detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] };
    return { ok: true, body: {} };
  }
  const parsed = parseBoundedJson(text, maxDepth);
  if (!parsed.ok) {
    if (parsed.tooDeep) return { ok: false, detail: [{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: parsed.message } }] };
    const py = pythonJsonErrorAt(text);
    return {
      ok: false,
      detail: [{ type: 'json_invalid', loc: ['body', py?.pos ?? 0], msg: 'JSON decode error', input: {}, ctx: { error: py?.msg ?? parsed.error.message } }],
    };
  }
  const value = parsed.value;
  if (!isPlainObject(value)) {
    return {
      ok: false,
      detail: [{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: value }],
    };
  }
  return { ok: true, body: value };
}

function checkOptionalInt(body: Record<string, unknown>, key: string, min: number, out: WireValidationIssue[]): void {
  const value = body[key];
  if (value === undefined || value === null) return;
  const loc = ['body', key];
  let n: number;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) {
      out.push({ type: 'int_from_float', loc, msg: 'Input should be a valid integer, got a number with a fractional part', input: value });
      return;
    }
    n = value;
  } else if (typeof value === 'string' && /^\s*[-+]?\d+\s*$/.test(value)) {
    n = Number(value); // pydantic's lax mode parses integer strings
  } else if (typeof value === 'string') {
    out.push({ type: 'int_parsing', loc, msg: 'Input should be a valid integer, unable to parse string as an integer', input: value });
    return;
  } else {
    out.push({ type: 'int_type', loc, msg: 'Input should be a valid integer', input: value });
    return;
  }
  if (n < min) {
    out.push({ type: 'greater_than_equal', loc, msg: `Input should be greater than or equal to ${min}`, input: value, ctx: { ge: min } });
  }
}

function checkOptionalString(body: Record<string, unknown>, key: string, maxLength: number | null, out: WireValidationIssue[]): void {
  const value = body[key];
  if (value === undefined || value === null) return;
  const loc = ['body', key];
  if (typeof value !== 'string') {
    out.push({ type: 'string_type', loc, msg: 'Input should be a valid string', input: value });
  } else if (maxLength !== null && [...value].length > maxLength) {
    out.push({ type: 'string_too_long', loc, msg: `String should have at most ${maxLength} characters`, input: value, ctx: { max_length: maxLength } });
  }
}

/** ResetRequest: `seed: int ≥ 0 | null`, `episode_id: str ≤ 255 | null`, extras allowed. */
export function checkResetBody(body: Record<string, unknown>): WireValidationIssue[] {
  const issues: WireValidationIssue[] = [];
  checkOptionalInt(body, 'seed', 0, issues);
  checkOptionalString(body, 'episode_id', 255, issues);
  return issues;
}

/** StepRequest: `action: dict` (required), `timeout_s: float | null`, `request_id: str | null`, extras allowed. */
export function checkStepBody(body: Record<string, unknown>): WireValidationIssue[] {
  const issues: WireValidationIssue[] = [];
  if (!('action' in body)) issues.push({ type: 'missing', loc: ['body', 'action'], msg: 'Field required', input: body });
  else if (!isPlainObject(body.action)) issues.push({ type: 'dict_type', loc: ['body', 'action'], msg: 'Input should be a valid dictionary', input: body.action });
  const timeout = body.timeout_s;
  if (timeout !== undefined && timeout !== null && typeof timeout !== 'number') {
    issues.push({ type: 'float_type', loc: ['body', 'timeout_s'], msg: 'Input should be a valid number', input: timeout });
  }
  checkOptionalString(body, 'request_id', null, issues);
  return issues;
}
