// JSON-RPC 2.0 `/mcp` for the built-in environments (specs/openenv-protocol.md §6). The built-ins
// are not MCP environments: tools/* answer -32603, but the OpenEnv session methods work and share
// the env's session pool with `/ws`.

import type { JsonRpcResponse } from '../src/openenv/types.ts';
import type { RefusalFrames } from './admission.ts';
import { isPlainObject } from './envelope.ts';
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
}

/** Checks the JsonRpcRequest model: jsonrpc "2.0", method a string, id a string/int/null. */
function requestProblem(request: Record<string, unknown>): string | null {
  if ('jsonrpc' in request && request.jsonrpc !== '2.0') return `jsonrpc: Input should be '2.0', got ${JSON.stringify(request.jsonrpc)}`;
  if (!('method' in request)) return 'method: Field required';
  if (typeof request.method !== 'string') return 'method: Input should be a valid string';
  const id = request.id;
  if (id !== undefined && id !== null && typeof id !== 'string' && !Number.isInteger(id)) {
    return 'id: Input should be a valid string or integer';
  }
  return null;
}

/**
 * Answers one JSON-RPC request. `wsSessionId` is set when it came over `/ws`: then session/create
 * returns that session and session/close may not close it.
 */
export function handleMcp(request: unknown, sessions: McpSessions, wsSessionId?: string): JsonRpcResponse {
  if (!isPlainObject(request)) return rpcError(JSONRPC.INVALID_REQUEST, 'Invalid request: the request must be a JSON object');
  const problem = requestProblem(request);
  if (problem) return rpcError(JSONRPC.INVALID_REQUEST, `Invalid request: ${problem}`);
  const method = request.method as string;
  const id = (request.id ?? null) as RpcId;
  const params = 'params' in request ? request.params : {};
  if (!isPlainObject(params)) return rpcError(JSONRPC.INVALID_PARAMS, 'Params must be an object', id);

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
    return rpcError(JSONRPC.INTERNAL_ERROR, 'Environment does not support MCP', id);
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
