// TRL's echo example env (examples/scripts/openenv/echo.py): one tool, `echo(message)`, whose reward is
// the echo env's step reward (0.1 per code point of the last echoed message).

import type { DatasetRow, Tool, ToolEnv } from '../env.ts';
import type { ToolDeclaration } from '../schema.ts';
import { EpisodeSlot, type OpenEpisode } from './episode.ts';

export const ECHO_TOOL: ToolDeclaration = {
  name: 'echo',
  description: 'Echo the message back from the environment.',
  parameters: [{ name: 'message', type: 'string', description: 'The message to echo' }],
  returns: { type: 'string', description: 'The echoed message.' },
};

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
    const result = await this.episode.step({ message });
    this.reward = typeof result.reward === 'number' ? result.reward : null;
    return result.observation.echoed_message;
  }

  close(): Promise<void> {
    return this.episode.close();
  }
}
