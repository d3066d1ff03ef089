// JSON-RPC 2.0 `/mcp` for the built-in environments (specs/openenv-protocol.md §6, openenv-mcp.md §3).
// MCP environments (echo) answer tools/list and tools/call on the session's env; the others answer
// -32603. The OpenEnv session methods work everywhere and share the env's session pool with `/ws`.

import type { JsonRpcResponse } from '../src/openenv/types.ts';
import type { RefusalFrames } from './admission.ts';
import { isPlainObject } from './envelope.ts';
import { pydanticErrorText, type PydanticLine } from './envs/pydantic-text.ts';
import type { McpToolEnv } from './envs/types.ts';
import { capacityMessage, queueTimeoutMessage } from './frames.ts';

export const JSONRPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  SERVER_ERROR: -32000,
} as const;

const DEFAULT_MESSAGES: Record<number, string> = {
  [JSONRPC.PARSE_ERROR]: 'Parse error',
  [JSONRPC.INVALID_REQUEST]: 'Invalid Request',
  [JSONRPC.METHOD_NOT_FOUND]: 'Method not found',
  [JSONRPC.INVALID_PARAMS]: 'Invalid params',
  [JSONRPC.INTERNAL_ERROR]: 'Internal error',
  [JSONRPC.SERVER_ERROR]: 'Server error',
};

type RpcId = string | number | null;

export function rpcError(code: number, message?: string, id: RpcId = null, data: unknown = null): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: { code, message: message ?? DEFAULT_MESSAGES[code], data } };
}

function rpcResult(result: unknown, id: RpcId): JsonRpcResponse {
  return { jsonrpc: '2.0', id, result };
}

/** What the MCP methods need from the env host. */
export interface McpSessions {
  /** Opens a pooled session (no socket), or says why not (pool full, factory failed) with error data. */
  create(): { sessionId: string } | { error: string; data: Record<string, unknown> };
  /** False when no such session. */
  close(sessionId: string): boolean;
  /** True (and counts as activity) when the session exists. */
  touch(sessionId: string): boolean;
  /** The env of an HTTP-created session (after `touch` said it exists). */
  env(sessionId: string): McpToolEnv | undefined;
  /** Runs `use` on a throwaway env (HTTP tools/* without a session, §3.1). */
  withTemporaryEnv<T>(use: (env: McpToolEnv) => T): T;
}

const REQUEST_FIELDS = new Set(['jsonrpc', 'method', 'params', 'id']);

/** The JsonRpcRequest model's errors (jsonrpc "2.0", method str, params dict, id str|int|null, no extras). */
function requestProblems(request: Record<string, unknown>): PydanticLine[] {
  const out: PydanticLine[] = [];
  if (!('jsonrpc' in request)) out.push({ loc: ['jsonrpc'], msg: 'Field required', type: 'missing', input: request });
  else if (request.jsonrpc !== '2.0') out.push({ loc: ['jsonrpc'], msg: "Input should be '2.0'", type: 'literal_error', input: request.jsonrpc });
  if (!('method' in request)) out.push({ loc: ['method'], msg: 'Field required', type: 'missing', input: request });
  else if (typeof request.method !== 'string') out.push({ loc: ['method'], msg: 'Input should be a valid string', type: 'string_type', input: request.method });
  if ('params' in request && !isPlainObject(request.params)) {
    out.push({ loc: ['params'], msg: 'Input should be a valid dictionary', type: 'dict_type', input: request.params });
  }
  const id = request.id;
  // pydantic's lax int accepts true and integral floats; 1.5 and objects fail.
  if (id !== undefined && id !== null && typeof id !== 'string' && typeof id !== 'boolean' && !Number.isInteger(id)) {
    out.push({ loc: ['id', 'str'], msg: 'Input should be a valid string', type: 'string_type', input: id });
  }
  for (const [key, value] of Object.entries(request)) {
    if (!REQUEST_FIELDS.has(key)) out.push({ loc: [key], msg: 'Extra inputs are not permitted', type: 'extra_forbidden', input: value });
  }
  return out;
}

/** Where tools/* run: the socket's env (WS), a named HTTP session's env, or a throwaway one. */
function runOnEnv<T>(sessions: McpSessions, wsEnv: McpToolEnv | undefined, sessionId: unknown, use: (env: McpToolEnv) => T): T {
  if (wsEnv) return use(wsEnv);
  const env = typeof sessionId === 'string' && sessionId ? sessions.env(sessionId) : undefined;
  return env ? use(env) : sessions.withTemporaryEnv(use);
}

