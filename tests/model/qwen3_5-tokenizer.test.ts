// A Qwen3.5 folder's own tokenizer files against transformers (tests/fixtures/qwen3_5-tokenizer, make.py):
// transformers' Qwen3_5Tokenizer pipeline (NFC, the split regex with \p{M} in the letter class, byte-level
// BPE), Qwen3.5's 33 added tokens at 248044..248076, and the Qwen3.5 checkpoints' chat templates (the
// 0.8B/2B "nothink" one as chat_template.jinja, the 4B+ "think" one beside it). BPE ranks are a prefix of
// Qwen3's, since the real 248k-token vocab is not reachable offline (docs/qwen3_5.md §5).
// Loaded the way the CLI and the app load any checkpoint (loadCheckpointTokenizer over its files), then
// encoded, decoded and rendered with @huggingface/tokenizers and @huggingface/jinja: exact ids and text.

import { Tokenizer } from '@huggingface/tokenizers';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { renderChat, type ChatMessage } from '../../src/model/chat-template.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { loadCheckpointTokenizer, type TextTokenizer } from '../../src/model/tokenizer.ts';
import { isPrefixPreserving, rolloutChatTemplate, templateSpecialTokens } from '../../src/rl/rollout/templates/select.ts';

const dir = fileURLToPath(new URL('../fixtures/qwen3_5-tokenizer/', import.meta.url));

interface Chat {
  name: string;
  template: 'nothink' | 'think';
  chat_template_kwargs: Record<string, unknown>;
  messages: ChatMessage[];
  tools: Record<string, unknown>[] | null;
  add_generation_prompt: boolean;
  text: string;
  ids: number[];
}
const fixture = JSON.parse(readFileSync(`${dir}expected.json`, 'utf8')) as {
  writer: { transformers: string; trl: string };
  texts: { text: string; ids: number[]; decoded: string; pieces: string[] }[];
  chats: Chat[];
};
const thinkTemplate = readFileSync(`${dir}qwen3_5_think.jinja`, 'utf8');
const tokenizerJson = JSON.parse(readFileSync(`${dir}tokenizer.json`, 'utf8'));
const tokenizerConfig = JSON.parse(readFileSync(`${dir}tokenizer_config.json`, 'utf8'));

/** The library's own normalizer + pre-tokenizer for a tokenizer.json (what loadTokenizer builds on). */
function pipeline(json: Record<string, unknown>): Tokenizer {
  return new Tokenizer(json, tokenizerConfig);
}
function preTokenize(tokenizer: Tokenizer, text: string): string[] {
  const normalized = tokenizer.normalizer ? tokenizer.normalizer.normalize(text) : text;
  return tokenizer.pre_tokenizer!.pre_tokenize(normalized);
}

let tok: TextTokenizer;
beforeAll(async () => {
  tok = await loadCheckpointTokenizer(nodeFolderFiles(dir), dir);
});

describe(`Qwen3.5 tokenizer files equal transformers ${fixture.writer.transformers}`, () => {
  it("reads the folder's own specials, eos and chat template", () => {
    expect(tok.eosToken).toBe('<|im_end|>');
    expect(tok.eosTokenId).toBe(248046);
    expect(tok.padTokenId).toBe(248044);
    expect(['<|vision_start|>', '<|image_pad|>', '<tool_call>', '<think>', '<|audio_pad|>'].map((t) => tok.tokenToId(t))).toEqual([248053, 248056, 248058, 248068, 248076]);
    expect(tok.chatTemplate).toBe(readFileSync(`${dir}chat_template.jinja`, 'utf8'));
  });

  it.each(fixture.texts.map((t) => [JSON.stringify(t.text).slice(0, 50), t] as const))('encode/decode %s', (_, t) => {
    expect(tok.encode(t.text)).toEqual(t.ids);
    expect(tok.decode(t.ids)).toBe(t.decoded);
  });

  // The pre-tokenizer pieces are where NFC and \p{M} act; ids alone hide the split, since Qwen3's merges
  // (the BPE ranks here) never join a letter to a following mark.
  it.each(fixture.texts.map((t) => [JSON.stringify(t.text).slice(0, 50), t] as const))('pre-tokenizer pieces %s', (_, t) => {
    expect(preTokenize(pipeline(tokenizerJson), t.text)).toEqual(t.pieces);
  });

  it('the strings tell the Qwen3.5 pipeline from Qwen3-style ones: without NFC, or without \\p{M} in the letter class', () => {
    const [split, byteLevel] = tokenizerJson.pre_tokenizer.pretokenizers;
    const variants = {
      'no NFC': { ...tokenizerJson, normalizer: null },
      "Qwen3's split": { ...tokenizerJson, pre_tokenizer: { ...tokenizerJson.pre_tokenizer, pretokenizers: [{ ...split, pattern: { Regex: split.pattern.Regex.replaceAll('\\p{M}', '') } }, byteLevel] } },
    };
    for (const [name, variant] of Object.entries(variants)) {
      const other = pipeline(variant);
      expect(fixture.texts.filter((t) => JSON.stringify(preTokenize(other, t.text)) !== JSON.stringify(t.pieces)).length, name).toBeGreaterThan(0);
    }
  });
});

describe(`Qwen3.5 chat templates render as transformers ${fixture.writer.transformers} renders them`, () => {
  it('has both templates with enable_thinking unset, true and false', () => {
    expect(fixture.chats).toHaveLength(36);
  });

  it.each(fixture.chats.map((c) => [`${c.template} ${JSON.stringify(c.chat_template_kwargs)}: ${c.name}`, c] as const))('%s', (_, c) => {
    const template = c.template === 'think' ? thinkTemplate : tok.chatTemplate!;
    const text = renderChat(template, c.messages, {
      tools: c.tools,
      addGenerationPrompt: c.add_generation_prompt,
      chatTemplateKwargs: c.chat_template_kwargs,
      specialTokens: templateSpecialTokens(tok),
    });
    expect(text).toBe(c.text);
    expect(tok.encode(text)).toEqual(c.ids);
  });

  it("is prefix-preserving for tool calls (as TRL finds), so rollouts keep the checkpoint's own template", () => {
    expect(isPrefixPreserving(tok.chatTemplate!, tok)).toBe(true);
    expect(isPrefixPreserving(thinkTemplate, tok)).toBe(true);
    expect(rolloutChatTemplate(tok, { hasTools: true })).toBe(tok.chatTemplate);
  });

  it("one that is not (Qwen3's loop.last rule) is refused, not swapped for the Qwen3 variant's JSON calls", () => {
    const variant = tok.chatTemplate!.replace('{%- if loop.index0 > ns.last_query_index %}', '{%- if loop.index0 > ns.last_query_index and loop.last %}');
    expect(variant).not.toBe(tok.chatTemplate);
    const other: TextTokenizer = { ...tok, chatTemplate: variant, chatTemplates: { default: variant } };
    expect(isPrefixPreserving(variant, other)).toBe(false);
    expect(() => rolloutChatTemplate(other, { hasTools: true })).toThrow(/JSON tool calls/);
  });
});
