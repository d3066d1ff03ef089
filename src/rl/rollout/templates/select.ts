// Which chat template a rollout renders with (grpo-semantics.md §3.2, TRL's GRPOTrainer init): the
// checkpoint's own, unless tools are in play and that template is not prefix-preserving, in which case
// the Qwen3 training variant is swapped in. Without the swap, tool-suffix ids computed from a dummy
// conversation would not line up with the tokens already generated.

import { renderChat, type ChatMessage } from '../../../model/chat-template.ts';
import type { TextTokenizer } from '../../../model/tokenizer.ts';
import { toolCallFormatOf } from '../parse.ts';
import { QWEN3_TRAINING_TEMPLATE } from './qwen3-training.ts';

/** Special-token variables transformers exposes to every chat template. */
export function templateSpecialTokens(tokenizer: TextTokenizer): Record<string, string | null> {
  const pad = tokenizer.padTokenId === null ? null : tokenizer.idToToken(tokenizer.padTokenId) ?? null;
  return { eos_token: tokenizer.eosToken, pad_token: pad, bos_token: null };
}

/** TRL's probe: does [user, assistant(call)] tokenize to a prefix of [user, assistant(call), tool] + gen prompt? */
export function isPrefixPreserving(template: string, tokenizer: TextTokenizer): boolean {
  const call = { type: 'function' as const, function: { name: 'dummy', arguments: {} } };
  const head: ChatMessage[] = [
    { role: 'user', content: 'dummy' },
    { role: 'assistant', content: '', tool_calls: [call] },
  ];
  const withTool: ChatMessage[] = [...head, { role: 'tool', name: 'dummy', content: 'dummy' }];
  const specialTokens = templateSpecialTokens(tokenizer);
  const a = tokenizer.encode(renderChat(template, head, { specialTokens }));
  const b = tokenizer.encode(renderChat(template, withTool, { specialTokens, addGenerationPrompt: true }));
  return a.every((id, i) => b[i] === id);
}

/** Qwen3-style: ChatML with think blocks and JSON tool calls (Qwen3.5's XML calls would be mistaught by our variant). */
function looksLikeQwen3(template: string): boolean {
  return template.includes('<|im_start|>') && template.includes('<tool_call>') && template.includes('<think>') && toolCallFormatOf(template) === 'json';
}

/** transformers' choice among named templates: 'tool_use' when tools are given and it exists, else 'default'. */
export function checkpointChatTemplate(tokenizer: Pick<TextTokenizer, 'chatTemplates'>, opts: { hasTools: boolean }): string {
  const named = tokenizer.chatTemplates;
  const chosen = (opts.hasTools ? named.tool_use : undefined) ?? named.default;
  if (chosen !== undefined) return chosen;
  const names = Object.keys(named);
  if (names.length > 0) throw new Error(`the checkpoint has chat templates named ${names.join(', ')} but none called 'default'`);
  throw new Error('the checkpoint has no chat template (looked in chat_template.jinja, chat_template.json and tokenizer_config.json)');
}

export function rolloutChatTemplate(tokenizer: TextTokenizer, opts: { hasTools: boolean }): string {
  const own = checkpointChatTemplate(tokenizer, opts);
  if (!opts.hasTools || isPrefixPreserving(own, tokenizer)) return own;
  if (looksLikeQwen3(own)) return QWEN3_TRAINING_TEMPLATE;
  throw new Error(
    'the chat template is not prefix-preserving for tool calls and webgrpo has no training variant for it ' +
      '(only Qwen3-style templates with JSON tool calls are supported with tools)',
  );
}