function toolsMethod(method: 'tools/list' | 'tools/call', params: Record<string, unknown>, env: McpToolEnv, id: RpcId): JsonRpcResponse {
  if (!env.listTools || !env.callTool) return rpcError(JSONRPC.INTERNAL_ERROR, 'Environment does not support MCP', id);
  if (method === 'tools/list') return rpcResult({ tools: env.listTools() }, id);
  if (!('name' in params)) return rpcError(JSONRPC.INVALID_PARAMS, "Missing 'name' in params", id);
  const args = params.arguments ?? {};
  // Over JSON-RPC a failing call is an error with the tool's message; there is no error_type (§3.4).
  const outcome = env.callTool(String(params.name), args as Record<string, unknown>);
  return outcome.error ? rpcError(JSONRPC.INTERNAL_ERROR, outcome.error.message, id) : rpcResult(outcome.result, id);
}

/**
 * Answers one JSON-RPC request. `ws` is set when it came over a socket (`/ws` or WS `/mcp`): then
 * session/create returns that session, session/close may not close it, and tools/* use its env.
 */
export function handleMcp(request: unknown, sessions: McpSessions, ws?: { sessionId: string; env: McpToolEnv }): JsonRpcResponse {
  if (!isPlainObject(request)) return rpcError(JSONRPC.PARSE_ERROR);
  const problems = requestProblems(request);
  // Upstream's quirk: the -32600 reply's id is always null (§3.2).
  if (problems.length > 0) return rpcError(JSONRPC.INVALID_REQUEST, `Invalid request: ${pydanticErrorText('JsonRpcRequest', problems)}`);
  const method = request.method as string;
  const rawId = request.id ?? null;
  const id = (typeof rawId === 'boolean' ? Number(rawId) : rawId) as RpcId;
  const params = (request.params ?? {}) as Record<string, unknown>;
  const wsSessionId = ws?.sessionId;

  if (method === 'openenv/session/create') {
    if (wsSessionId) return rpcResult({ session_id: wsSessionId }, id);
    const created = sessions.create();
    if ('error' in created) return rpcError(JSONRPC.SERVER_ERROR, created.error, id, created.data);
    return rpcResult({ session_id: created.sessionId }, id);
  }
  if (method === 'openenv/session/close') {
    const target = params.session_id;
    if (!target) return rpcError(JSONRPC.INVALID_PARAMS, "Invalid params - 'session_id' is required", id);
    if (target === wsSessionId) {
      return rpcError(JSONRPC.INVALID_REQUEST, 'Cannot close active WebSocket-managed session via MCP method', id);
    }
    if (typeof target !== 'string' || !sessions.close(target)) return rpcError(JSONRPC.INVALID_PARAMS, `Unknown session_id: ${String(target)}`, id);
    return rpcResult({ session_id: target, closed: true }, id);
  }

  const requested = params.session_id;
  if (!wsSessionId && requested) {
    if (typeof requested !== 'string' || !sessions.touch(requested)) {
      return rpcError(JSONRPC.INVALID_PARAMS, `Unknown session_id: ${String(requested)}`, id);
    }
  }
  if (method === 'tools/list' || method === 'tools/call') {
    const toolsParams = { ...params };
    delete toolsParams.session_id;
    return runOnEnv(sessions, ws?.env, requested, (env) => toolsMethod(method, toolsParams, env, id));
  }
  return rpcError(JSONRPC.METHOD_NOT_FOUND, `Method not found: ${method}`, id);
}

/** Python's `json.dumps` defaults: `", "` and `": "` separators, non-ASCII as `\uXXXX`. */
export function pythonDumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonDumps).join(', ')}]`;
  if (isPlainObject(value)) return `{${Object.entries(value).map(([k, v]) => `${pythonDumps(k)}: ${pythonDumps(v)}`).join(', ')}}`;
  return JSON.stringify(value ?? null).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** WS `/mcp` refusals: JSON-RPC -32000 with the counts; upstream writes this frame with json.dumps (§3.4). */
export const MCP_REFUSALS: RefusalFrames = {
  atCapacity: (active, max) =>
    pythonDumps(rpcError(JSONRPC.SERVER_ERROR, capacityMessage(active, max), null, { active_sessions: active, max_sessions: max })),
  queueTimedOut: (active, max, waitedMs) =>
    pythonDumps(rpcError(JSONRPC.SERVER_ERROR, queueTimeoutMessage(active, max, waitedMs), null, { active_sessions: active, max_sessions: max })),
};
