// The generic MCP task: `webgrpo train --env URL --prompt TEXT|--dataset FILE` on an MCP env that is
// none of TRL's examples. Tools from the env's tools/list, rewards from the env, prompts from the user.

import type { ChatMessage } from '../../model/chat-template.ts';
import type { DatasetRow } from '../rollout/env.ts';
import { listEnvTools, McpToolEnv } from './envs/mcp.ts';
import { openEnvEpisodes, type OpenEpisode } from './envs/episode-session.ts';
import type { RewardFunction } from '../grpo/rewards.ts';
import type { ChatTemplateTask } from './task.ts';

/** A JSONL prompt dataset: one object per line with `prompt` (a string, or a list of chat messages). */
export function parsePromptDataset(text: string, source: string): DatasetRow[] {
  const rows: DatasetRow[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new Error(`${source}:${i + 1}: not JSON (${(err as Error).message})`);
    }
    const prompt = (value as { prompt?: unknown } | null)?.prompt;
    if (typeof prompt === 'string' && prompt.trim() !== '') rows.push({ ...(value as object), prompt: [{ role: 'user', content: prompt }] });
    else if (Array.isArray(prompt) && prompt.length > 0 && prompt.every((m) => m && typeof m === 'object' && typeof m.role === 'string')) {
      rows.push({ ...(value as object), prompt: prompt as ChatMessage[] });
    } else throw new Error(`${source}:${i + 1}: needs a "prompt" field: a non-empty string or a list of {role, content} messages`);
  });
  if (rows.length === 0) throw new Error(`${source}: no prompts (one JSON object with a "prompt" field per line)`);
  return rows;
}

/**
 * The app's prompt box: JSONL rows (as parsePromptDataset) when the text starts with '{', otherwise one
 * user prompt per non-empty line.
 */
export function parsePromptText(text: string, source: string): DatasetRow[] {
  if (text.trimStart().startsWith('{')) return parsePromptDataset(text, source);
  const rows = text.split('\n').map((l) => l.trim()).filter((l) => l !== '').map((content): DatasetRow => ({ prompt: [{ role: 'user', content }] }));
  if (rows.length === 0) throw new Error(`${source}: no prompts (write one per line)`);
  return rows;
}

/** The task for the MCP env at `url`; reads its tool list once (a clear error if it is not an MCP env). */
export async function mcpTask(url: string, prompts: DatasetRow[], open: OpenEpisode = openEnvEpisodes()): Promise<ChatTemplateTask> {
  if (prompts.length === 0) throw new Error(`${url} is an MCP environment none of the built-in tasks knows: give the model a prompt (--prompt TEXT or --dataset FILE.jsonl)`);
  const { tools } = await listEnvTools(url, open);
  const reward: RewardFunction = ({ environments }) =>
    environments.map((env) => {
      if (!(env instanceof McpToolEnv)) throw new Error('reward_from_env: not an MCP tool env');
      return env.reward;
    });
  Object.defineProperty(reward, 'name', { value: 'reward_from_env' });
  return {
    name: 'mcp',
    // The prompts cycled to `size` rows (default: each once).
    dataset: (size = prompts.length) => Array.from({ length: size }, (_, i) => structuredClone(prompts[i % prompts.length]!)),
    envFactory: (_urls, episodes) => () => new McpToolEnv(url, episodes ?? open, tools),
    rewardFuncs: [reward],
    config: { chat_template_kwargs: { enable_thinking: false }, log_completions: true },
  };
}
