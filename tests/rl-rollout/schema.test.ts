import { describe, expect, it } from 'vitest';
import { renderChat } from '../../src/model/chat-template.ts';
import { CATCH_ROWS, MOVE_TOOL, STAY_TOOL } from '../../src/rl/tasks/envs/catch.ts';
import { pyJsonDumps, toolSchema, typeSchema, type ToolDeclaration } from '../../src/rl/rollout/schema.ts';

/** TRL's echo tool (examples/echo.mjs's JSDoc; echo.py's docstring) as a declaration. */
const ECHO_TOOL: ToolDeclaration = {
  name: 'echo',
  description: 'Echo the message back from the environment.',
  parameters: [{ name: 'message', type: 'string', description: 'The message to echo' }],
  returns: { type: 'string', description: 'The echoed message.' },
};

/** TRL's wordle tool (examples/wordle.mjs's JSDoc; wordle.py's docstring) as a declaration. */
const GUESS_TOOL: ToolDeclaration = {
  name: 'guess',
  description: 'Make a guess in the Wordle environment.',
  parameters: [{ name: 'guess', type: 'string', description: "The guessed word, formatted as '[abcde]'" }],
  returns: { type: 'string', description: 'The feedback message from the environment.' },
};

// grpo-semantics.md §2: the four example tools exactly as transformers renders them.
const EXPECTED = {
  echo: '{"type": "function", "function": {"name": "echo", "description": "Echo the message back from the environment.", "parameters": {"type": "object", "properties": {"message": {"type": "string", "description": "The message to echo"}}, "required": ["message"]}, "return": {"type": "string", "description": "The echoed message."}}}',
  move: '{"type": "function", "function": {"name": "move", "description": "Move the paddle left or right.", "parameters": {"type": "object", "properties": {"direction": {"type": "string", "description": "Direction to move, either \\"left\\" or \\"right\\"."}}, "required": ["direction"]}, "return": {"type": "string", "description": "The observation after moving."}}}',
  stay: '{"type": "function", "function": {"name": "stay", "description": "Do nothing and let the ball fall one step.", "parameters": {"type": "object", "properties": {}}, "return": {"type": "string", "description": "The observation after staying."}}}',
  guess: '{"type": "function", "function": {"name": "guess", "description": "Make a guess in the Wordle environment.", "parameters": {"type": "object", "properties": {"guess": {"type": "string", "description": "The guessed word, formatted as \'[abcde]\'"}}, "required": ["guess"]}, "return": {"type": "string", "description": "The feedback message from the environment."}}}',
};

describe('tool schemas (get_json_schema + tojson)', () => {
  const decls = { echo: ECHO_TOOL, move: MOVE_TOOL, stay: STAY_TOOL, guess: GUESS_TOOL };
  for (const [name, decl] of Object.entries(decls)) {
    it(`${name}: pyJsonDumps is byte-exact`, () => {
      expect(pyJsonDumps(toolSchema(decl))).toBe(EXPECTED[name as keyof typeof EXPECTED]);
    });
    it(`${name}: the template's tojson renders the same bytes`, () => {
      const text = renderChat('{{ tools[0] | tojson }}', [{ role: 'user', content: 'x' }], { tools: [toolSchema(decl)] });
      expect(text).toBe(EXPECTED[name as keyof typeof EXPECTED]);
    });
  }

  it('omits required when every parameter has a default, and return when unannotated', () => {
    const schema = toolSchema({
      name: 'look',
      description: '  Look around.  ',
      parameters: [{ name: 'radius', type: 'integer', description: 'How far\n   to look', optional: true }],
    });
    expect(pyJsonDumps(schema)).toBe(
      '{"type": "function", "function": {"name": "look", "description": "Look around.", "parameters": {"type": "object", "properties": {"radius": {"type": "integer", "description": "How far to look"}}}}}',
    );
  });

  it('turns a trailing (choices: [...]) into enum before the description', () => {
    const schema = toolSchema({
      name: 'drink',
      description: 'Drink a beverage.',
      parameters: [{ name: 'beverage', type: 'string', description: 'The beverage to drink (choices: ["tea", " coffee"])' }],
    });
    expect(pyJsonDumps(schema.function.parameters)).toBe(
      '{"type": "object", "properties": {"beverage": {"type": "string", "enum": ["tea", "coffee"], "description": "The beverage to drink"}}, "required": ["beverage"]}',
    );
  });

  it('maps Python type hints as _parse_type_hint does', () => {
    expect(typeSchema('number')).toEqual({ type: 'number' });
    expect(typeSchema('any')).toEqual({});
    expect(typeSchema({ array: 'string' })).toEqual({ type: 'array', items: { type: 'string' } });
    expect(typeSchema({ array: null })).toEqual({ type: 'array' });
    expect(typeSchema({ tuple: ['integer', 'string'] })).toEqual({ type: 'array', prefixItems: [{ type: 'integer' }, { type: 'string' }] });
    expect(typeSchema({ dict: 'integer' })).toEqual({ type: 'object', additionalProperties: { type: 'integer' } });
    expect(typeSchema({ union: ['string', 'null'] })).toEqual({ type: 'string', nullable: true });
    expect(pyJsonDumps(typeSchema({ union: ['string', 'integer'] }))).toBe('{"type": ["integer", "string"]}');
    // transformers keeps only the type names when every member has one (list[int] | str loses `items`)…
    expect(typeSchema({ union: [{ array: 'integer' }, 'string'] })).toEqual({ type: ['array', 'string'] });
    // …and needs anyOf when one has none.
    expect(typeSchema({ union: ['any', 'string'] })).toEqual({ anyOf: [{}, { type: 'string' }] });
    expect(pyJsonDumps(typeSchema({ literal: ['a', 'b'] }))).toBe('{"type": "string", "enum": ["a", "b"]}');
    expect(typeSchema({ literal: [1, 'x'] })).toEqual({ type: ['integer', 'string'], enum: [1, 'x'] });
  });

  it('rejects declarations get_json_schema would reject', () => {
    expect(() => toolSchema({ name: 'f', description: '', parameters: [] })).toThrow(/no description/);
    expect(() => toolSchema({ name: 'f', description: 'd', parameters: [{ name: 'x', type: 'string', description: ' ' }] })).toThrow(
      /no description for the argument 'x'/,
    );
    expect(() => toolSchema({ name: '_f', description: 'd', parameters: [] })).toThrow(/private/);
    expect(() => typeSchema({ tuple: ['string'] })).toThrow(/single element/);
  });

  it("serializes like json.dumps(ensure_ascii=False)", () => {
    expect(pyJsonDumps({ a: 'héllo ✓', b: [1, 0.5, true, null], c: 'q"\\\n\t\u0001' })).toBe(
      '{"a": "héllo ✓", "b": [1, 0.5, true, null], "c": "q\\"\\\\\\n\\t\\u0001"}',
    );
    expect(CATCH_ROWS).toBe(10);
  });
});
