// Text ↔ token ids for a Hugging Face `tokenizer.json` + `tokenizer_config.json` pair (specs/qwen3.md §7).
// Added tokens are split out first and each text segment between them is BPE'd whole; no BOS is ever
// added (Qwen3 has none, and chat prompts are rendered to text by the chat template first).

import { Tokenizer } from '@huggingface/tokenizers';

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
  /** `chat_template` from tokenizer_config.json (null when the checkpoint has none). */
  readonly chatTemplate: string | null;
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

export function loadTokenizer(tokenizerJsonText: string, tokenizerConfigText: string): TextTokenizer {
  const tokenizerJson = parseJson(tokenizerJsonText, 'tokenizer.json');
  const config = parseJson(tokenizerConfigText, 'tokenizer_config.json');
  if (typeof tokenizerJson.model !== 'object' || tokenizerJson.model === null) {
    throw new Error('tokenizer.json has no "model" section');
  }
  const tokenizer = new Tokenizer(tokenizerJson, config);

  const eosToken = tokenContent(config.eos_token, 'eos_token');
  if (eosToken === null) throw new Error('tokenizer_config.json has no eos_token');
  const eosTokenId = tokenizer.token_to_id(eosToken);
  if (eosTokenId === undefined) throw new Error(`eos_token '${eosToken}' is not in tokenizer.json`);
  const padToken = tokenContent(config.pad_token, 'pad_token');
  const padTokenId = padToken === null ? null : tokenizer.token_to_id(padToken) ?? null;
  if (padToken !== null && padTokenId === null) throw new Error(`pad_token '${padToken}' is not in tokenizer.json`);
  const chatTemplate = typeof config.chat_template === 'string' ? config.chat_template : null;
  const cleanUpSpaces = config.clean_up_tokenization_spaces === true;
  const size = tokenizer.get_vocab(true).size;

  return {
    encode: (text) => tokenizer.encode(text, { add_special_tokens: false }).ids,
    decode: (ids, opts) =>
      tokenizer.decode([...ids], {
        skip_special_tokens: opts?.skipSpecialTokens ?? false,
        clean_up_tokenization_spaces: cleanUpSpaces,
      }),
    tokenToId: (token) => tokenizer.token_to_id(token),
    idToToken: (id) => tokenizer.id_to_token(id),
    eosTokenId,
    eosToken,
    padTokenId,
    chatTemplate,
    size,
  };
}
