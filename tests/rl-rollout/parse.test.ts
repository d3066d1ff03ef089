import { describe, expect, it } from 'vitest';
import { parseAssistantText, parseResponse } from '../../src/rl/rollout/parse.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

const EOS = '<|im_end|>';

describe('parseResponse (grpo-semantics.md §5)', () => {
  const tok = qwen3Tokenizer();
  const parse = (text: string) => parseResponse(tok, tok.encode(text));

  it('content plus two calls', () => {
    const text =
      'Sure.\n<tool_call>\n{"name": "echo", "arguments": {"message": "a"}}\n</tool_call>\n<tool_call>\n{"name": "stay", "arguments": {}}\n</tool_call><|im_end|>';
    expect(parse(text)).toEqual({
      role: 'assistant',
      content: 'Sure.',
      tool_calls: [
        { type: 'function', function: { name: 'echo', arguments: { message: 'a' } } },
        { type: 'function', function: { name: 'stay', arguments: {} } },
      ],
    });
  });

  it('a call without content', () => {
    const text = '<tool_call>\n{"name": "echo", "arguments": {"message": "Hello World!"}}\n</tool_call><|im_end|>';
    expect(parse(text)).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ type: 'function', function: { name: 'echo', arguments: { message: 'Hello World!' } } }],
    });
  });

  it('plain text: content without the eos', () => {
    expect(parse('Just text.<|im_end|>')).toEqual({ role: 'assistant', content: 'Just text.' });
  });

  it('missing arguments become {}; string arguments are kept', () => {
    expect(parse('<tool_call>\n{"name": "stay"}\n</tool_call><|im_end|>').tool_calls).toEqual([
      { type: 'function', function: { name: 'stay', arguments: {} } },
    ]);
    expect(parse('<tool_call>\n{"name": "stay", "arguments": null}\n</tool_call>').tool_calls![0].function.arguments).toEqual({});
    expect(parse('<tool_call>\n{"name": "move", "arguments": "{\\"direction\\": \\"left\\"}"}\n</tool_call>').tool_calls![0].function.arguments).toBe(
      '{"direction": "left"}',
    );
  });

  it('a complete block without <|im_end|> still counts (truncated after the call)', () => {
    const msg = parse('<tool_call>\n{"name": "stay", "arguments": {}}\n</tool_call>');
    expect(msg.tool_calls).toHaveLength(1);
  });

  it('text after </tool_call> lands in content', () => {
    const msg = parse('<tool_call>\n{"name": "stay", "arguments": {}}\n</tool_call>\nDone.<|im_end|>');
    expect(msg.content).toBe('Done.');
    expect(msg.tool_calls).toHaveLength(1);
  });

  it('falls back to plain text for bad JSON, a missing name, or a block cut inside', () => {
    for (const body of ['{a: 3}', '{"arguments": {}}', '{"name": 3}', '[1, 2]']) {
      const text = `<tool_call>\n${body}\n</tool_call><|im_end|>`;
      expect(parse(text)).toEqual({ role: 'assistant', content: `<tool_call>\n${body}\n</tool_call>` });
    }
    expect(parse('ok <tool_call>\n{"name": "echo", "argu')).toEqual({ role: 'assistant', content: 'ok <tool_call>\n{"name": "echo", "argu' });
    // A later bad block spoils the whole turn: no half-parsed calls.
    const mixed = '<tool_call>\n{"name": "stay"}\n</tool_call>\n<tool_call>\n{bad}\n</tool_call><|im_end|>';
    expect(parse(mixed).tool_calls).toBeUndefined();
  });

  it('a wrong tag is plain text', () => {
    expect(parse('<toolcall>{"name": "stay"}</toolcall><|im_end|>')).toEqual({ role: 'assistant', content: '<toolcall>{"name": "stay"}</toolcall>' });
  });

  it('a leading think block becomes reasoning_content', () => {
    expect(parseAssistantText('<think>\nplan\n</think>\n\nHi<|im_end|>', EOS)).toEqual({
      role: 'assistant',
      content: 'Hi',
      reasoning_content: 'plan',
    });
  });
});
