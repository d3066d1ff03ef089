// A FastMCP-shaped tool set for built-in MCP environments (specs/openenv-mcp.md §2.1–§2.3, §2.7):
// argument checking with FastMCP's pydantic error texts, call results in FastMCP's client shape
// (`content`, `structured_content`, `meta`, `data`, `is_error`), and OpenEnv's classification of
// failures by their text. Tools here take string parameters only (all echo needs).

import { isPlainObject } from '../envelope.ts';
import { pydanticErrorText, type PydanticLine } from './pydantic-text.ts';
import type { ToolCallOutcome, ToolErrorType } from './types.ts';

export interface StringParam {
  name: string;
  description: string;
}

export interface McpToolDef {
  name: string;
  title: string;
  description: string;
  params: readonly StringParam[];
  /** FastMCP wraps a scalar/string return as `{"result": v}` (and says so in `meta` and the output schema). */
  wrapResult: boolean;
  outputSchema: Record<string, unknown>;
  run(args: Record<string, string>): unknown;
}

/** The `meta` FastMCP 4.0.10 attaches to every call result (clients ignore it; kept for byte parity). */
const SERVER_INFO = { name: 'echo_env', version: '4.0.10' };

/** The FastMCP-generated input schema (key order as observed on the wire). */
export function inputSchema(params: readonly StringParam[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const p of params) properties[p.name] = { type: 'string', description: p.description };
  return { type: 'object', additionalProperties: false, properties, required: params.map((p) => p.name) };
}

/** The step-path `list_tools` entry: exactly name, description, input_schema. */
export function stepToolEntry(def: McpToolDef): Record<string, unknown> {
  return { name: def.name, description: def.description, input_schema: inputSchema(def.params) };
}

/** The JSON-RPC `tools/list` item: the mcp 2.x Tool dump, plus `inputSchema` for mcp 1.x clients (§9). */
export function rpcToolEntry(def: McpToolDef): Record<string, unknown> {
  const schema = inputSchema(def.params);
  return {
    name: def.name,
    title: def.title,
    description: def.description,
    input_schema: schema,
    execution: null,
    output_schema: def.outputSchema,
    icons: null,
    annotations: null,
    meta: { fastmcp: { tags: [] } },
    inputSchema: schema,
  };
}

/** OpenEnv's classification of a failed call by its message text (§2.3), after timeouts. */
export function classifyToolError(message: string): ToolErrorType {
  const lower = message.toLowerCase();
  if (lower.includes('not found') || lower.includes('unknown tool')) return 'tool_not_found';
  if (lower.includes('invalid') || lower.includes('argument')) return 'invalid_args';
  return 'execution_error';
}

/** FastMCP's argument check: declared parameters in order, then unexpected keywords in input order. */
function argumentProblems(def: McpToolDef, args: Record<string, unknown>): PydanticLine[] {
  const problems: PydanticLine[] = [];
  for (const p of def.params) {
    if (!(p.name in args)) problems.push({ loc: [p.name], msg: 'Missing required argument', type: 'missing_argument', input: args });
    else if (typeof args[p.name] !== 'string') problems.push({ loc: [p.name], msg: 'Input should be a valid string', type: 'string_type', input: args[p.name] });
  }
  for (const [key, value] of Object.entries(args)) {
    if (!def.params.some((p) => p.name === key)) problems.push({ loc: [key], msg: 'Unexpected keyword argument', type: 'unexpected_keyword_argument', input: value });
  }
  return problems;
}

function callResult(def: McpToolDef, value: unknown): Record<string, unknown> {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const structured = def.wrapResult ? { result: value } : value;
  const meta: Record<string, unknown> = def.wrapResult
    ? { fastmcp: { wrap_result: true }, 'io.modelcontextprotocol/serverInfo': SERVER_INFO }
    : { 'io.modelcontextprotocol/serverInfo': SERVER_INFO };
  return {
    content: [{ type: 'text', text, annotations: null, meta: null }],
    structured_content: structured,
    meta,
    data: value,
    is_error: false,
  };
}

function failure(message: string): ToolCallOutcome {
  return { result: null, error: { error_type: classifyToolError(message), message } };
}

/** Runs `name` with `args` the way OpenEnv's MCPEnvironment + FastMCP do; never throws. */
export function callTool(tools: readonly McpToolDef[], name: string, args: unknown): ToolCallOutcome {
  const def = tools.find((t) => t.name === name);
  if (!def) return failure(`Unknown tool: '${name}'`);
  if (!isPlainObject(args)) {
    return failure(pydanticErrorText('CallToolRequestParams', [{ loc: ['arguments'], msg: 'Input should be a valid dictionary', type: 'dict_type', input: args }]));
  }
  const problems = argumentProblems(def, args);
  if (problems.length > 0) return failure(pydanticErrorText(`call[${def.name}]`, problems));
  try {
    return { result: callResult(def, def.run(args as Record<string, string>)), error: null };
  } catch (err) {
    return failure(`Error calling tool '${def.name}': ${err instanceof Error ? err.message : String(err)}`);
  }
}
