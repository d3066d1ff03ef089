// What the rollout viewer receives for one GRPO group: the prompt as the model saw it, each sampled
// turn decoded from its own tokens with special tokens kept, tool responses in between, rewards,
// advantages and the unscorable reason. Built from a hand-made group so every field is known.
import { describe, expect, it } from 'vitest';
import { buildByteTokenizer } from '../../src/model/byte-tokenizer.ts';
import { loadTokenizer } from '../../src/model/tokenizer.ts';
import type { CompletionSample } from '../../src/rl/grpo/metrics.ts';
import type { Rollout } from '../../src/rl/rollout/rollout.ts';
import { rolloutViews } from '../../workers/rollout-views.ts';

const files = buildByteTokenizer();
const tokenizer = loadTokenizer(JSON.stringify(files.tokenizerJson), JSON.stringify(files.tokenizerConfig));

const PROMPT = '<|im_start|>user\nCatch the ball.\nleft<|im_end|>\n<|im_start|>assistant\n';
const CALL = '<tool_call>\n{"name": "move", "arguments": {"direction": "left"}}\n</tool_call><|im_end|>';
const SUFFIX = '\n<|im_start|>user\n<tool_response>\ncaught\n</tool_response><|im_end|>\n<|im_start|>assistant\n';
const ANSWER = 'Done.<|im_end|>';

function rollout(parts: { text: string; sampled: boolean }[], completion: Rollout['completion'], error?: string): Rollout {
  const completionIds: number[] = [];
  const toolMask: number[] = [];
  for (const p of parts) {
    const ids = tokenizer.encode(p.text);
    completionIds.push(...ids);
    toolMask.push(...ids.map(() => (p.sampled ? 1 : 0)));
  }
  return {
    row: { prompt: [{ role: 'user', content: 'Catch the ball.\n' }] },
    prompt: [{ role: 'user', content: 'Catch the ball.\nleft' }],
    promptIds: tokenizer.encode(PROMPT),
    completionIds,
    toolMask,
    stubbornMask: completionIds.map(() => 0),
    logprobs: completionIds.map(() => 0),
    completion,
    images: [],
    truncated: false,
    env: { reset: () => null, tools: [] },
    toolCalls: completion.filter((m) => m.role === 'tool').length,
    toolFailures: 0,
    stubbornCalls: 0,
    ...(error ? { error } : {}),
  };
}

const sample = (rewards: Record<string, number | null>, advantage: number): CompletionSample => ({ step: 3, prompt: '', completion: '', rewards, advantage });

describe('rollout views', () => {
  const withCall = rollout(
    [{ text: CALL, sampled: true }, { text: SUFFIX, sampled: false }, { text: ANSWER, sampled: true }],
    [
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'move', arguments: { direction: 'left' } } }] },
      { role: 'tool', name: 'move', content: 'caught' },
      { role: 'assistant', content: 'Done.' },
    ],
  );
  const plain = rollout([{ text: 'I will not play.<|im_end|>', sampled: true }], [{ role: 'assistant', content: 'I will not play.' }]);
  const failed = rollout([], [], 'reset failed: connection refused');
  const views = rolloutViews({
    rollouts: [withCall, plain, failed, plain],
    samples: [sample({ caught: 1, format: 0.5 }, 0.9), sample({ caught: 0, format: 0 }, -0.9), sample({ caught: null, format: null }, 0), sample({ caught: 0, format: null }, 0)],
    unscorable: [{ rollout: 2, reason: 'reset failed: connection refused' }],
    numGenerations: 2,
    rewardWeights: [1, 2],
    tokenizer,
  });

  it('shows the prompt, each sampled turn with its special tokens, and the tool response between them', () => {
    expect(views[0]!.turns).toEqual([
      { role: 'prompt', text: PROMPT },
      { role: 'assistant', text: CALL },
      { role: 'tool', name: 'move', text: 'caught' },
      { role: 'assistant', text: ANSWER },
    ]);
    expect(views[1]!.turns.map((t) => t.role)).toEqual(['prompt', 'assistant']);
  });

  it('numbers rollouts within their GRPO group', () => {
    expect(views.map((v) => [v.group, v.index])).toEqual([[0, 0], [0, 1], [1, 0], [1, 1]]);
  });

  it('carries the weighted reward, the advantage, per-function rewards and the unscorable reason', () => {
    expect(views[0]!.reward).toBeCloseTo(1 + 2 * 0.5, 12);
    expect(views[0]!.advantage).toBe(0.9);
    expect(views[0]!.rewards).toEqual({ caught: 1, format: 0.5 });
    expect(views[1]!.reward).toBe(0);
    expect(views[2]!.reward).toBeNull();
    expect(views[2]!.error).toBe('reset failed: connection refused');
    expect(views[2]!.turns).toEqual([{ role: 'prompt', text: PROMPT }]);
    // A function that abstains (null) is skipped in the sum, as the trainer's nansum does.
    expect(views[3]!.reward).toBe(0);
    expect(views[0]).not.toHaveProperty('error');
  });

  it('says when the last tool results were rolled back for the budget', () => {
    const [cut] = rolloutViews({ rollouts: [{ ...plain, overBudget: { tokens: 640, budget: 600 } }], samples: [sample({ caught: 0 }, 0)], unscorable: [], numGenerations: 1, rewardWeights: [1], tokenizer });
    expect(cut!.overBudget).toEqual({ tokens: 640, budget: 600 });
    expect(views[0]).not.toHaveProperty('overBudget');
  });

  it('refuses samples without their rollouts', () => {
    expect(() => rolloutViews({ rollouts: [], samples: [sample({}, 0)], unscorable: [], numGenerations: 2, rewardWeights: [], tokenizer })).toThrow(/sample 0 has no rollout/);
  });
});
