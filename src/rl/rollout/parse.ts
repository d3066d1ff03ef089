// One generated assistant turn → a message with tool calls (grpo-semantics.md §5: TRL's `parse_response`
// with the response template of the model's chat template: Qwen3's JSON calls here, Qwen3.5's XML calls in
// parse-xml.ts). Malformed calls never half-parse: the whole turn falls back to plain text with no calls,
// so the model is not rewarded for broken JSON.

import type { ChatMessage, ToolCall } from '../../model/chat-template.ts';
import type { TextTokenizer } from '../../model/tokenizer.ts';
import { opensThinking, parseXmlTurn } from './parse-xml.ts';

export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

/** How a chat template writes tool calls: Qwen3's `<tool_call>{json}</tool_call>` or Qwen3.5's `<function=…>` XML. */
export type ToolCallFormat = 'json' | 'xml';

/** The format the template teaches the model (its tool block shows the calling convention). */
export function toolCallFormatOf(template: string): ToolCallFormat {
  return template.includes('<function=') && template.includes('<parameter=') ? 'xml' : 'json';
}

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';

/** Parses the decoded text of one turn; null when a tool-call block is malformed. */
export function parseAssistantText(text: string, eosToken: string): AssistantMessage | null {
  let rest = text;
  let reasoning: string | null = null;
  // A turn may open with its own think block (the prompt normally closes it already).
  if (rest.startsWith('<think>') && rest.includes('</think>')) {
    const end = rest.indexOf('</think>');
    reasoning = rest.slice('<think>'.length, end).replace(/^\n+|\n+$/g, '');
    rest = rest.slice(end + '</think>'.length).replace(/^\s+/, '');
  }
  if (rest.endsWith(eosToken)) rest = rest.slice(0, -eosToken.length);

  const calls: ToolCall[] = [];
  const contentParts: string[] = [];
  let cursor = 0;
  for (;;) {
    const open = rest.indexOf(OPEN, cursor);
    if (open < 0) {
      contentParts.push(rest.slice(cursor));
      break;
    }
    let before = rest.slice(cursor, open);
    // The template writes "\n" between content and the first call; it is not part of the content.
    if (calls.length === 0 && before.endsWith('\n')) before = before.slice(0, -1);
    contentParts.push(before);
    const close = rest.indexOf(CLOSE, open + OPEN.length);
    if (close < 0) return null; // cut inside the call
    const call = parseCallBody(rest.slice(open + OPEN.length, close));
    if (call === null) return null;
    calls.push(call);
    cursor = close + CLOSE.length;
    while (cursor < rest.length && /\s/.test(rest[cursor])) cursor++;
  }
  const message: AssistantMessage = { role: 'assistant', content: contentParts.join('') };
  if (reasoning) message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

function parseCallBody(body: string): ToolCall | null {
  let json: unknown;
  try {
    json = JSON.parse(body.trim());
  } catch {
    return null;
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return null;
  const { name, arguments: args } = json as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string') return null;
  return { type: 'function', function: { name, arguments: args === undefined || args === null ? {} : args } };
}

export interface ParseOptions {
  format?: ToolCallFormat;
  /**
   * The ids the turn was generated after (TRL's `prefix`); their generation prompt says whether the turn
   * starts inside `<think>`. Read for the XML format only.
   */
  prefix?: readonly number[];
}

// The generation prompt is a handful of tokens after the prompt's last `<|im_start|>`.
const PREFIX_TAIL_TOKENS = 16;

/** TRL's `parse_response`: the parsed turn, or `decode(ids, skip_special_tokens)` with no calls. */
export function parseResponse(tokenizer: TextTokenizer, ids: readonly number[], opts: ParseOptions = {}): AssistantMessage {
  const text = tokenizer.decode(ids);
  let parsed: AssistantMessage | null;
  if (opts.format === 'xml') {
    const tail = opts.prefix ? tokenizer.decode(opts.prefix.slice(-PREFIX_TAIL_TOKENS)) : '';
    const header = tail.lastIndexOf('<|im_start|>');
    parsed = parseXmlTurn(text, tokenizer.eosToken, opensThinking(header < 0 ? tail : tail.slice(header)));
  } else {
    parsed = parseAssistantText(text, tokenizer.eosToken);
  }
  return parsed ?? { role: 'assistant', content: tokenizer.decode(ids, { skipSpecialTokens: true }) };
}
