// Text ↔ token ids for a Hugging Face `tokenizer.json` + `tokenizer_config.json` pair (specs/qwen3.md §7).
// Added tokens are split out first and each text segment between them is BPE'd whole; no BOS is ever
// added (Qwen3 has none, and chat prompts are rendered to text by the chat template first).

import { Tokenizer } from '@huggingface/tokenizers';
import { labelChatTemplate } from './chat-template.ts';
import { readTextCapped, type CheckpointFiles } from './files.ts';
import { assertSafeTokenizerPatterns } from './tokenizer-patterns.ts';

export interface TextTokenizer {
  /** Ids of `text`, with added/special tokens (`<|im_start|>`, `<tool_call>`, …) recognized. Never adds BOS. */
  encode(text: string): number[];
  /** `skipSpecialTokens` drops only tokens marked `special: true`; `<tool_call>`, `<think>`, … remain. */
  decode(ids: readonly number[], opts?: { skipSpecialTokens?: boolean }): string;
  /** Id of a token string (added tokens included), or undefined. */
  tokenToId(token: string): number | undefined;
  /** Token string of an id, or undefined. */
  idToToken(id: number): string | undefined;
  readonly eosTokenId: number;
  readonly eosToken: string;
  readonly padTokenId: number | null;
  /** The default chat template (null when the checkpoint has none); see chatTemplates for named ones. */
  readonly chatTemplate: string | null;
  /** Every chat template by name ('default', 'tool_use', …), as transformers keeps them. */
  readonly chatTemplates: Readonly<Record<string, string>>;
  /** Number of ids the tokenizer can produce (base vocab + added tokens). */
  readonly size: number;
}

/** tokenizer_config.json writes special tokens either as strings or as `{"content": …}` objects. */
function tokenContent(value: unknown, key: string): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
    return (value as { content: string }).content;
  }
  throw new Error(`tokenizer_config.json: '${key}' must be a string or {"content": string}, got ${JSON.stringify(value)}`);
}

