// Tool declarations → the JSON schema transformers' `get_json_schema` builds from a Python method's
// signature and Google-style docstring (grpo-semantics.md §2). TypeScript has no docstrings at run time,
// so a tool declares its name, description, typed parameters and return description; the schema built
// here has the same keys in the same order, so the rendered prompt is byte-identical to TRL's.

/** Python type hints a tool parameter can carry, in TS form. */
export type ToolParamType =
  | 'string' // str
  | 'integer' // int
  | 'number' // float
  | 'boolean' // bool
  | 'null' // None
  | 'any' // Any → {}
  | 'object' // any other class
  | { array: ToolParamType | null } // list[X] (null: bare list)
  | { tuple: ToolParamType[] } // tuple[A, B, …]
  | { dict: ToolParamType | null } // dict[str, V] (null: bare dict)
  | { literal: (string | number | boolean | null)[] } // Literal[…]
  | { union: ToolParamType[] }; // Union[…] / Optional[X] (include 'null' for Optional)

export interface ToolParameter {
  name: string;
  type: ToolParamType;
  /** The docstring's `Args:` entry. A trailing `(choices: [...])` becomes `enum`, as in transformers. */
  description: string;
  /** A parameter with a default value is not `required`. */
  optional?: boolean;
}

export interface ToolDeclaration {
  name: string;
  /** The docstring's summary (before `Args:`/`Returns:`). */
  description: string;
  /** Signature order. */
  parameters: ToolParameter[];
  /** Annotated return type and the docstring's `Returns:` text; omit when the method has no annotation. */
  returns?: { type: ToolParamType; description?: string };
}

export type JsonSchema = { [key: string]: unknown };

/** `{"type":"function","function":{…}}`, the object the chat template renders with `tojson`. */
export interface ToolSchema {
  type: 'function';
  function: {
    name: string;
    description: string;
    parameters: { type: 'object'; properties: Record<string, JsonSchema>; required?: string[] };
    return?: JsonSchema;
  };
}

function literalType(value: string | number | boolean | null): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string') return 'string';
  return Number.isInteger(value) ? 'integer' : 'number';
}

/** transformers' `_parse_type_hint`. */
export function typeSchema(type: ToolParamType): JsonSchema {
  if (typeof type === 'string') return type === 'any' ? {} : { type };
  if ('array' in type) return type.array === null ? { type: 'array' } : { type: 'array', items: typeSchema(type.array) };
  if ('tuple' in type) {
    if (type.tuple.length === 0) return { type: 'array' };
    if (type.tuple.length === 1) throw new Error('a tuple with a single element cannot become a JSON schema; use { array: X }');
    return { type: 'array', prefixItems: type.tuple.map(typeSchema) };
  }
  if ('dict' in type) return type.dict === null ? { type: 'object' } : { type: 'object', additionalProperties: typeSchema(type.dict) };
  if ('literal' in type) {
    if (type.literal.length === 0) throw new Error('a literal type needs at least one value');
    const types: string[] = [];
    for (const value of type.literal) {
      const t = literalType(value);
      if (!types.includes(t)) types.push(t);
    }
    return { type: types.length === 1 ? types[0] : types, enum: [...type.literal] };
  }
  const nullable = type.union.includes('null');
  const members = type.union.filter((t) => t !== 'null').map(typeSchema);
  if (members.length === 0) throw new Error('a union needs at least one non-null member');
  let schema: JsonSchema;
  if (members.length === 1) schema = members[0];
  else if (members.every((m) => typeof m.type === 'string')) schema = { type: members.map((m) => m.type as string).sort() };
  else schema = { anyOf: members };
  return nullable ? { ...schema, nullable: true } : schema;
}

const CHOICES = /\(choices:\s*(.*?)\)\s*$/i;

/** transformers' `get_json_schema` for the equivalent Python method. */
export function toolSchema(decl: ToolDeclaration): ToolSchema {
  if (!/^[A-Za-z_]\w*$/.test(decl.name)) throw new Error(`tool name '${decl.name}' is not a valid identifier`);
  if (decl.name.startsWith('_')) throw new Error(`tool name '${decl.name}' is private (starts with '_')`);
  const description = decl.description.trim();
  if (!description) throw new Error(`tool '${decl.name}' has no description (a docstring is required)`);
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const param of decl.parameters) {
    if (param.name in properties) throw new Error(`tool '${decl.name}' declares parameter '${param.name}' twice`);
    // Docstring entries are folded onto one line.
    let desc = param.description.trim().replace(/\s*\n+\s*/g, ' ');
    if (!desc) throw new Error(`tool '${decl.name}' has no description for the argument '${param.name}'`);
    const schema = typeSchema(param.type);
    const choices = CHOICES.exec(desc);
    if (choices) {
      let values: unknown;
      try {
        values = JSON.parse(choices[1]);
      } catch {
        throw new Error(`tool '${decl.name}' argument '${param.name}': (choices: …) must hold a JSON list`);
      }
      if (!Array.isArray(values)) throw new Error(`tool '${decl.name}' argument '${param.name}': (choices: …) must hold a JSON list`);
      schema.enum = values.map((v) => (typeof v === 'string' ? v.trim() : v));
      desc = desc.slice(0, choices.index).trim();
    }
    schema.description = desc;
    properties[param.name] = schema;
    if (!param.optional) required.push(param.name);
  }
  const parameters: ToolSchema['function']['parameters'] = { type: 'object', properties };
  if (required.length > 0) parameters.required = required;
  const fn: ToolSchema['function'] = { name: decl.name, description, parameters };
  if (decl.returns) {
    const ret = typeSchema(decl.returns.type);
    if (decl.returns.description !== undefined) ret.description = decl.returns.description.trim();
    fn.return = ret;
  }
  return { type: 'function', function: fn };
}

function pyJsonString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (c < 0x20) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += ch;
  }
  return out + '"';
}

function pyJsonNumber(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return 'Infinity';
  if (n === -Infinity) return '-Infinity';
  return String(n);
}

/**
 * Python's `json.dumps(x, ensure_ascii=False)`: `", "` and `": "` separators, insertion order, raw
 * non-ASCII. Integral floats print as JS prints them (`1`, not `1.0`): JS numbers carry no int/float tag.
 */
export function pyJsonDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return pyJsonNumber(value);
  if (typeof value === 'string') return pyJsonString(value);
  if (Array.isArray(value)) return '[' + value.map(pyJsonDumps).join(', ') + ']';
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => pyJsonString(k) + ': ' + pyJsonDumps(v));
    return '{' + entries.join(', ') + '}';
  }
  throw new Error(`pyJsonDumps: cannot serialize a ${typeof value}`);
}
