// One generated assistant turn in the Qwen3.5 (Qwen3-Coder, Nemotron 3) tool-call format → a message, as
// TRL's parse_response reads it with its qwen3_5 response template:
//   [reasoning </think>] content <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>
// A VALUE is JSON when it parses as JSON, else the raw text. Content and reasoning are trimmed. Unlike TRL,
// a broken call (cut before </tool_call>, no <function=…>, stray text inside) never half-parses: the turn
// gets null and falls back to plain text, so the model is not rewarded for a malformed call.

import type { ChatMessage, ToolCall } from '../../model/chat-template.ts';

type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';

/** Does the prompt's generation prefix (text after its last `<|im_start|>`) leave a think block open? */
export function opensThinking(promptTail: string): boolean {
  const open = promptTail.lastIndexOf(THINK_OPEN);
  return open >= 0 && !promptTail.includes(THINK_CLOSE, open);
}

/** Parses one turn; `inThinking`: the prompt ended inside `<think>` (Qwen3.5 with thinking on). */
export function parseXmlTurn(text: string, eosToken: string, inThinking: boolean): AssistantMessage | null {
  let rest = text.trimEnd();
  if (rest.endsWith(eosToken)) rest = rest.slice(0, -eosToken.length);
  let reasoning = '';
  if (inThinking) {
    const end = rest.indexOf(THINK_CLOSE);
    if (end < 0) return withReasoning({ role: 'assistant', content: '' }, rest); // cut while thinking
    reasoning = rest.slice(0, end);
    rest = rest.slice(end + THINK_CLOSE.length);
  } else if (rest.trimStart().startsWith(THINK_OPEN) && rest.includes(THINK_CLOSE)) {
    const start = rest.indexOf(THINK_OPEN) + THINK_OPEN.length;
    const end = rest.indexOf(THINK_CLOSE, start);
    reasoning = rest.slice(start, end);
    rest = rest.slice(end + THINK_CLOSE.length);
  }

  const calls: ToolCall[] = [];
  const contentParts: string[] = [];
  let cursor = 0;
  for (;;) {
    const open = rest.indexOf(OPEN, cursor);
    contentParts.push(rest.slice(cursor, open < 0 ? rest.length : open).trim());
    if (open < 0) break;
    const close = rest.indexOf(CLOSE, open + OPEN.length);
    if (close < 0) return null;
    const call = parseFunction(rest.slice(open + OPEN.length, close));
    if (call === null) return null;
    calls.push(call);
    cursor = close + CLOSE.length;
  }
  const message: AssistantMessage = { role: 'assistant', content: contentParts.filter(Boolean).join('\n') };
  if (calls.length > 0) message.tool_calls = calls;
  return withReasoning(message, reasoning);
}

function withReasoning(message: AssistantMessage, reasoning: string): AssistantMessage {
  const trimmed = reasoning.trim();
  if (trimmed) message.reasoning_content = trimmed;
  return message;
}

const FUNCTION = /^<function=([^\n>]+)>([\s\S]*)<\/function>$/;
const PARAMETER = /<parameter=([^>\n]+)>([\s\S]*?)<\/parameter>/g;

/** `<function=NAME>` + parameters + `</function>`, nothing else but whitespace; null when it is not that. */
function parseFunction(body: string): ToolCall | null {
  const match = FUNCTION.exec(body.trim());
  if (match === null) return null;
  const [, name, params] = match;
  const args: Record<string, unknown> = {};
  let end = 0;
  for (const param of params.matchAll(PARAMETER)) {
    if (params.slice(end, param.index).trim() !== '') return null;
    args[param[1]] = parameterValue(param[2].trim());
    end = param.index + param[0].length;
  }
  if (params.slice(end).trim() !== '') return null;
  return { type: 'function', function: { name, arguments: args } };
}

/** TRL's `json` value parser with allow_non_json: the JSON value when the text is one, else the text. */
function parameterValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
