// Parses one client text frame into a command, or into the exact error frame OpenEnv would send
// (specs/openenv-protocol.md §3.2–§3.3). The envelopes are pydantic models with extra="forbid".

import type { WireValidationIssue } from '../src/openenv/types.ts';
import { errorFrame, pyStr, pyTypeName, validationErrorFrame } from './frames.ts';
import { DEFAULT_MAX_JSON_DEPTH, parseBoundedJson } from './json-limits.ts';
import { pythonJsonError } from './python-json-error.ts';

export type ClientCommand =
  | { kind: 'reset'; data: Record<string, unknown> }
  | { kind: 'step'; data: Record<string, unknown> }
  | { kind: 'state' }
  | { kind: 'close' }
  | { kind: 'mcp'; data: Record<string, unknown> }
  /** `fatal`: send `frame`, then end the session (close 1000). */
  | { kind: 'error'; frame: string; fatal: boolean };

type Envelope = { hasData: 'required' | 'optional' | 'forbidden' };

const ENVELOPES: Record<string, Envelope> = {
  reset: { hasData: 'optional' },
  step: { hasData: 'required' },
  state: { hasData: 'forbidden' },
  close: { hasData: 'forbidden' },
  mcp: { hasData: 'required' },
};

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function parseClientFrame(text: string, maxDepth = DEFAULT_MAX_JSON_DEPTH): ClientCommand {
  const parsed = parseBoundedJson(text, maxDepth);
  if (!parsed.ok) {
    // Upstream's json.loads raises RecursionError (not a JSONDecodeError) on absurd nesting: the
    // frame loop's catch-all answers SESSION_ERROR and ends the session. So does webgrpo, earlier.
    if (parsed.tooDeep) return { kind: 'error', frame: errorFrame('SESSION_ERROR', parsed.message), fatal: true };
    const detail = pythonJsonError(text) ?? parsed.error.message;
    return { kind: 'error', frame: errorFrame('INVALID_JSON', `Invalid JSON: ${detail}`), fatal: false };
  }
  const message = parsed.value;
  if (!isPlainObject(message)) {
    // Upstream calls `message.get("type")` on whatever json.loads returned; the AttributeError
    // escapes the frame loop and ends the session.
    return { kind: 'error', frame: errorFrame('SESSION_ERROR', `'${pyTypeName(message)}' object has no attribute 'get'`), fatal: true };
  }
  const type = 'type' in message ? message.type : '';
  const envelope = typeof type === 'string' && Object.hasOwn(ENVELOPES, type) ? ENVELOPES[type] : undefined;
  if (!envelope) {
    return { kind: 'error', frame: errorFrame('UNKNOWN_TYPE', `Unknown message type: ${pyStr(type)}`), fatal: false };
  }

  // Issues in pydantic's order: declared fields (type, data), then extra keys as they appear.
  const issues: WireValidationIssue[] = [];
  if (envelope.hasData !== 'forbidden') {
    if (!('data' in message)) {
      if (envelope.hasData === 'required') issues.push({ type: 'missing', loc: ['data'], msg: 'Field required', input: message });
    } else if (!isPlainObject(message.data)) {
      issues.push({ type: 'dict_type', loc: ['data'], msg: 'Input should be a valid dictionary', input: message.data });
    }
  }
  for (const [key, value] of Object.entries(message)) {
    if (key === 'type' || (key === 'data' && envelope.hasData !== 'forbidden')) continue;
    issues.push({ type: 'extra_forbidden', loc: [key], msg: 'Extra inputs are not permitted', input: value });
  }
  if (issues.length > 0) return { kind: 'error', frame: validationErrorFrame(issues), fatal: false };

  switch (type as keyof typeof ENVELOPES) {
    case 'reset':
      return { kind: 'reset', data: (message.data as Record<string, unknown> | undefined) ?? {} };
    case 'step':
      return { kind: 'step', data: message.data as Record<string, unknown> };
    case 'mcp':
      return { kind: 'mcp', data: message.data as Record<string, unknown> };
    case 'state':
      return { kind: 'state' };
    default:
      return { kind: 'close' };
  }
}
