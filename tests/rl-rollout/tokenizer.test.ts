import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../src/model/tokenizer.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

describe('Qwen3 tokenizer', () => {
  const tok = qwen3Tokenizer();

  it('encodes the reference ids of specs/qwen3.md §7', () => {
    expect(tok.encode('\n')).toEqual([198]);
    expect(tok.encode('\n\n')).toEqual([271]);
    expect(tok.encode('user')).toEqual([872]);
    expect(tok.encode('assistant')).toEqual([77091]);
    expect(tok.encode('system')).toEqual([8948]);
    expect(tok.encode('<|im_start|>assistant\n')).toEqual([151644, 77091, 198]);
    expect(tok.encode('<think>\n\n</think>\n\n')).toEqual([151667, 271, 151668, 271]);
  });

  it('splits added tokens out and BPEs the text between them whole (tool call example, §3.3)', () => {
    const text = '<tool_call>\n{"name": "echo", "arguments": {"message": "Hello World!"}}\n</tool_call><|im_end|>';
    expect(tok.encode(text)).toEqual([
      151657, 198, 4913, 606, 788, 330, 3047, 497, 330, 16370, 788, 5212, 1994, 788, 330, 9707, 4337, 8958, 11248, 151658, 151645,
    ]);
  });

  it('never adds BOS', () => {
    expect(tok.encode('hi')[0]).not.toBe(151643);
    expect(tok.encode('')).toEqual([]);
  });

  it('knows eos, pad and the chat template', () => {
    expect(tok.eosTokenId).toBe(151645);
    expect(tok.eosToken).toBe('<|im_end|>');
    expect(tok.padTokenId).toBe(151643);
    expect(tok.chatTemplate).toContain('<|im_start|>');
    expect(tok.tokenToId('<tool_call>')).toBe(151657);
    expect(tok.idToToken(151668)).toBe('</think>');
    expect(tok.size).toBe(151669);
  });

  it('decode with skipSpecialTokens drops only special tokens', () => {
    const ids = [151644, 77091, 198, 151667, 271, 151668, 271, 151657, 151658, 151645];
    expect(tok.decode(ids)).toBe('<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call></tool_call><|im_end|>');
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('assistant\n<think>\n\n</think>\n\n<tool_call></tool_call>');
  });

  it('round-trips non-ASCII text', () => {
    const text = 'héllo ✓ 10×5 – →';
    expect(tok.decode(tok.encode(text))).toBe(text);
  });
});

describe('loadTokenizer input errors', () => {
  it('names the broken file', () => {
    expect(() => loadTokenizer('{', '{}')).toThrow(/tokenizer\.json is not valid JSON/);
    expect(() => loadTokenizer('{"model": {}}', '[1]')).toThrow(/tokenizer_config\.json must hold a JSON object/);
    expect(() => loadTokenizer('{}', '{}')).toThrow(/no "model" section/);
  });
});
