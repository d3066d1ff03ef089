// Tool declarations of an environment class read from its module's source text: the JSDoc block above
// each method (`/** Description. @param {type} name description @returns {type} description */`) is the
// TypeScript/JavaScript form of the Python docstring + type hints transformers' `get_json_schema` reads
// (specs/environment-classes.md §1). Comment blocks are parsed by comment-parser; the method a block
// documents is the declaration that follows it, inside the nearest `class` before it.

import { parse, type Block } from 'comment-parser';
import type { ToolDeclaration, ToolParameter, ToolParamType } from '../rollout/schema.ts';

/** One documented method: its class (the nearest `class Name` above the comment) and its declaration. */
export interface DocumentedMethod {
  className: string | null;
  method: string;
  /** The declaration's parameter names, when they are plain identifiers (null: destructured or unread). */
  signature: string[] | null;
  block: Block;
}

const METHOD = /^\s*(?:static\s+)?(?:async\s+)?(?:\*\s*)?([A-Za-z_$][\w$]*)\s*\(([^)]*)\)/;
const CLASS = /\bclass\s+([A-Za-z_$][\w$]*)/g;

/** Every JSDoc block that documents a method, with the class it sits in. */
export function documentedMethods(source: string): DocumentedMethod[] {
  const lines = source.split('\n');
  const classes: { line: number; name: string }[] = [];
  for (const m of source.matchAll(CLASS)) {
    // The line of the match: the newlines before it.
    const line = source.slice(0, m.index).split('\n').length - 1;
    classes.push({ line, name: m[1]! });
  }
  const out: DocumentedMethod[] = [];
  for (const block of parse(source, { spacing: 'preserve' })) {
    const last = block.source[block.source.length - 1]!;
    const endLine = last.number;
    // The code after `*/`: the rest of its line, then the following lines.
    const endText = lines[endLine] ?? '';
    const after = [endText.slice(endText.indexOf('*/') + 2), ...lines.slice(endLine + 1, endLine + 4)].join(' ');
    const decl = METHOD.exec(after);
    if (!decl) continue;
    const owner = classes.filter((c) => c.line <= block.source[0]!.number).pop();
    const params = decl[2]!.split(',').map((p) => p.trim().replace(/\s*=.*$/, '')).filter((p) => p !== '');
    const plain = params.every((p) => /^[A-Za-z_$][\w$]*$/.test(p));
    out.push({ className: owner?.name ?? null, method: decl[1]!, signature: plain ? params : null, block });
  }
  return out;
}

/** Splits `text` at `sep` where no bracket or quote is open. */
function splitTop(text: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quote) {
      if (ch === quote) quote = null;
      continue;
    }
    if (ch === '"' || ch === "'") quote = ch;
    else if ('<[({'.includes(ch)) depth++;
    else if ('>])}'.includes(ch)) depth--;
    else if (ch === sep && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim());
}

type Literal = string | number | boolean | null;

function literalOf(text: string): Literal | undefined {
  if (/^(['"]).*\1$/.test(text)) return text.slice(1, -1);
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return undefined;
}

const NAMED: Readonly<Record<string, ToolParamType>> = {
  string: 'string', number: 'number', float: 'number', integer: 'integer', int: 'integer', boolean: 'boolean', bool: 'boolean',
  null: 'null', undefined: 'null', void: 'null', any: 'any', unknown: 'any', '*': 'any', object: 'object', Object: { dict: null },
  array: { array: null }, Array: { array: null },
};

/**
 * A JSDoc/TypeScript type as the Python type hint it stands for: `string` str, `integer` int, `number`
 * float, `T[]`/`Array<T>` list[T], `[A, B]` tuple, `Record<string, V>`/`Object<string, V>` dict[str, V],
 * `'a'|'b'` Literal, `T|null`/`?T` Optional[T], other unions Union.
 */
export function jsdocType(text: string, where: string): ToolParamType {
  let t = text.trim();
  if (t.startsWith('?')) return { union: [jsdocType(t.slice(1), where), 'null'] };
  while (t.startsWith('(') && t.endsWith(')') && splitTop(t, '|').length === 1) t = t.slice(1, -1).trim();
  const members = splitTop(t, '|');
  if (members.length > 1) {
    const literals = members.map(literalOf);
    if (literals.every((l) => l !== undefined)) return { literal: literals as Literal[] };
    const types = members.map((m) => (literalOf(m) !== undefined ? { literal: [literalOf(m)!] } : jsdocType(m, where)));
    return { union: types };
  }
  const literal = literalOf(t);
  if (literal !== undefined) return { literal: [literal] };
  if (t.endsWith('[]')) return { array: jsdocType(t.slice(0, -2), where) };
  if (t.startsWith('[') && t.endsWith(']')) return { tuple: splitTop(t.slice(1, -1), ',').filter((m) => m !== '').map((m) => jsdocType(m, where)) };
  const generic = /^([A-Za-z_$][\w$.]*)\s*<(.*)>$/.exec(t);
  if (generic) {
    const args = splitTop(generic[2]!, ',');
    if ((generic[1] === 'Array' || generic[1] === 'ReadonlyArray') && args.length === 1) return { array: jsdocType(args[0]!, where) };
    if ((generic[1] === 'Record' || generic[1] === 'Object') && args.length === 2) return { dict: jsdocType(args[1]!, where) };
  }
  const named = NAMED[t];
  if (named !== undefined) return named;
  throw new Error(`${where}: cannot turn the type {${text}} into a JSON schema (use string, integer, number, boolean, null, any, T[], [A, B], Record<string, V>, 'a'|'b' or unions of these)`);
}

/** The declaration transformers builds from the equivalent Python method, from the method's JSDoc block. */
export function declarationFromJsdoc(name: string, doc: DocumentedMethod, where: string): ToolDeclaration {
  const params: ToolParameter[] = [];
  let returns: ToolDeclaration['returns'];
  for (const tag of doc.block.tags) {
    const at = `${where} @${tag.tag} ${tag.name}`;
    if (tag.tag === 'param' || tag.tag === 'arg' || tag.tag === 'argument') {
      if (tag.name.includes('.')) throw new Error(`${at}: nested parameters are not tool arguments; document each argument of the method by its own name`);
      if (!tag.type) throw new Error(`${at}: no {type}: write @param {type} ${tag.name} description`);
      params.push({ name: tag.name, type: jsdocType(tag.type, at), description: tag.description.replace(/^-\s*/, ''), optional: tag.optional || undefined });
    } else if (tag.tag === 'returns' || tag.tag === 'return') {
      // A return without a type has no annotation in Python terms: transformers then emits no `return`.
      if (tag.type) returns = { type: jsdocType(tag.type, at), description: returnText(tag.name, tag.description) };
    }
  }
  if (doc.signature) {
    const names = params.map((p) => p.name);
    if (names.join(',') !== doc.signature.join(',')) {
      throw new Error(`${where}: its @param tags (${names.join(', ') || 'none'}) do not match its parameters (${doc.signature.join(', ') || 'none'}); the model calls it with the documented names, in order`);
    }
  }
  return { name, description: doc.block.description.trim(), parameters: params, ...(returns ? { returns } : {}) };
}

/** comment-parser reads the first word after `@returns {type}` as a name; for @returns it is description. */
function returnText(name: string, description: string): string {
  return [name, description].filter((s) => s !== '').join(' ');
}
