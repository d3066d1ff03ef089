import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { renderChat, type ChatMessage } from '../../src/model/chat-template.ts';
import { loadTokenizer } from '../../src/model/tokenizer.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { COMPACT_CATCH_TASK, COMPACT_CHAT_TEMPLATE, compactCatchAction, compactCatchObservation, CompactCatchEnv } from '../../src/rl/tasks/compact-catch.ts';
import { toolSuffixText } from '../../src/rl/rollout/rollout.ts';
import { tokenizeTranscript } from '../../src/rl/grpo/sft.ts';
import { compactCatchTranscripts, seededEpisodes } from '../../src/rl/tasks/solvers.ts';
import { computeRewardMatrix } from '../../src/rl/grpo/rewards.ts';

let server: EnvServer;
beforeAll(async () => {
  server = await createEnvServer({ port: 0 });
});
afterAll(async () => {
  await server?.close();
});

const grid = (ball: [number, number], paddle: number) => {
  const s = new Array(50).fill(0);
  s[ball[0] * 5 + ball[1]] = 1;
  s[45 + paddle] = 1;
  return s;
};

describe('compact catch', () => {
  it('observations say where the ball is relative to the paddle, then how the game ended', () => {
    expect(compactCatchObservation(grid([0, 0], 2), false, null)).toBe('left');
    expect(compactCatchObservation(grid([3, 4], 2), false, null)).toBe('right');
    expect(compactCatchObservation(grid([8, 2], 2), false, null)).toBe('above');
    expect(compactCatchObservation(grid([8, 2], 2), true, 1)).toBe('caught');
    expect(compactCatchObservation(grid([8, 1], 2), true, -1)).toBe('missed');
    expect(compactCatchAction('left')).toEqual({ name: 'move', arguments: { direction: 'left' } });
    expect(compactCatchAction('above')).toEqual({ name: 'stay', arguments: {} });
  });

  it('the template renders Qwen3 turns, is prefix-preserving, and gives the Qwen3 tool suffix', async () => {
    const tiny = await makeTinyModel({ seed: 0 });
    const tok = loadTokenizer(new TextDecoder().decode(tiny.files.get('tokenizer.json')!), new TextDecoder().decode(tiny.files.get('tokenizer_config.json')!));
    const call = { type: 'function' as const, function: { name: 'move', arguments: { direction: 'left' } } };
    const msgs: ChatMessage[] = [
      { role: 'user', content: 'Catch the ball.\nleft' },
      { role: 'assistant', content: '', tool_calls: [call] },
      { role: 'tool', name: 'move', content: 'above' },
    ];
    expect(renderChat(COMPACT_CHAT_TEMPLATE, msgs, { addGenerationPrompt: true })).toBe(
      '<|im_start|>user\nCatch the ball.\nleft<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "move", "arguments": {"direction": "left"}}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\nabove\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    expect(toolSuffixText({ tokenizer: tok, template: COMPACT_CHAT_TEMPLATE }, [{ role: 'tool', name: 'move', content: 'R' }])).toBe(
      '\n<|im_start|>user\n<tool_response>\nR\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('the scripted solver always catches; transcripts tokenize short enough for tiny-model training', async () => {
    const ts = await compactCatchTranscripts({ baseUrl: `${server.url}/envs/catch`, episodes: 6, seed: 2 });
    const tiny = await makeTinyModel({ seed: 0 });
    const tok = loadTokenizer(new TextDecoder().decode(tiny.files.get('tokenizer.json')!), new TextDecoder().decode(tiny.files.get('tokenizer_config.json')!));
    for (const t of ts) {
      expect(t.messages.filter((m) => m.role === 'tool').map((m) => m.content).pop()).toBe('caught');
      const ex = tokenizeTranscript(t, { tokenizer: tok, template: COMPACT_CHAT_TEMPLATE });
      expect(ex.ids.length).toBeLessThan(400);
    }
  });

  it('rewards: caught (catch reward once done) and progress (moves played / 9)', async () => {
    const env = new CompactCatchEnv(`${server.url}/envs/catch`, seededEpisodes(4));
    let obs = await env.reset({ prompt: [] });
    const moves = [];
    while (!env.done) {
      const a = compactCatchAction(obs);
      obs = String(await env.tools.find((t) => t.declaration.name === a.name)!.call(a.arguments));
      moves.push(a.name);
    }
    expect(moves).toHaveLength(9);
    expect(obs).toBe('caught');
    const half = new CompactCatchEnv('http://unused', seededEpisodes(0));
    half.moves = 3;
    const R = await computeRewardMatrix(COMPACT_CATCH_TASK.rewardFuncs, {
      prompts: [[], []], completions: [[], []], completion_ids: [[], []], environments: [env, half], trainer_state: { global_step: 0 },
    });
    expect(COMPACT_CATCH_TASK.rewardFuncs.map((f) => f.name)).toEqual(['caught', 'progress']);
    expect(Array.from(R[0]!)).toEqual([1, 0]);
    expect(Array.from(R[1]!)).toEqual([1, 1 / 3]);
    await env.close();
  });
});
