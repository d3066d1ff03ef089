// Renders a conversation to prompt text with the checkpoint's own Jinja `chat_template`, the way
// transformers' `apply_chat_template(..., tokenize=False)` does: the template sees `messages`, `tools`,
// `add_generation_prompt`, the tokenizer's special tokens, and every `chat_template_kwargs` entry
// (e.g. `enable_thinking`) as a top-level variable.

import { Template } from '@huggingface/jinja';
import { RENDER_BUDGET, RenderBudgetError, withRenderBudget, type RenderBudget } from './render-budget.ts';

/** One tool call of an assistant message, OpenAI/transformers shape. */
export interface ToolCall {
  type: 'function';
  /** `arguments` is normally an object; a string is rendered raw (and fails when executed). */
  function: { name: string; arguments: unknown };
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; reasoning_content?: string; tool_calls?: ToolCall[] }
  /** Non-string content (a list of blocks from a multimodal tool) renders as '' with text models. */
  | { role: 'tool'; name: string; content: string | unknown[] };

export interface RenderOptions {
  /** JSON tool schemas (`{"type":"function","function":{…}}`); null/empty renders no tool block. */
  tools?: readonly unknown[] | null;
  addGenerationPrompt?: boolean;
  /** Extra template variables, e.g. `{ enable_thinking: false }` (TRL's `chat_template_kwargs`). */
  chatTemplateKwargs?: Record<string, unknown> | null;
  /** Special tokens exposed to the template (`eos_token`, `pad_token`, `bos_token`). */
  specialTokens?: Record<string, string | null>;
  /** Limits of the render (default RENDER_BUDGET); a template past one fails naming its file. */
  budget?: RenderBudget;
}

// Parsing a template costs far more than rendering it, and every rollout renders with the same few.
const parsedTemplates = new Map<string, Template>();

function parseTemplate(source: string, label: string): Template {
  let template = parsedTemplates.get(source);
  if (!template) {
    try {
      template = new Template(source);
    } catch (err) {
      throw new Error(`chat template (${label}) does not parse: ${(err as Error).message}`);
    }
    parsedTemplates.set(source, template);
  }
  return template;
}

// Where each template came from (its file), so a template that fails or exceeds its render budget is named.
const templateLabels = new Map<string, string>();

/** Records where `source` was read from (e.g. `models/x/chat_template.jinja`), for error messages. */
export function labelChatTemplate(source: string, label: string): void {
  templateLabels.set(source, label);
}

export function renderChat(template: string, messages: readonly ChatMessage[], opts: RenderOptions = {}): string {
  if (messages.length === 0) throw new Error('renderChat: messages must not be empty');
  const tools = opts.tools && opts.tools.length > 0 ? opts.tools : undefined;
  const context: Record<string, unknown> = {
    ...(opts.specialTokens ?? {}),
    ...(opts.chatTemplateKwargs ?? {}),
    messages,
    add_generation_prompt: opts.addGenerationPrompt ?? false,
  };
  if (tools) context.tools = tools;
  const label = templateLabels.get(template) ?? 'given in code';
  const parsed = parseTemplate(template, label);
  try {
    return withRenderBudget(label, () => parsed.render(context), opts.budget ?? RENDER_BUDGET);
  } catch (err) {
    if (err instanceof RenderBudgetError) throw err;
    throw new Error(`chat template (${label}) failed to render: ${(err as Error).message}`);
  }
}
