import { describe, expect, it } from 'vitest';
import { renderChat, type ChatMessage } from '../../src/model/chat-template.ts';
import { toolSuffixIds, toolSuffixText } from '../../src/rl/rollout/rollout.ts';
import { QWEN3_TRAINING_TEMPLATE } from '../../src/rl/rollout/templates/qwen3-training.ts';
import { isPrefixPreserving, rolloutChatTemplate } from '../../src/rl/rollout/templates/select.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

const tok = qwen3Tokenizer();
const OWN = tok.chatTemplate!;
const TOOL = { type: 'function', function: { name: 'stay', description: 'Stay.', parameters: { type: 'object', properties: {} } } };

describe('Qwen3 training template (grpo-semantics.md §3.2)', () => {
  const promptsWithoutAssistant: ChatMessage[][] = [
    [{ role: 'user', content: 'hi' }],
    [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ],
  ];

  it('renders prompts without assistant turns exactly like the checkpoint template', () => {
    for (const messages of promptsWithoutAssistant) {
      for (const tools of [null, [TOOL]]) {
        for (const kwargs of [null, { enable_thinking: false }, { enable_thinking: true }]) {
          const opts = { tools, addGenerationPrompt: true, chatTemplateKwargs: kwargs };
          expect(renderChat(QWEN3_TRAINING_TEMPLATE, messages, opts)).toBe(renderChat(OWN, messages, opts));
        }
      }
    }
  });

  it('system message with tools: SYSTEM then the tools block (§3.1)', () => {
    const text = renderChat(QWEN3_TRAINING_TEMPLATE, promptsWithoutAssistant[1], { tools: [TOOL] });
    expect(text.startsWith('<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call')).toBe(true);
    expect(renderChat(QWEN3_TRAINING_TEMPLATE, promptsWithoutAssistant[1])).toBe('<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n');
  });

  it('always writes the think block in assistant turns, calls after content, tool results in one user turn', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: 'Sure.',
        tool_calls: [
          { type: 'function', function: { name: 'echo', arguments: { message: 'héllo' } } },
          { type: 'function', function: { name: 'stay', arguments: '{}' } },
        ],
      },
      { role: 'tool', name: 'echo', content: 'A' },
      { role: 'tool', name: 'stay', content: ['not text'] },
      { role: 'assistant', content: '<think>\nr\n</think>\n\nDone.' },
    ];
    expect(renderChat(QWEN3_TRAINING_TEMPLATE, messages)).toBe(
      '<|im_start|>user\ngo<|im_end|>\n' +
        '<|im_start|>assistant\n<think>\n\n</think>\n\nSure.\n<tool_call>\n{"name": "echo", "arguments": {"message": "héllo"}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "stay", "arguments": {}}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\nA\n</tool_response>\n<tool_response>\n\n</tool_response><|im_end|>\n' +
        '<|im_start|>assistant\n<think>\nr\n</think>\n\nDone.<|im_end|>\n',
    );
  });

  it('no newline before the first call when the content is empty', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'stay', arguments: {} } }] },
    ];
    expect(renderChat(QWEN3_TRAINING_TEMPLATE, messages)).toBe(
      '<|im_start|>user\ngo<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n{"name": "stay", "arguments": {}}\n</tool_call><|im_end|>\n',
    );
  });

  it('is prefix-preserving where the checkpoint template is not; the rollout swaps it in only with tools', () => {
    expect(isPrefixPreserving(QWEN3_TRAINING_TEMPLATE, tok)).toBe(true);
    expect(isPrefixPreserving(OWN, tok)).toBe(false);
    expect(rolloutChatTemplate(tok, { hasTools: true })).toBe(QWEN3_TRAINING_TEMPLATE);
    expect(rolloutChatTemplate(tok, { hasTools: false })).toBe(OWN);
  });
});

describe('tool suffix (grpo-semantics.md §7)', () => {
  const ctx = { tokenizer: tok, template: QWEN3_TRAINING_TEMPLATE, chatTemplateKwargs: { enable_thinking: false } };

  it('Hello World! with enable_thinking=false: the spec ids (the \\n after ! merges into 4894)', () => {
    const messages = [{ role: 'tool' as const, name: 'echo', content: 'Hello World!' }];
    expect(toolSuffixText(ctx, messages)).toBe(
      '\n<|im_start|>user\n<tool_response>\nHello World!\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
    expect(toolSuffixIds(ctx, messages)).toEqual([198, 151644, 872, 198, 151665, 198, 9707, 4337, 4894, 151666, 151645, 198, 151644, 77091, 198, 151667, 271, 151668, 271]);
  });

  it('without the kwarg it ends at assistant\\n; several results share one user turn', () => {
    const plain = { ...ctx, chatTemplateKwargs: null };
    const messages = [
      { role: 'tool' as const, name: 'move', content: 'A' },
      { role: 'tool' as const, name: 'stay', content: 'B' },
    ];
    expect(toolSuffixText(plain, messages)).toBe(
      '\n<|im_start|>user\n<tool_response>\nA\n</tool_response>\n<tool_response>\nB\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('refuses a template that is not prefix-preserving', () => {
    const broken = '{%- for m in messages %}{{ m.role }}{%- endfor %}<|im_end|>{{ messages | length }}';
    expect(() => toolSuffixText({ ...ctx, template: broken }, [{ role: 'tool', name: 'x', content: 'y' }])).toThrow(/not prefix-preserving/);
  });
});
