// TRL's echo example env (examples/scripts/openenv/echo.py): one tool, `echo(message)`, whose reward is
// the echo env's step reward (0.1 per code point of the last echoed message).
// Against current OpenEnv's echo (an MCP env, specs/openenv-mcp.md) `echo` is a `call_tool` of
// `echo_message`; that env rewards no tool step (reward null), so the reward is the same rule applied
// to what the env echoed back: code points × 0.1, as the older echo computed it.

import { rpcToolResult, toolCallValue } from '../../../openenv/index.ts';
import type { DatasetRow, Tool, ToolEnv } from '../../rollout/env.ts';
import type { ToolDeclaration } from '../../rollout/schema.ts';
import { EpisodeSlot, type OpenEpisode } from './episode-session.ts';

export const ECHO_TOOL: ToolDeclaration = {
  name: 'echo',
  description: 'Echo the message back from the environment.',
  parameters: [{ name: 'message', type: 'string', description: 'The message to echo' }],
  returns: { type: 'string', description: 'The echoed message.' },
};

/** The MCP echo's tool that TRL's `echo` maps to. */
export const MCP_ECHO_TOOL = 'echo_message';

export class EchoToolEnv implements ToolEnv {
  reward: number | null = 0;
  private readonly episode: EpisodeSlot;
  readonly tools: Tool[] = [{ declaration: ECHO_TOOL, call: (args) => this.echo(args.message) }];

  constructor(baseUrl: string, open: OpenEpisode) {
    this.episode = new EpisodeSlot(baseUrl, open);
  }

  /** The prompt is left unchanged; the episode's connection opens here. */
  async reset(_row: DatasetRow): Promise<null> {
    this.reward = 0;
    await this.episode.reset();
    return null;
  }

  async echo(message: unknown): Promise<unknown> {
    if (this.episode.protocol === 'action') {
      const result = await this.episode.step({ message });
      this.reward = typeof result.reward === 'number' ? result.reward : null;
      return result.observation.echoed_message;
    }
    let echoed: unknown;
    let reward: number | boolean | null = null;
    if (this.episode.protocol === 'mcp') {
      const result = await this.episode.step({ type: 'call_tool', tool_name: MCP_ECHO_TOOL, arguments: { message } });
      echoed = toolCallValue(result.observation);
      reward = result.reward;
    } else {
      const reply = await this.episode.mcp({ jsonrpc: '2.0', method: 'tools/call', params: { name: MCP_ECHO_TOOL, arguments: { message } }, id: 1 });
      const result = rpcToolResult(MCP_ECHO_TOOL, reply) as { data?: unknown } | null;
      echoed = result && typeof result === 'object' && 'data' in result ? result.data : result;
    }
    this.reward = typeof reward === 'number' ? reward : typeof echoed === 'string' ? [...echoed].length * 0.1 : null;
    return echoed;
  }

  close(): Promise<void> {
    return this.episode.close();
  }
}
