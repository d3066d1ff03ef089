// BrowserGym's accessibility-tree text (specs/browsergym.md §3.3–§3.5): bids read back from the
// smuggled ARIA prefixes of CDP `Accessibility.getFullAXTree` nodes, then the depth-first flattening
// with OpenEnv's default options (rules R1–R13), names and values printed as Python's repr.

import { pyRepr, pyReprString } from '../../../src/pyrepr.ts';

/** The parts of a CDP AXNode the flattening reads. */
export interface AXValue {
  type?: string;
  value?: unknown;
}
export interface AXNode {
  nodeId: string;
  ignored?: boolean;
  role?: AXValue;
  name?: AXValue;
  value?: AXValue;
  description?: AXValue;
  properties?: { name: string; value: AXValue }[];
  childIds?: string[];
  /** Set by `attachBids`. */
  browsergym_id?: string;
}

export interface FlattenOptions {
  /**
   * Treat `InlineTextBox` like `LineBreak` (not printed, children promoted): newer Chromium emits one
   * per wrapped line, duplicating text and depending on layout (§3.7). Default true ("classic" form).
   */
  skipInlineTextBox?: boolean;
  /** Drop the `url=` property newer Chromium puts on `RootWebArea` (§3.7). Default true. */
  dropRootUrl?: boolean;
}

/**
 * `browsergym`: what BrowserGym's server prints with today's Chromium (InlineTextBox lines and the
 * root's `url=`, as the recorded real frames); `classic`: the compact form of older Chromium builds.
 */
export type AxtreeForm = 'browsergym' | 'classic';
export const AXTREE_FORMS: readonly AxtreeForm[] = ['browsergym', 'classic'];

export function axtreeOptions(form: AxtreeForm): FlattenOptions {
  return form === 'classic' ? { skipInlineTextBox: true, dropRootUrl: true } : { skipInlineTextBox: false, dropRootUrl: false };
}

/** A form named by a flag, env var or reset kwarg; anything else is an error naming the choices. */
export function parseAxtreeForm(value: unknown, what: string): AxtreeForm {
  if (value === 'browsergym' || value === 'classic') return value;
  throw new Error(`${what} must be 'browsergym' or 'classic', got ${JSON.stringify(value)}`);
}

// Rule C2: the whole value must match; `.` stops at a newline, as Python's re without DOTALL.
const BID_PREFIX = /^browsergym_id_([a-zA-Z0-9]+)\s?(.*)$/;

/** Rule C2: moves each node's bid out of `roledescription` / `description` (in place). */
export function attachBids(nodes: AXNode[]): void {
  for (const node of nodes) {
    let bid: string | undefined;
    const props = node.properties ?? [];
    const i = props.findIndex((p) => p.name === 'roledescription');
    if (i >= 0 && typeof props[i]!.value?.value === 'string') {
      const m = BID_PREFIX.exec(props[i]!.value.value as string);
      if (m) {
        bid = m[1];
        if (m[2] === '') props.splice(i, 1);
        else props[i] = { ...props[i]!, value: { ...props[i]!.value, value: m[2] } };
      }
    }
    if (node.description && typeof node.description.value === 'string') {
      const m = BID_PREFIX.exec(node.description.value);
      if (m) {
        bid ??= m[1];
        if (m[2] === '') delete node.description;
        else node.description = { ...node.description, value: m[2] };
      }
    }
    if (bid !== undefined) node.browsergym_id = bid;
  }
}

// Python's str.isspace() set, for str.strip() (JS trim() differs: §3.5 rule 4).
const PY_SPACE = /^[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

export function pyStrip(text: string): string {
  return text.replace(PY_SPACE, '');
}

const SKIPPED_PROPERTIES = new Set(['editable', 'readonly', 'level', 'settable', 'multiline', 'invalid', 'focusable']);
const FLAG_PROPERTIES = new Set(['required', 'focused', 'atomic']);

/** Python truthiness of a JSON value. */
function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (value !== null && typeof value === 'object') return Object.keys(value).length > 0;
  return Boolean(value);
}

/** `flatten_axtree_to_str` with OpenEnv's defaults; starts at node 0 (the RootWebArea). */
export function flattenAxtree(nodes: readonly AXNode[], options: FlattenOptions = {}): string {
  const skipInline = options.skipInlineTextBox ?? true;
  const dropRootUrl = options.dropRootUrl ?? true;
  if (nodes.length === 0) return '';
  const byId = new Map(nodes.map((n) => [n.nodeId, n]));

  const visit = (node: AXNode, depth: number, parentName: string): string => {
    const role = String(node.role?.value ?? '');
    let line: string | null = null;
    let nameForChildren = '';
    // R1 (ignored roles) and R2 (no name): skipped, and the children see an empty parent name.
    if (!(role === 'LineBreak' || (skipInline && role === 'InlineTextBox')) && node.name !== undefined) {
      const name = String(node.name.value ?? '');
      nameForChildren = name;
      const attrs: string[] = [];
      for (const prop of node.properties ?? []) {
        if (!prop.value || !('value' in prop.value)) continue;
        if (SKIPPED_PROPERTIES.has(prop.name)) continue;
        if (dropRootUrl && role === 'RootWebArea' && prop.name === 'url') continue;
        if (FLAG_PROPERTIES.has(prop.name)) {
          if (truthy(prop.value.value)) attrs.push(prop.name);
        } else {
          attrs.push(`${prop.name}=${pyRepr(prop.value.value)}`);
        }
      }
      const skip = (role === 'generic' && attrs.length === 0) || (role === 'StaticText' && parentName.includes(name));
      if (!skip) {
        let text = role === 'generic' && name === '' ? 'generic' : `${role} ${pyReprString(pyStrip(name))}`;
        if (node.browsergym_id !== undefined) text = `[${node.browsergym_id}] ${text}`;
        if (node.value !== undefined && 'value' in node.value) text += ` value=${pyRepr(node.value.value)}`;
        for (const attr of attrs) text += `, ${attr}`;
        line = '\t'.repeat(depth) + text;
      }
    }
    const parts: string[] = line === null ? [] : [line];
    for (const childId of node.childIds ?? []) {
      const child = byId.get(childId);
      if (!child || childId === node.nodeId) continue;
      const sub = visit(child, line === null ? depth : depth + 1, nameForChildren);
      if (sub !== '') parts.push(sub);
    }
    return parts.join('\n');
  };
  return visit(nodes[0]!, 0, '');
}
