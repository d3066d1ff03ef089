// Server → client frames and their exact texts (specs/openenv-protocol.md §3.3–§3.5, §8).
// JSON.stringify already writes what the spec asks: compact, raw UTF-8, shortest round-trip floats.

import type { ErrorFrameData, StepResult, WSErrorCode, WireValidationIssue } from '../src/openenv/types.ts';

/**
 * A reward as Python writes a float: `1.0`, `0.0`, `-0.0`, `1e+16`, `0.30000000000000004`; NaN → null.
 * OpenEnv's rewards are Python floats, and Python clients would otherwise receive ints for whole numbers.
 * Booleans become 1.0/0.0, as HTTP's float coercion does upstream.
 */
export function rewardJson(reward: number | boolean | null): string {
  if (reward === null) return 'null';
  const r = Number(reward);
  if (!Number.isFinite(r)) return 'null';
  if (Object.is(r, -0)) return '-0.0';
  if (Math.abs(r) >= 1e16) return r.toExponential();
  return Number.isInteger(r) ? `${r}.0` : String(r);
}

/** `{"observation":…,"reward":…,"done":…}` in wire order, the reward written as a float. */
export function observationJson(obs: StepResult): string {
  return `{"observation":${JSON.stringify(obs.observation)},"reward":${rewardJson(obs.reward)},"done":${JSON.stringify(obs.done)}}`;
}

export function observationFrame(obs: StepResult): string {
  // Rebuilt so the keys are always in wire order, whatever order the env used.
  return `{"type":"observation","data":${observationJson(obs)}}`;
}

export function stateFrame(state: Record<string, unknown>): string {
  return JSON.stringify({ type: 'state', data: state });
}

export function mcpFrame(response: unknown): string {
  return JSON.stringify({ type: 'mcp', data: response });
}

export function errorFrame(code: WSErrorCode, message: string, extra: Partial<ErrorFrameData> = {}): string {
  return JSON.stringify({ type: 'error', data: { message, code, ...extra } });
}

export function capacityMessage(active: number, max: number): string {
  return `Server at capacity: ${active}/${max} sessions active. Cannot accept new connections.`;
}

export function queueTimeoutMessage(active: number, max: number, waitedMs: number): string {
  return `Server at capacity: ${active}/${max} sessions active. Waited ${waitedMs / 1000} s in the queue and no slot freed.`;
}

/** The §3.4 refusal, sent unprompted right after the handshake. */
export function capacityFrame(active: number, max: number): string {
  return errorFrame('CAPACITY_REACHED', capacityMessage(active, max), { active_sessions: active, max_sessions: max });
}

/** `--queue` ran out of patience: same code as a refusal (clients back off the same way), says why. */
export function queueTimeoutFrame(active: number, max: number, waitedMs: number): string {
  return errorFrame('CAPACITY_REACHED', queueTimeoutMessage(active, max, waitedMs), { active_sessions: active, max_sessions: max });
}

export function idleTimeoutFrame(timeoutSec: number): string {
  return errorFrame('SESSION_ERROR', `Session idle timeout (${timeoutSec} s)`);
}

export function factoryErrorFrame(name: string): string {
  return errorFrame('FACTORY_ERROR', `Environment factory '${name}' failed to create instance.`, { factory_name: name });
}

export function oversizedFrame(bytes: number, maxBytes: number): string {
  return errorFrame('SESSION_ERROR', `Message too large: ${bytes} bytes; this server accepts at most ${maxBytes} bytes per message (--max-message-bytes).`);
}

/** A reply over the per-message limit: the work was done, its reply is not sent (the limit clients have, both ways). */
export function replyTooLargeFrame(bytes: number, maxBytes: number): string {
  return errorFrame('EXECUTION_ERROR', `Reply too large: ${bytes} bytes; this server sends at most ${maxBytes} bytes per message (--max-message-bytes).`);
}

/** Every client's unsent replies together passed the budget: this reply is refused, not queued. */
export function replyBacklogFullFrame(bytes: number, queued: number, maxBytes: number): string {
  return errorFrame(
    'EXECUTION_ERROR',
    `Server busy: a ${bytes}-byte reply would pass the ${maxBytes} bytes of replies this server queues for all its clients (${queued} queued now, --max-reply-backlog-bytes); it was not sent. Try again.`,
  );
}

/** pydantic puts a documentation link on each error; webgrpo adds the same link to its own. */
export function withPydanticUrl(issue: WireValidationIssue): WireValidationIssue {
  const { type, loc, msg } = issue;
  const out: WireValidationIssue = { type, loc, msg };
  if ('input' in issue) out.input = issue.input;
  if (issue.ctx !== undefined) out.ctx = issue.ctx;
  out.url = issue.url ?? `https://errors.pydantic.dev/2.13/v/${type}`;
  return out;
}

export function validationErrorFrame(issues: WireValidationIssue[]): string {
  return errorFrame('VALIDATION_ERROR', 'Invalid message', { errors: issues.map(withPydanticUrl) });
}

/**
 * Python's `str()` of a JSON value, for messages that upstream builds with f-strings
 * (`Unknown message type: {msg_type}`).
 */
export function pyStr(value: unknown): string {
  return typeof value === 'string' ? value : pyRepr(value);
}

/** Python's `repr()` of a parsed JSON value. */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return value.includes("'") && !value.includes('"') ? `"${value}"` : `'${value.replace(/'/g, "\\'")}'`;
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(', ')}]`;
  return `{${Object.entries(value as Record<string, unknown>).map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`).join(', ')}}`;
}

/** Python's name for the type of a parsed JSON value (for `'list' object has no attribute 'get'`). */
export function pyTypeName(value: unknown): string {
  if (value === null) return 'NoneType';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'string') return 'str';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  return 'dict';
}
