// Executing one assistant turn's tool calls against an env (grpo-semantics.md §6). Every call counts;
// every error becomes the tool message `{'error': '<msg>'}` (Python repr) and counts as a failure —
// except an EnvFailure (the env itself is gone), which stops the rollout as unscorable.

import type { ChatMessage, ToolCall } from '../model/chat-template.ts';
import { EnvFailure, type Tool } from './env.ts';
import { pyStr } from './pyrepr.ts';

export type ToolMessage = Extract<ChatMessage, { role: 'tool' }>;

export interface ToolTurnResult {
  messages: ToolMessage[];
  calls: number;
  failures: number;
  /** The calls that failed (a tool error or a bad call), in the order they failed. */
  failedCalls: ToolCall[];
  /** Set when the env failed; `messages` are then incomplete and must not be used. */
  envFailure?: EnvFailure;
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
  const pending: { name: string; call: ToolCall; run: () => unknown }[] = [];
  const failedCalls: ToolCall[] = [];
  let failures = 0;
  const fail = (call: ToolCall, err: unknown): ToolTurnResult | null => {
    if (err instanceof EnvFailure) return { messages, calls: calls.length, failures, failedCalls, envFailure: err };
    failures++;
    failedCalls.push(call);
    messages.push(toolMessage(call.function.name, { error: errorText(err) }));
    return null;
  };

  for (const call of calls) {
    const name = call.function.name;
    const tool = byName.get(name);
    // Sync tools first, then async ones (Python looks the name up in that order; a name is in one only).
    const problem = tool ? argumentError(tool, call.function.arguments) : `Tool ${name} not found.`;
    if (problem !== null) {
      fail(call, new Error(problem));
      continue;
    }
    const args = call.function.arguments as Record<string, unknown>;
    if (tool!.kind === 'async') {
      // Like a Python coroutine: bound now, run concurrently with the other async calls after the sync ones.
      pending.push({ name, call, run: () => tool!.call(args) });
      continue;
    }
    try {
      messages.push(toolMessage(name, await tool!.call(args)));
    } catch (err) {
      const stop = fail(call, err);
      if (stop) return stop;
    }
  }
  const settled = await Promise.allSettled(pending.map((p) => Promise.resolve().then(p.run)));
  for (let i = 0; i < settled.length; i++) {
    const outcome = settled[i];
    if (outcome.status === 'fulfilled') messages.push(toolMessage(pending[i].name, outcome.value));
    else {
      const stop = fail(pending[i].call, outcome.reason);
      if (stop) return stop;
    }
  }
  return { messages, calls: calls.length, failures, failedCalls };
}
