// Qwen3 chat rendering against transformers' own output (tests/fixtures/transformers-qwen3-chat: text and
// ids from apply_chat_template of transformers 5.12.1 with the real Qwen3 tokenizer; make.py shows how).
// Tool blocks are `tojson` of nested, non-ASCII schemas; tool-call arguments are dicts; several tool
// results share a user turn; reasoning content; special-token text typed inside a message. Both the
// checkpoint's template and our prefix-preserving training template, rendered by @huggingface/jinja and
// encoded by our tokenizer, must give transformers' exact text and ids.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderChat, type ChatMessage } from '../../src/model/chat-template.ts';
import { QWEN3_TRAINING_TEMPLATE } from '../../src/rl/rollout/templates/qwen3-training.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

interface Case {
  name: string;
  template: 'checkpoint' | 'training';
  messages: ChatMessage[];
  tools: Record<string, unknown>[] | null;
  add_generation_prompt: boolean;
  chat_template_kwargs: Record<string, unknown>;
  text: string;
  ids: number[];
}
const fixture = JSON.parse(readFileSync(new URL('../fixtures/transformers-qwen3-chat/chat.json', import.meta.url), 'utf8')) as { writer: { transformers: string }; cases: Case[] };
const tok = qwen3Tokenizer();

describe(`Qwen3 chat rendering equals transformers ${fixture.writer.transformers}`, () => {
  it('has every case for both templates', () => {
    expect(fixture.cases).toHaveLength(12);
    expect(new Set(fixture.cases.map((c) => c.template))).toEqual(new Set(['checkpoint', 'training']));
  });

  it.each(fixture.cases.map((c) => [`${c.template}: ${c.name}`, c] as const))('%s', (_, c) => {
    const template = c.template === 'checkpoint' ? tok.chatTemplate! : QWEN3_TRAINING_TEMPLATE;
    const text = renderChat(template, c.messages, { tools: c.tools, addGenerationPrompt: c.add_generation_prompt, chatTemplateKwargs: c.chat_template_kwargs });
    expect(text).toBe(c.text);
    expect(tok.encode(text)).toEqual(c.ids);
  });
});
