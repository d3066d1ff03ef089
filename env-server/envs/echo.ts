// The echo environment as current OpenEnv serves it (specs/openenv-mcp.md §2): an MCP environment
// with the tools `echo_message` and `echo_with_length`, driven by `list_tools` / `call_tool` step
// actions and JSON-RPC. It also keeps the older action form (openenv-protocol.md §5.1): a step whose
// data is `{"message": …}` (no `type`, no `tool_name`) echoes it with reward = code points × 0.1, so
// clients written for the legacy echo keep working. Reset is the MCP echo's (`{}`, reward 0.0).

import type { EnvDefinition, EnvInstance, ToolCallOutcome, WireObservation } from './types.ts';
import { actionModel, requireValidAction, validateModel } from './validation.ts';
import { defaultMetadata } from './metadata.ts';
import { callTool, rpcToolEntry, stepToolEntry, type McpToolDef } from './mcp-tools.ts';
import { MCP_ECHO_SCHEMA } from './mcp-echo-schema.ts';
import { ECHO_ACTION } from './legacy-echo.ts';
import { isPlainObject } from '../envelope.ts';


/** MCP's CallToolAction (extra="forbid"): what `/schema` advertises and what unknown `type`s are checked against. */
export const CALL_TOOL_ACTION = actionModel('CallToolAction', 'Call a specific tool via MCP.', [
  { name: 'type', type: { kind: 'literal', value: 'call_tool' }, default: 'call_tool' },
  { name: 'tool_name', type: { kind: 'string' } },
  { name: 'arguments', type: { kind: 'dict' }, defaultFactory: () => ({}) },
]);

export const LIST_TOOLS_ACTION = actionModel('ListToolsAction', 'Request list of available tools from the MCP server.', [
  { name: 'type', type: { kind: 'literal', value: 'list_tools' }, default: 'list_tools' },
]);

const MESSAGE_PARAM = [{ name: 'message', description: 'The message to echo back' }];

/**
 * The longest message echoed, in UTF-16 units. A reply holds the message up to three times (text,
 * structured result, data), each character up to six bytes once escaped (`\u0001`), so an echo of a
 * 15 MiB message was a ~45 MB reply; this keeps any reply inside the 16 MiB per-message limit.
 */
export const ECHO_MAX_MESSAGE_CHARS = 512 * 1024;

function echoable(message: string): string {
  if (message.length > ECHO_MAX_MESSAGE_CHARS) {
    throw new Error(`message is ${message.length} characters; the echo env echoes at most ${ECHO_MAX_MESSAGE_CHARS} (its reply must fit the server's per-message limit)`);
  }
  return message;
}

export const ECHO_TOOLS: readonly McpToolDef[] = [
  {
    name: 'echo_message',
    title: 'Echo Message',
    description: 'Echo back the provided message.',
    params: MESSAGE_PARAM,
    wrapResult: true,
    outputSchema: { properties: { result: { type: 'string' } }, required: ['result'], type: 'object', 'x-fastmcp-wrap-result': true },
    run: ({ message }) => echoable(message),
  },
  {
    name: 'echo_with_length',
    title: 'Echo With Length',
    description: 'Echo back the message with its length.',
    params: MESSAGE_PARAM,
    wrapResult: false,
    outputSchema: { additionalProperties: true, type: 'object' },
    run: ({ message }) => ({ message: echoable(message), length: [...message].length }), // Python len(): code points
  },
];

/** The JSON-RPC `tools/list` items of the echo (see rpcToolEntry). */
const ECHO_RPC_TOOLS = ECHO_TOOLS.map(rpcToolEntry);

/** Which of the three action forms a step's data is (upstream routes on `type` first, §2.2). */
function actionForm(data: unknown): 'legacy' | 'list_tools' | 'call_tool' {
  if (isPlainObject(data)) {
    if (data.type === 'list_tools') return 'list_tools';
    if (!('type' in data) && !('tool_name' in data) && 'message' in data) return 'legacy';
  }
  return 'call_tool';
}

function validateEchoAction(data: unknown) {
  const form = actionForm(data);
  return validateModel(form === 'legacy' ? ECHO_ACTION : form === 'list_tools' ? LIST_TOOLS_ACTION : CALL_TOOL_ACTION, data);
}

class EchoEnvironment implements EnvInstance {
  private episodeId: string = globalThis.crypto.randomUUID();
  private stepCount = 0;

  /** `episode_id` is honoured when non-empty; `seed` and unknown keys are ignored (§2.6). */
  reset(kwargs: Record<string, unknown>): WireObservation {
    const requested = kwargs.episode_id;
    this.episodeId = typeof requested === 'string' && requested !== '' ? requested : globalThis.crypto.randomUUID();
    this.stepCount = 0;
    return { observation: {}, reward: 0.0, done: false };
  }

  step(data: Record<string, unknown>): WireObservation {
    const form = actionForm(data);
    if (form === 'legacy') {
      const message = echoable(requireValidAction(ECHO_ACTION, data).message as string);
      this.stepCount += 1;
      const length = [...message].length;
      // L * 0.1 in IEEE double, exactly as Python computes it (3 → 0.30000000000000004); never L / 10.
      return { observation: { echoed_message: message, message_length: length }, reward: length * 0.1, done: false };
    }
    if (form === 'list_tools') {
      requireValidAction(LIST_TOOLS_ACTION, data);
      this.stepCount += 1;
      return { observation: { tools: ECHO_TOOLS.map(stepToolEntry) }, reward: null, done: false };
    }
    const action = requireValidAction(CALL_TOOL_ACTION, data);
    const name = action.tool_name as string;
    // Failed calls count too (§2.5): the step happened, the tool did not.
    this.stepCount += 1;
    const outcome = callTool(ECHO_TOOLS, name, action.arguments);
    return { observation: { tool_name: name, result: outcome.result, error: outcome.error }, reward: null, done: false };
  }

  state(): Record<string, unknown> {
    return { episode_id: this.episodeId, step_count: this.stepCount };
  }

  listTools(): Record<string, unknown>[] {
    return ECHO_RPC_TOOLS;
  }

  callTool(name: string, args: Record<string, unknown>): ToolCallOutcome {
    return callTool(ECHO_TOOLS, name, args);
  }

  close(): void {
    // Holds no resources.
  }
}

export const echoEnv: EnvDefinition = {
  name: 'echo',
  metadata: defaultMetadata('EchoEnvironment'),
  schema: MCP_ECHO_SCHEMA,
  validateAction: validateEchoAction,
  create: () => new EchoEnvironment(),
};
