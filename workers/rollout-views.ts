// Flattens the rollouts of a GRPO step into what the rollout viewer shows: the prompt exactly as the
// model saw it, each sampled assistant turn decoded from its own tokens (special tokens kept, so
// `<tool_call>` and `<|im_end|>` are visible), the tool responses between turns, and the step's
// reward, advantage, per-function rewards and unscorable reason for each rollout.

import type { RolloutView } from './api.ts';
import type { ChatMessage } from '../src/model/chat-template.ts';
import type { TextTokenizer } from '../src/model/tokenizer.ts';
import type { CompletionSample } from '../src/rl/grpo/metrics.ts';
import { weightedRewardSum } from '../src/rl/grpo/rewards.ts';
import type { Rollout } from '../src/rl/rollout/rollout.ts';
import { contentImages, contentText } from '../src/rl/rollout/images.ts';
import type { ScreenshotBudget } from './stored-screenshots.ts';

export interface RolloutViewInput {
  /** The generation's rollouts, in trainer order (groups of G adjacent). */
  rollouts: readonly Rollout[];
  /** The step's logged completions: sample i belongs to rollout i (all of them, or the first group). */
  samples: readonly CompletionSample[];
  unscorable: readonly { rollout: number; reason: string }[];
  numGenerations: number;
  /** One weight per reward function, in the order of each sample's `rewards`. */
  rewardWeights: readonly number[];
  tokenizer: TextTokenizer;
  /** The run's screenshot budget: tool results' images are kept within it (none kept without one). */
  screenshots?: ScreenshotBudget;
}

/** The completion's sampled turns: maximal runs of tool_mask = 1 tokens, in order. */
function sampledTurnIds(completionIds: readonly number[], toolMask: readonly number[]): number[][] {
  const turns: number[][] = [];
  completionIds.forEach((id, t) => {
    if (toolMask[t] !== 1) return;
    if (t === 0 || toolMask[t - 1] !== 1) turns.push([]);
    turns[turns.length - 1]!.push(id);
  });
  return turns;
}

/** A tool message's text: a string as it is; content blocks' text parts (their images are shown as images); anything else as JSON. */
function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  return Array.isArray(content) && content.every((b) => typeof b === 'object' && b !== null && 'type' in b) ? contentText(content) : JSON.stringify(content);
}

/** A tool turn for the viewer, with its images as the budget keeps them. */
function toolTurn(m: Extract<ChatMessage, { role: 'tool' }>, budget: ScreenshotBudget | undefined): RolloutView['turns'][number] {
  const turn: RolloutView['turns'][number] = { role: 'tool', name: m.name, text: textOf(m.content) };
  const images = contentImages(m.content);
  if (images.length === 0) return turn;
  const kept = budget ? images.map((im) => budget.keep(im)).filter((k) => k !== null) : [];
  if (kept.length > 0) turn.images = kept;
  if (kept.length < images.length) turn.omittedImages = images.length - kept.length;
  return turn;
}

/** Combined reward as the trainer computes it (weighted sum; null when unscorable or every function abstained). */
function combinedReward(rewards: Record<string, number | null>, weights: readonly number[], failed: boolean): number | null {
  if (failed) return null;
  const columns = Object.values(rewards).map((v) => Float64Array.of(v ?? NaN));
  if (columns.length === 0) return null;
  const sum = weightedRewardSum(columns, [...weights])[0]!;
  return Number.isFinite(sum) ? sum : null;
}

export function rolloutViews(input: RolloutViewInput): RolloutView[] {
  input.screenshots?.step();
  const failures = new Map(input.unscorable.map((u) => [u.rollout, u.reason]));
  return input.samples.map((sample, i) => {
    const rollout = input.rollouts[i];
    if (!rollout) throw new Error(`rollout views: sample ${i} has no rollout (${input.rollouts.length} rollouts)`);
    const turns: RolloutView['turns'] = [{ role: 'prompt', text: input.tokenizer.decode(rollout.promptIds) }];
    const sampled = sampledTurnIds(rollout.completionIds, rollout.toolMask);
    let k = 0;
    for (const m of rollout.completion) {
      if (m.role === 'assistant') {
        turns.push({ role: 'assistant', text: sampled[k] ? input.tokenizer.decode(sampled[k]!) : m.content });
        k++;
      } else if (m.role === 'tool') turns.push(toolTurn(m, input.screenshots));
    }
    const error = failures.get(i) ?? rollout.error;
    const view: RolloutView = {
      group: Math.floor(i / input.numGenerations),
      index: i % input.numGenerations,
      turns,
      reward: combinedReward(sample.rewards, input.rewardWeights, error !== undefined),
      advantage: sample.advantage,
      rewards: sample.rewards,
    };
    if (error !== undefined) view.error = error;
    if (rollout.overBudget) view.overBudget = { ...rollout.overBudget };
    return view;
  });
}