function parseJson(text: string, file: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${file} must hold a JSON object`);
  return value as Record<string, unknown>;
}

/**
 * `chat_template` as tokenizer_config.json (or chat_template.json) writes it: one string, or a list of
 * `{"name", "template"}` (transformers' named templates). Returns templates by name; a lone string is 'default'.
 */
export function namedChatTemplates(value: unknown, file: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value === 'string') return { default: value };
  if (Array.isArray(value)) {
    const out: Record<string, string> = {};
    for (const item of value) {
      const { name, template } = (item ?? {}) as { name?: unknown; template?: unknown };
      if (typeof name !== 'string' || typeof template !== 'string') throw new Error(`${file}: chat_template list entries must be {"name": string, "template": string}, got ${JSON.stringify(item)?.slice(0, 80)}`);
      out[name] = template;
    }
    return out;
  }
  throw new Error(`${file}: chat_template must be a string or a list of {"name", "template"}, got ${typeof value}`);
}

export interface TokenizerSideFiles {
  /** Where the files are (a folder, a repo), to name a template's file when it fails to render. */
  location?: string;
  /** chat_template.jinja (transformers ≥ 4.43 save_pretrained; the only place transformers 5 writes it). */
  chatTemplateJinja?: string | null;
  /** chat_template.json (`{"chat_template": …}`, written by processors). */
  chatTemplateJson?: string | null;
}

/**
 * Where transformers finds the chat templates, highest priority first: chat_template.jinja, then
 * chat_template.json, then tokenizer_config.json's `chat_template`. Named templates of lower files
 * stay unless overridden.
 */
function chatTemplatesOf(config: Record<string, unknown>, side: TokenizerSideFiles): Record<string, string> {
  const where = side.location === undefined ? '' : `${side.location}/`;
  const labelled = (templates: Record<string, string>, file: string): Record<string, string> => {
    for (const [name, source] of Object.entries(templates)) labelChatTemplate(source, name === 'default' ? `${where}${file}` : `${where}${file}, template '${name}'`);
    return templates;
  };
  const templates = labelled(namedChatTemplates(config.chat_template, 'tokenizer_config.json'), 'tokenizer_config.json');
  if (side.chatTemplateJson != null) {
    const json = parseJson(side.chatTemplateJson, 'chat_template.json');
    Object.assign(templates, labelled(namedChatTemplates(json.chat_template, 'chat_template.json'), 'chat_template.json'));
  }
  if (side.chatTemplateJinja != null) templates.default = labelled({ default: side.chatTemplateJinja }, 'chat_template.jinja').default!;
  return templates;
}

export function loadTokenizer(tokenizerJsonText: string, tokenizerConfigText: string, side: TokenizerSideFiles = {}): TextTokenizer {
  const tokenizerJson = parseJson(tokenizerJsonText, 'tokenizer.json');
  const config = parseJson(tokenizerConfigText, 'tokenizer_config.json');
  if (typeof tokenizerJson.model !== 'object' || tokenizerJson.model === null) {
    throw new Error('tokenizer.json has no "model" section');
  }
  assertSafeTokenizerPatterns(tokenizerJson, side.location === undefined ? 'tokenizer.json' : `${side.location}/tokenizer.json`);
  const tokenizer = new Tokenizer(tokenizerJson, config);

  const eosToken = tokenContent(config.eos_token, 'eos_token');
  if (eosToken === null) throw new Error('tokenizer_config.json has no eos_token');
  const eosTokenId = tokenizer.token_to_id(eosToken);
  if (eosTokenId === undefined) throw new Error(`eos_token '${eosToken}' is not in tokenizer.json`);
  const padToken = tokenContent(config.pad_token, 'pad_token');
  const padTokenId = padToken === null ? null : tokenizer.token_to_id(padToken) ?? null;
  if (padToken !== null && padTokenId === null) throw new Error(`pad_token '${padToken}' is not in tokenizer.json`);
  const chatTemplates = chatTemplatesOf(config, side);
  const cleanUpSpaces = config.clean_up_tokenization_spaces === true;
  const size = tokenizer.get_vocab(true).size;

  return {
    encode: (text) => tokenizer.encode(text, { add_special_tokens: false }).ids,
    // The tokenizers library refuses an empty list; an empty completion (a rollout whose env failed at reset) is ''.
    decode: (ids, opts) =>
      ids.length === 0 ? '' : tokenizer.decode([...ids], {
        skip_special_tokens: opts?.skipSpecialTokens ?? false,
        clean_up_tokenization_spaces: cleanUpSpaces,
      }),
    tokenToId: (token) => tokenizer.token_to_id(token),
    idToToken: (id) => tokenizer.id_to_token(id),
    eosTokenId,
    eosToken,
    padTokenId,
    chatTemplate: chatTemplates.default ?? null,
    chatTemplates,
    size,
  };
}

/** The files a tokenizer is made of, besides tokenizer.json and tokenizer_config.json. */
export const CHAT_TEMPLATE_FILES = ['chat_template.jinja', 'chat_template.json'] as const;

/**
 * The tokenizer of a checkpoint (folder, Hub download, picked files, memory), with its chat templates
 * from wherever transformers would find them. Throws naming the missing file.
 */
export async function loadCheckpointTokenizer(
  files: { readText(file: string): Promise<string | null>; size?(file: string): Promise<number | null>; files?: Pick<CheckpointFiles, 'size'> },
  where: string,
): Promise<TextTokenizer> {
  // An opened checkpoint knows its files' sizes through `files`: oversized ones are refused unread.
  const sized = { readText: (f: string) => files.readText(f), size: files.size ?? files.files?.size };
  const [json, config, jinja, templateJson] = await Promise.all(['tokenizer.json', 'tokenizer_config.json', ...CHAT_TEMPLATE_FILES].map((f) => readTextCapped(sized, f, where)));
  const missing = [json === null ? 'tokenizer.json' : null, config === null ? 'tokenizer_config.json' : null].filter(Boolean);
  if (missing.length > 0) throw new Error(`${where}: ${missing.join(' and ')} missing; webgrpo needs the model's own tokenizer and chat template`);
  return loadTokenizer(json!, config!, { chatTemplateJinja: jinja, chatTemplateJson: templateJson, location: where });
}
