// Any MCP environment as a trainer task, with no per-env code (specs/openenv-mcp.md §8): its
// `tools/list` becomes the model's tools (each tool's input schema, cleaned the way OpenEnv's own
// llm_client does, is the function's parameters), every tool call is a `call_tool` step, the reward is
// the env's own (from each step's envelope), and the prompts come from the user (text or JSONL).

import { isCallToolObservation, parseToolList, rpcToolResult, toolCallValue, toolResultText, type EnvProtocol, type McpTool } from '../../../openenv/index.ts';
import { EnvFailure, type DatasetRow, type Tool, type ToolEnv } from '../../rollout/env.ts';
import type { JsonSchema, ToolSchema } from '../../rollout/schema.ts';
import { EpisodeSlot, type OpenEpisode } from './episode-session.ts';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** OpenEnv's schema cleaner (§8): an object schema with `properties`, whatever the tool declared. */
export function cleanToolSchema(schema: unknown): JsonSchema {
  if (!isObject(schema)) return { type: 'object', properties: {}, required: [] };
  let out: JsonSchema = { ...schema };
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(out[key])) {
      const branch = (out[key] as unknown[]).find((b) => isObject(b) && b.type === 'object');
      out = isObject(branch) ? { ...branch } : { type: 'object', properties: {}, required: [] };
    }
  }
  if (Array.isArray(out.allOf)) {
    const properties: Record<string, unknown> = {};
    const required: unknown[] = [];
    for (const part of out.allOf as unknown[]) {
      if (!isObject(part)) continue;
      if (isObject(part.properties)) Object.assign(properties, part.properties);
      if (Array.isArray(part.required)) required.push(...part.required);
    }
    out = { type: 'object', properties, required };
  }
  out.type ??= 'object';
  if (out.type === 'object' && !isObject(out.properties)) out.properties = {};
  return out;
}

/** A tool of the env as the model's function: name, description, cleaned input schema. */
export function mcpToolSchema(tool: McpTool): ToolSchema {
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters: cleanToolSchema(tool.inputSchema) as ToolSchema['function']['parameters'] } };
}

/** One episode of an MCP env: tools as the env lists them, reward = the last reward the env gave. */
export class McpToolEnv implements ToolEnv {
  /** The env's last non-null step reward this episode; 0 when it gave none (TRL's examples start `self.reward = 0.0`). */
  reward = 0;
  readonly tools: Tool[];
  private readonly episode: EpisodeSlot;

  constructor(baseUrl: string, open: OpenEpisode, tools: readonly McpTool[]) {
    this.episode = new EpisodeSlot(baseUrl, open);
    this.tools = tools.map((tool) => {
      const schema = mcpToolSchema(tool);
      const required = new Set(Array.isArray(schema.function.parameters.required) ? schema.function.parameters.required : []);
      return {
        declaration: {
          name: tool.name,
          description: tool.description,
          parameters: Object.entries(schema.function.parameters.properties).map(([name, p]) => ({
            name,
            type: 'any' as const,
            description: isObject(p) && typeof p.description === 'string' ? p.description : '',
            optional: !required.has(name),
          })),
        },
        schema,
        call: (args: Record<string, unknown>) => this.call(tool.name, args),
      };
    });
  }

  /**
   * Resets with the row's columns other than `prompt` as the reset's kwargs (TRL passes every column to
   * `reset`; OpenEnv's reset takes `seed`, `episode_id` and the env's own extras). The reset
   * observation, when it says anything, goes after the prompt as JSON on its own line.
   */
  async reset(row: DatasetRow): Promise<string | null> {
    this.reward = 0;
    const { prompt: _prompt, ...kwargs } = row;
    const first = await this.episode.reset(kwargs);
    const observation = first.observation;
    return isObject(observation) && Object.keys(observation).length === 0 ? null : `\n${JSON.stringify(observation)}`;
  }

  /** A call_tool step (or JSON-RPC tools/call for envs with their own action class); the model reads the result text. */
  async call(name: string, args: Record<string, unknown>): Promise<string> {
    if (this.episode.protocol === 'mcp-rpc') {
      const result = rpcToolResult(name, await this.episode.mcp({ jsonrpc: '2.0', method: 'tools/call', params: { name, arguments: args }, id: 1 }));
      return toolResultText(result);
    }
    const step = await this.episode.step({ type: 'call_tool', tool_name: name, arguments: args });
    const reward = typeof step.reward === 'boolean' ? Number(step.reward) : step.reward;
    if (typeof reward === 'number') this.reward = reward;
    const value = toolCallValue(step.observation); // throws the env's tool error (the model reads it as the result)
    // An env's own observation (not a CallToolObservation) is the result as it came: its JSON.
    return isCallToolObservation(step.observation) ? toolResultText(step.observation.result) : JSON.stringify(value);
  }

  close(): Promise<void> {
    return this.episode.close();
  }
}

/** The env's tools, read once through an episode of its own (list_tools is a step there, so it is not reused). */
export async function listEnvTools(baseUrl: string, open: OpenEpisode): Promise<{ tools: McpTool[]; protocol: EnvProtocol }> {
  const episode = new EpisodeSlot(baseUrl, open);
  try {
    await episode.reset();
    const protocol = episode.protocol;
    if (protocol === 'action') throw new Error(`${baseUrl} is not an MCP environment (its /schema and /ws say it takes its own actions)`);
    const listing = protocol === 'mcp' ? await listToolsStep(episode) : await rpcToolList(episode);
    const tools = parseToolList(listing);
    if (tools.length === 0) throw new Error(`${baseUrl} lists no tools: there is nothing for the model to call`);
    return { tools, protocol };
  } finally {
    await episode.close();
  }
}

const rpcToolList = async (episode: EpisodeSlot) => rpcToolResult('tools/list', await episode.mcp({ jsonrpc: '2.0', method: 'tools/list', id: 1 }));

/**
 * A `list_tools` step; an env whose action class subclasses CallToolAction (finqa) refuses it as an
 * invalid action, and then, as OpenEnv's MCPToolClient, JSON-RPC `tools/list` on the same socket lists the tools.
 */
async function listToolsStep(episode: EpisodeSlot): Promise<unknown> {
  try {
    return (await episode.step({ type: 'list_tools' })).observation;
  } catch (err) {
    if (err instanceof EnvFailure) throw err;
    try {
      return await rpcToolList(episode);
    } catch (rpcErr) {
      throw new Error(`cannot list the tools: the list_tools step was refused (${(err as Error).message}) and JSON-RPC tools/list failed too (${(rpcErr as Error).message})`);
    }
  }
}
