// The chat-template render budget (src/model/render-budget.ts): each limit stops the hostile
// template it is for, naming the template's file; real templates render exactly as before; the
// interpreter is left unmetered outside a budgeted render.
import fs from 'node:fs';
import path from 'node:path';
import { Template } from '@huggingface/jinja';
import { describe, expect, it } from 'vitest';
import { labelChatTemplate, renderChat } from '../../src/model/chat-template.ts';
import { RENDER_BUDGET, withRenderBudget } from '../../src/model/render-budget.ts';

const DEMO_TEMPLATE = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../models/demo/tokenizer_config.json'), 'utf8')).chat_template as string;
const user = [{ role: 'user' as const, content: 'hi' }];

/** Renders `source` labelled as a file, returning the error message. */
function failure(source: string, file = 'hostile/chat_template.jinja'): string {
  labelChatTemplate(source, file);
  try {
    renderChat(source, user);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`rendered: ${source}`);
}

const budgetPrefix = `chat template (hostile/chat_template.jinja) exceeded its render budget (${RENDER_BUDGET.maxSteps} steps / ${RENDER_BUDGET.maxMs / 1000} s): `;

describe('the chat-template render budget', () => {
  it('refuses range() beyond the item limit before building the list (range(3e8) was 2.7 GB)', () => {
    expect(failure('{% for i in range(300000000) %}{% endfor %}')).toBe(`${budgetPrefix}passed the number 300000000 to a call or filter (limit ${RENDER_BUDGET.maxStringChars})`);
    expect(failure('{% for i in range(2000000) %}{% endfor %}')).toBe(`${budgetPrefix}range() of 2000000 items (limit ${RENDER_BUDGET.maxItems})`);
  });

  it('stops nested loops by their step count', () => {
    // 1,000 × 1,000 × 100 iterations is over 10^7 steps: deterministic, so it fails on steps unless the machine is very slow.
    expect(failure('{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(100) %}{% endfor %}{% endfor %}{% endfor %}')).toMatch(
      new RegExp(`^${budgetPrefix.replace(/[()./]/g, '\\$&')}ran (more than ${RENDER_BUDGET.maxSteps} steps|longer than ${RENDER_BUDGET.maxMs / 1000} s)$`),
    );
  });

  it('stops strings that double in a loop at the string limit', () => {
    const grow = "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}";
    expect(failure(grow)).toBe(`${budgetPrefix}made a string of ${2 * RENDER_BUDGET.maxStringChars} characters (limit ${RENDER_BUDGET.maxStringChars})`);
  });

  it('refuses a huge filter width before the filter allocates it', () => {
    expect(failure("{{ 'a\\nb'|indent(500000000) }}")).toBe(`${budgetPrefix}passed the number 500000000 to a call or filter (limit ${RENDER_BUDGET.maxStringChars})`);
  });

  it('bounds the total of what a render outputs, loop bodies included', () => {
    const line = 'x'.repeat(1000);
    expect(failure(`{% for i in range(100000) %}{{ '${line}' }}{% endfor %}`)).toBe(`${budgetPrefix}made more than ${RENDER_BUDGET.maxProducedChars} characters of strings in all`);
  });

  it('names the budget for deep nesting, under a budget with a small depth', () => {
    const nested = `{{ 1${' + 1'.repeat(50)} }}`; // a left-deep tree of 50 additions
    const template = new Template(nested);
    expect(() => withRenderBudget('deep.jinja', () => template.render({}), { ...RENDER_BUDGET, maxDepth: 20 })).toThrow(
      /^chat template \(deep\.jinja\) exceeded its render budget \(.*\): nested more than 20 evaluations deep/,
    );
  });

  it('renders a real template as before, and leaves the interpreter unmetered outside a budget', () => {
    const messages = Array.from({ length: 40 }, (_, i) => ({ role: (i % 2 ? 'assistant' : 'user') as 'user', content: `turn ${i} ` + 'word '.repeat(100) }));
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
    const context = { messages, tools, add_generation_prompt: true, eos_token: '<|im_end|>' };
    expect(renderChat(DEMO_TEMPLATE, messages, { tools, addGenerationPrompt: true, specialTokens: { eos_token: '<|im_end|>' } })).toBe(new Template(DEMO_TEMPLATE).render(context));
    // Outside renderChat the library's own range() and no limits apply (other users of @huggingface/jinja).
    expect(new Template('{{ range(3)|length }}').render({})).toBe('3');
  });

  it('names the template file in ordinary render errors too', () => {
    expect(failure("{{ raise_exception('no tools') }}", 'x/tokenizer_config.json')).toBe('chat template (x/tokenizer_config.json) failed to render: no tools');
  });
});
