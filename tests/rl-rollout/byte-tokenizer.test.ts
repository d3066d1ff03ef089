// The tiny test models' byte-level tokenizer (src/model/byte-tokenizer.ts) through the same loader,
// template selection and rollout loop as the real Qwen3 one.

import { describe, expect, it } from 'vitest';
import { buildByteTokenizer } from '../../src/model/byte-tokenizer.ts';
import { loadTokenizer } from '../../src/model/tokenizer.ts';
import type { Tool, ToolEnv } from '../../src/rl/rollout/env.ts';
import { runRollouts } from '../../src/rl/rollout/rollout.ts';
import { QWEN3_TRAINING_TEMPLATE } from '../../src/rl/rollout/templates/qwen3-training.ts';
import { rolloutChatTemplate } from '../../src/rl/rollout/templates/select.ts';
import { callText, FakeEngine } from './fake-engine.ts';

const files = buildByteTokenizer();
const tok = loadTokenizer(JSON.stringify(files.tokenizerJson), JSON.stringify(files.tokenizerConfig));
const id = (token: string) => files.addedTokenIds.get(token)!;

describe('byte-level tokenizer', () => {
  it('has the Qwen3 special tokens, eos and pad', () => {
    expect(tok.eosTokenId).toBe(id('<|im_end|>'));
    expect(tok.padTokenId).toBe(id('<|endoftext|>'));
    expect(tok.size).toBe(files.size);
    expect(tok.encode('<|im_start|>assistant\n<think>')[0]).toBe(id('<|im_start|>'));
    expect(tok.encode('x<tool_call>y')).toContain(id('<tool_call>'));
  });

  it('round-trips text and skips only special tokens', () => {
    const text = '<|im_start|>user\nhéllo ✓ [crane]<|im_end|>\n<tool_call>\n{"a": 1}\n</tool_call>';
    expect(tok.decode(tok.encode(text))).toBe(text);
    expect(tok.decode(tok.encode(text), { skipSpecialTokens: true })).toBe('user\nhéllo ✓ [crane]\n<tool_call>\n{"a": 1}\n</tool_call>');
  });

  it('swaps in the training template and runs the tool loop', async () => {
    expect(rolloutChatTemplate(tok, { hasTools: true })).toBe(QWEN3_TRAINING_TEMPLATE);
    const tools: Tool[] = [{ declaration: { name: 'echo', description: 'Echo.', parameters: [{ name: 'message', type: 'string', description: 'm' }] }, call: (a) => a.message }];
    const env: ToolEnv = { reset: () => null, tools };
    const turns = [callText('echo', { message: 'hi' }) + '<|im_end|>', 'bye<|im_end|>'];
    const engine = new FakeEngine(tok, (context) => turns[context.split('<|im_start|>assistant\n').length - 2]);
    const [r] = await runRollouts({
      engine, tokenizer: tok, rows: [{ prompt: [{ role: 'user', content: 'say hi' }] }], envFactory: () => env,
      config: { max_completion_length: 256, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' }, seed: 0,
    });
    expect(tok.decode(r.completionIds)).toBe(
      turns[0] + '\n<|im_start|>user\n<tool_response>\nhi\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n' + turns[1],
    );
    const masked = r.completionIds.filter((_, i) => r.toolMask[i] === 0);
    expect(tok.decode(masked)).toBe('\n<|im_start|>user\n<tool_response>\nhi\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
  });
});
