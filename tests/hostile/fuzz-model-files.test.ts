// Property-based fuzzing (fast-check) of the model files a user brings: chat templates and
// tokenizer.json regexes, built from the pieces that hung or blew up the CLI (issue 34) — nested
// range() loops, huge ranges and widths, doubling strings, replace growth, raised errors — composed at
// random. Properties: a template render ends, with a string within the budget's string limit or an
// Error naming the template's file; a tokenizer either is refused naming tokenizer.json or encodes
// adversarial text (a hang is this test's timeout). Seeded, so a failure replays and shrinks.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { labelChatTemplate, renderChat } from '../../src/model/chat-template.ts';
import { RENDER_BUDGET, type RenderBudget } from '../../src/model/render-budget.ts';
import { starHeight } from '../../src/model/tokenizer-patterns.ts';
import { loadTokenizer } from '../../src/model/tokenizer.ts';

const SEED = 20261207;
const DEMO = path.resolve(import.meta.dirname, '../../models/demo');

// A small budget keeps each hostile render short; the limits are the same code as the default's.
const BUDGET: RenderBudget = { ...RENDER_BUDGET, maxSteps: 200_000, maxMs: 2_000, maxStringChars: 100_000, maxItems: 10_000, maxProducedChars: 1_000_000 };
const LABEL = 'fuzz/chat_template.jinja';

const size = fc.constantFrom(0, 3, 100, 5_000, 20_000, 300_000_000, 1e9);
const leaf = fc.oneof(
  fc.constant('{{ ns.s }}'),
  fc.constant('{% set ns.s = ns.s + ns.s %}'),
  fc.constant("{% set ns.s = ns.s.replace('x', 'xxxxxxxx') %}"),
  size.map((n) => `{{ 'a\\nb'|indent(${n}) }}`),
  size.map((n) => `{{ messages|tojson(indent=${n}) }}`),
  size.map((n) => `{{ range(${n})|length }}`),
  fc.constant("{{ raise_exception('boom') }}"),
  fc.constant('{{ nothing.at.all() }}'),
  fc.constant("{% macro m(n) %}{{ n ~ ns.s }}{% endmacro %}{{ m(1) }}"),
  fc.string({ maxLength: 20 }),
);
const body: fc.Arbitrary<string> = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('loop'), tie('seq')),
  loop: fc.tuple(size, tie('node')).map(([n, inner]) => `{% for i in range(${n}) %}${inner}{% endfor %}`),
  seq: fc.array(tie('node'), { minLength: 2, maxLength: 3 }).map((parts) => parts.join('')),
})).node as fc.Arbitrary<string>;

describe('fuzzing chat templates', () => {
  it('every render ends within the budget: a bounded string, or an error naming the template', () => {
    fc.assert(
      fc.property(body, (inner) => {
        const template = `{% set ns = namespace(s='x') %}${inner}`;
        labelChatTemplate(template, LABEL);
        try {
          const out = renderChat(template, [{ role: 'user', content: 'hi' }], { budget: BUDGET });
          expect(out.length).toBeLessThanOrEqual(BUDGET.maxStringChars);
        } catch (err) {
          expect(err).toBeInstanceOf(Error);
          expect((err as Error).message).toMatch(/^chat template \(fuzz\/chat_template\.jinja\) (exceeded its render budget|failed to render|does not parse)/);
        }
      }),
      { seed: SEED, numRuns: 150 },
    );
  }, 600_000);
});

const tokenizerJson = fs.readFileSync(path.join(DEMO, 'tokenizer.json'), 'utf8');
const tokenizerConfig = fs.readFileSync(path.join(DEMO, 'tokenizer_config.json'), 'utf8');

const atom = fc.constantFrom('a', 'x', '\\s', '\\S', '.', '[ab ]', '\\p{L}', ' ');
const quantifier = fc.constantFrom('', '', '*', '+', '?', '{2}', '{1,3}', '*?');
/** Patterns of up to three nested levels; at most a few quantifiers in sequence, so star height 1 stays polynomial and small. */
const pattern: fc.Arbitrary<string> = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.tuple(atom, quantifier).map(([a, q]) => a + q), tie('group'), tie('alt')),
  group: fc.tuple(fc.array(tie('node'), { minLength: 1, maxLength: 3 }), quantifier, fc.constantFrom('(', '(?:')).map(([parts, q, open]) => `${open}${parts.join('')})${q}`),
  alt: fc.array(tie('node'), { minLength: 2, maxLength: 3 }).map((parts) => parts.join('|')),
})).node as fc.Arbitrary<string>;
const text = fc.tuple(fc.constantFrom('a', 'x', ' ', 'b', '\t'), fc.integer({ min: 1, max: 18 }), fc.constantFrom('!', '', '\n')).map(([c, n, tail]) => c.repeat(n) + tail);

describe('fuzzing tokenizer.json patterns', () => {
  it('a Split pattern is refused naming tokenizer.json when it can backtrack exponentially, and encodes otherwise', () => {
    fc.assert(
      fc.property(pattern, fc.array(text, { minLength: 1, maxLength: 4 }), (regex, inputs) => {
        const json = JSON.parse(tokenizerJson);
        json.pre_tokenizer.pretokenizers[0].pattern.Regex = regex;
        let tokenizer;
        try {
          tokenizer = loadTokenizer(JSON.stringify(json), tokenizerConfig, { location: 'fuzz' });
        } catch (err) {
          expect(err).toBeInstanceOf(Error);
          // Refused by the check, or a pattern JavaScript's RegExp does not accept.
          if (starHeight(regex) > 1) expect((err as Error).message).toContain(`fuzz/tokenizer.json: pre_tokenizer.pretokenizers[0].pattern.Regex ${JSON.stringify(regex)}`);
          return;
        }
        expect(starHeight(regex)).toBeLessThanOrEqual(1);
        for (const input of inputs) tokenizer.encode(input);
      }),
      { seed: SEED, numRuns: 300 },
    );
  }, 600_000);
});
