// Executing one assistant turn's tool calls against an env (grpo-semantics.md §6). Every call counts;
// every error becomes the tool message `{'error': '<msg>'}` (Python repr) and counts as a failure, as
// TRL does — env errors included (a refused action, an MCP tool error, even a dropped connection): the
// model reads what went wrong and the episode goes on. `tools/failure_frequency` shows them.

import type { ChatMessage, ToolCall } from '../../model/chat-template.ts';
import type { Tool } from './env.ts';
import { pyStr } from '../../pyrepr.ts';

export type ToolMessage = Extract<ChatMessage, { role: 'tool' }>;

export interface ToolTurnResult {
  messages: ToolMessage[];
  calls: number;
  failures: number;
  /** The error texts of the failed calls, in order (for warm-ups that must not train on them). */
  errors: string[];
  /** The calls that failed (a tool error, an env error or a bad call), in the order they failed. */
  failedCalls: ToolCall[];
  /** Calls that never reached the env: a tool name it does not offer, or arguments the tool cannot take. */
  invalid: number;
  /** The names called that no tool has, in call order. */
  unknownNames: string[];
}

/** Python's type name, for the `argument after ** must be a mapping` error. */
function pyTypeName(value: unknown): string {
  if (value === null || value === undefined) return 'NoneType';
  if (typeof value === 'string') return 'str';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  if (Array.isArray(value)) return 'list';
  return 'dict';
}

function quotedList(names: string[]): string {
  const q = names.map((n) => `'${n}'`);
  if (q.length === 1) return q[0];
  if (q.length === 2) return `${q[0]} and ${q[1]}`;
  return `${q.slice(0, -1).join(', ')}, and ${q[q.length - 1]}`;
}

/** The TypeError `fn(**arguments)` raises for these arguments, or null when the call binds. */
export function argumentError(tool: Tool, args: unknown): string | null {
  const name = tool.declaration.name;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return `${name}() argument after ** must be a mapping, not ${pyTypeName(args)}`;
  }
  // A tool with the env's own schema (MCP) is checked by the env, which answers in its own words.
  if (tool.schema) return null;
  const params = tool.declaration.parameters;
  for (const key of Object.keys(args)) {
    if (!params.some((p) => p.name === key)) return `${name}() got an unexpected keyword argument '${key}'`;
  }
  const missing = params.filter((p) => !p.optional && !(p.name in args)).map((p) => p.name);
  if (missing.length > 0) {
    const noun = missing.length === 1 ? 'argument' : 'arguments';
    return `${name}() missing ${missing.length} required positional ${noun}: ${quotedList(missing)}`;
  }
  return null;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** TRL's tool message: a list result passes through (content blocks), anything else is `str(result)`. */
function toolMessage(name: string, result: unknown): ToolMessage {
  return { role: 'tool', name, content: Array.isArray(result) ? result : pyStr(result) };
}

export async function executeToolCalls(tools: readonly Tool[], calls: readonly ToolCall[]): Promise<ToolTurnResult> {
  const byName = new Map(tools.map((t) => [t.declaration.name, t]));
  const messages: ToolMessage[] = [];
  const pending: { call: ToolCall; run: () => unknown }[] = [];
  const errors: string[] = [];
  const failedCalls: ToolCall[] = [];
  const unknownNames: string[] = [];
  let invalid = 0;
  const fail = (call: ToolCall, err: unknown): void => {
    const name = call.function.name;
    errors.push(errorText(err));
    failedCalls.push(call);
    messages.push(toolMessage(name, { error: errorText(err) }));
  };

  for (const call of calls) {
    const name = call.function.name;
    const tool = byName.get(name);
    // Sync tools first, then async ones (Python looks the name up in that order; a name is in one only).
    const problem = tool ? argumentError(tool, call.function.arguments) : `Tool ${name} not found.`;
    if (problem !== null) {
      invalid++;
      if (!tool) unknownNames.push(name);
      fail(call, new Error(problem));
      continue;
    }
    const args = call.function.arguments as Record<string, unknown>;
    if (tool!.kind === 'async') {
      // Like a Python coroutine: bound now, run concurrently with the other async calls after the sync ones.
      pending.push({ call, run: () => tool!.call(args) });
      continue;
    }
    try {
      messages.push(toolMessage(name, await tool!.call(args)));
    } catch (err) {
      fail(call, err);
    }
  }
  const settled = await Promise.allSettled(pending.map((p) => Promise.resolve().then(p.run)));
  for (let i = 0; i < settled.length; i++) {
    const outcome = settled[i];
    if (outcome.status === 'fulfilled') messages.push(toolMessage(pending[i].call.function.name, outcome.value));
    else fail(pending[i].call, outcome.reason);
  }
  return { messages, calls: calls.length, failures: errors.length, errors, failedCalls, invalid, unknownNames };
}
