// make-tiny-model --arch qwen3_5 --vision writes Qwen3.5's own chat template (chat_template.jinja, as the
// Qwen3.5 checkpoints ship it), and the tiny byte-level tokenizer has every special token it emits: an
// image block renders to <|vision_start|><|image_pad|><|vision_end|> (one id each), tool calls are
// parsed in the XML form, and the template is the one rollouts render with (prefix-preserving).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { renderChat, type ChatMessage } from '../../src/model/chat-template.ts';
import { QWEN3_5_CHAT_TEMPLATE } from '../../src/model/qwen3_5-chat-template.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { loadCheckpointTokenizer } from '../../src/model/tokenizer.ts';
import { toolCallFormatOf } from '../../src/rl/rollout/parse.ts';
import { rolloutChatTemplate } from '../../src/rl/rollout/templates/select.ts';

const FIXTURE = new URL('../fixtures/qwen3_5-tokenizer/chat_template.jinja', import.meta.url).pathname;

describe('the tiny VL chat template', () => {
  it('is Qwen3.5\'s template, byte for byte', () => {
    expect(QWEN3_5_CHAT_TEMPLATE).toBe(readFileSync(FIXTURE, 'utf8'));
  });

  it('make-tiny-model --vision writes it as chat_template.jinja; images and tool calls render with the tiny vocabulary\'s specials', async () => {
    const tiny = await makeTinyModel({ arch: 'qwen3_5', vision: true });
    expect(new TextDecoder().decode(tiny.files.get('chat_template.jinja'))).toBe(QWEN3_5_CHAT_TEMPLATE);
    // transformers 5's form: the template lives in chat_template.jinja only.
    expect(JSON.parse(new TextDecoder().decode(tiny.files.get('tokenizer_config.json')))).not.toHaveProperty('chat_template');
    const ckpt = await openCheckpoint(tiny.files);
    const tokenizer = await loadCheckpointTokenizer(ckpt, 'tiny VL');
    expect(tokenizer.chatTemplate).toBe(QWEN3_5_CHAT_TEMPLATE);

    const user = { role: 'user', content: [{ type: 'image' }, { type: 'text', text: 'hi' }] } as unknown as ChatMessage;
    const ids = tokenizer.encode(renderChat(QWEN3_5_CHAT_TEMPLATE, [user], { addGenerationPrompt: true }));
    const specials = ['<|im_start|>', '<|im_end|>', '<|vision_start|>', '<|image_pad|>', '<|vision_end|>', '<think>', '</think>'];
    const idOf = Object.fromEntries(specials.map((s) => {
      const one = tokenizer.encode(s);
      expect(one, s).toHaveLength(1);
      return [s, one[0]!];
    }));
    expect(idOf['<|image_pad|>']).toBe(tiny.config.vision!.imageTokenId);
    const vs = ids.indexOf(idOf['<|vision_start|>']!);
    expect(ids.slice(vs, vs + 3)).toEqual([idOf['<|vision_start|>'], idOf['<|image_pad|>'], idOf['<|vision_end|>']]);
    expect(tokenizer.decode(ids)).toBe('<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>hi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');

    // With tools the rollouts render with this template itself (no training variant swapped in) and parse XML tool calls.
    expect(rolloutChatTemplate(tokenizer, { hasTools: true })).toBe(QWEN3_5_CHAT_TEMPLATE);
    expect(toolCallFormatOf(QWEN3_5_CHAT_TEMPLATE)).toBe('xml');
    for (const s of ['<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>']) expect(tokenizer.encode(s), s).toHaveLength(1);
  });
});
