// Current OpenEnv's MCP form from the client side (specs/openenv-mcp.md §5.2, §6, §8): telling an MCP
// env from an action env by what the server says, reading `list_tools` / `call_tool` observations the
// way the Python MCPToolClient does, and turning a tool step into model-visible text.

import { replyText } from './http-reply.ts';
import type { JsonRpcResponse } from './types.ts';

/** A tool as `list_tools` names it; the input schema is the tool's JSON Schema for its arguments. */
export interface McpTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export type McpToolErrorType = 'execution_error' | 'invalid_args' | 'transport_error' | 'tool_not_found' | 'timeout';

/**
 * How an env at a URL takes actions:
 * - `mcp`: `list_tools` / `call_tool` step actions (rewards come in each step's envelope);
 * - `mcp-rpc`: a custom action class, but MCP tools over JSON-RPC (`{"type":"mcp"}` frames; no rewards);
 * - `action`: no MCP (the older form: the env's own action schema).
 */
export type EnvProtocol = 'mcp' | 'mcp-rpc' | 'action';

/** A tool call the env answered with `error` (the Python client raises the same text). */
export class McpToolError extends Error {
  constructor(
    readonly toolName: string,
    readonly errorType: string,
    readonly detail: string,
  ) {
    super(`Tool '${toolName}' failed: ${detail} (type: ${errorType})`);
    this.name = 'McpToolError';
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `list_tools` observation (or JSON-RPC `tools/list` result) → tools; `input_schema`, else `inputSchema`, else `{}`. */
export function parseToolList(observation: unknown): McpTool[] {
  const tools = isObject(observation) ? observation.tools : undefined;
  if (!Array.isArray(tools)) throw new Error(`not a tool list (no 'tools' array): ${JSON.stringify(observation).slice(0, 200)}`);
  return tools.map((t, i) => {
    if (!isObject(t)) throw new Error(`tool ${i} is not an object`);
    // Absent means "" (Python's defaults); present but null is an error, as in pydantic.
    const name = 'name' in t ? t.name : '';
    const description = 'description' in t ? t.description : '';
    if (typeof name !== 'string' || typeof description !== 'string') throw new Error(`tool ${i}: name and description must be strings`);
    const schema = t.input_schema ?? t.inputSchema ?? {};
    if (!isObject(schema)) throw new Error(`tool '${name}': input schema must be an object`);
    return { name, description, inputSchema: schema };
  });
}

/** A `CallToolObservation` (`tool_name`, `result`, `error`), as opposed to an env's own observation. */
export function isCallToolObservation(observation: unknown): observation is Record<string, unknown> & { tool_name: unknown } {
  return isObject(observation) && 'tool_name' in observation;
}

/**
 * A `call_tool` observation → the value Python's `call_tool` returns (`result.data` when `result` is an
 * object with `data`, else `result`), or a McpToolError when `error` is set. An env that overrides `step`
 * may answer with its own observation (finqa's `submit_answer` gives `{}` and the reward): that
 * observation is the value, as OpenEnv's MCPToolClient returns it.
 */
export function toolCallValue(observation: unknown): unknown {
  if (!isCallToolObservation(observation)) return observation;
  const error = observation.error;
  if (error) {
    const e = isObject(error) ? error : {};
    throw new McpToolError(String(observation.tool_name), String(e.error_type ?? 'execution_error'), String(e.message ?? JSON.stringify(error)));
  }
  const result = observation.result;
  return isObject(result) && 'data' in result ? result.data : result;
}

/**
 * A successful call result as the model should read it (§8): `data` (a string as-is, else JSON);
 * with `data` null, the text content blocks joined (list and untyped returns put their value only there).
 */
export function toolResultText(result: unknown): string {
  if (!isObject(result)) return typeof result === 'string' ? result : JSON.stringify(result ?? null);
  const data = result.data;
  if (data !== null && data !== undefined) return typeof data === 'string' ? data : JSON.stringify(data);
  const content = Array.isArray(result.content) ? result.content : [];
  return content
    .filter((b): b is Record<string, unknown> => isObject(b) && b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text as string)
    .join('');
}

/** JSON-RPC `tools/call` reply → result, or an Error with the server's message (Python: `Tool '<n>' failed: <m>`). */
export function rpcToolResult(name: string, reply: JsonRpcResponse): unknown {
  if ('error' in reply) throw new McpToolError(name, 'execution_error', reply.error.message);
  return reply.result;
}

function httpBase(baseUrl: string): string {
  return baseUrl.trim().replace(/\/+$/, '').replace(/^ws(s?):\/\//, 'http$1://');
}

/** §6 step 1: what `/schema`'s action says. null when it cannot decide (bare `Action`, no schema). */
export function protocolFromSchema(schema: unknown): 'mcp' | null {
  const action = isObject(schema) ? schema.action : undefined;
  if (!isObject(action)) return null;
  const type = isObject(action.properties) ? action.properties.type : undefined;
  const constant = isObject(type) ? type.const : undefined;
  if (constant === 'call_tool' || constant === 'list_tools') return 'mcp';
  if (action.title === 'CallToolAction' || action.title === 'ListToolsAction') return 'mcp';
  return null;
}

/** Sends one `{"type":"mcp"}` tools/list frame before any reset (§6 step 2); the session is closed after. */
export type McpProbe = (baseUrl: string) => Promise<JsonRpcResponse | 'unsupported'>;

/**
 * The recommended algorithm of §6: GET /schema (an MCP action model means MCP step frames); otherwise
 * a `tools/list` JSON-RPC frame on `/ws` (a result means MCP tools over JSON-RPC only); else the older
 * action form. Nothing is stepped and no env state changes.
 */
export async function detectProtocol(baseUrl: string, probe: McpProbe, fetchImpl: typeof fetch = fetch): Promise<EnvProtocol> {
  let schema: unknown = null;
  try {
    const res = await fetchImpl(`${httpBase(baseUrl)}/schema`);
    if (res.ok) schema = JSON.parse(await replyText(res, `GET ${httpBase(baseUrl)}/schema`));
  } catch {
    schema = null; // no /schema route: decide by the probe
  }
  const bare = isObject(schema) && isObject(schema.action) && schema.action.title === 'Action';
  if (protocolFromSchema(schema) === 'mcp') return 'mcp';
  const reply = await probe(baseUrl).catch(() => 'unsupported' as const);
  if (reply === 'unsupported' || 'error' in reply) return 'action';
  return bare ? 'mcp' : 'mcp-rpc';
}
