// BrowserGym's default high-level action set (specs/browsergym.md §4.1: chat, infeas, bid, nav, tab
// and noop), run with Playwright, with BrowserGym's error texts (§4.3): `<PythonClass>: <message>`.
// Also TRL's forms that upstream rejects: `send_keys(text)` and `scroll('up'|'down')`.

import type { BrowserContext, Locator, Page } from 'playwright-core';
import { parseActions, pyValueRepr, toJs, type ActionCall, type PyValue } from './action-parser.ts';
import { actionErrorText } from './error-text.ts';

/** A Python exception: the error text is `<kind>: <message>`. */
export class PyError extends Error {
  constructor(
    readonly kind: string,
    message: string,
  ) {
    super(message);
  }
  get text(): string {
    return `${this.kind}: ${this.message}`;
  }
}

/** The browser tabs of one session; `active` indexes `pages`. */
export interface Tabs {
  context: BrowserContext;
  pages: Page[];
  active: number;
  /** Chat messages the agent sent (`send_msg_to_user`); MiniWoB ignores them. */
  chat: string[];
  /** Set by `report_infeasible`: the episode ends. */
  infeasible: boolean;
  /**
   * Element actions wait this long for the page to load and the element to be actionable
   * (BrowserGym: 500 ms, which a busy machine misses; see DEFAULT_ACTION_TIMEOUT_MS).
   */
  timeoutMs: number;
}

/** `noop(wait_ms)` waits at most this long: a model must not stall its session for minutes. */
const MAX_NOOP_MS = 10_000;
/** Pixels per `scroll('up'|'down')` (TRL's form); BrowserGym's form takes explicit deltas. */
const SCROLL_STEP = 300;
/**
 * Size caps on what a model may send. Typing is one round trip per key (20 000 keys held a session
 * for minutes), and no task here needs more than a few words per field or a few calls per step.
 */
export const MAX_ACTION_CHARS = 10_000;
export const MAX_CALLS_PER_ACTION = 10;
export const MAX_ARG_CHARS = 1000;
/** Tabs one session may have open, however opened (each may cost a renderer). */
export const MAX_TABS = 4;

interface Signature {
  params: string[];
  /** Defaults of the trailing parameters. */
  defaults: PyValue[];
}

const BID_SIG = (extra: string[] = [], defaults: PyValue[] = []): Signature => ({ params: ['bid', ...extra], defaults });

const SIGNATURES: Record<string, Signature> = {
  noop: { params: ['wait_ms'], defaults: [1000] },
  send_msg_to_user: { params: ['text'], defaults: [] },
  report_infeasible: { params: ['reason'], defaults: [] },
  scroll: { params: ['delta_x', 'delta_y'], defaults: [] },
  fill: BID_SIG(['value', 'enable_autocomplete_menu'], [false]),
  select_option: BID_SIG(['options']),
  click: BID_SIG(['button', 'modifiers'], ['left', []]),
  dblclick: BID_SIG(['button', 'modifiers'], ['left', []]),
  hover: BID_SIG(),
  press: BID_SIG(['key_comb']),
  focus: BID_SIG(),
  clear: BID_SIG(),
  drag_and_drop: { params: ['from_bid', 'to_bid'], defaults: [] },
  upload_file: BID_SIG(['file']),
  go_back: { params: [], defaults: [] },
  go_forward: { params: [], defaults: [] },
  goto: { params: ['url'], defaults: [] },
  new_tab: { params: [], defaults: [] },
  tab_close: { params: [], defaults: [] },
  tab_focus: { params: ['index'], defaults: [] },
  // TRL's tool: keyboard input to the focused element.
  send_keys: { params: ['text'], defaults: [] },
};

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Python's `'a'`, `'a' and 'b'`, `'a', 'b', and 'c'`. */
function nameList(names: string[]): string {
  const quoted = names.map((n) => `'${n}'`);
  if (quoted.length <= 2) return quoted.join(' and ');
  return `${quoted.slice(0, -1).join(', ')}, and ${quoted[quoted.length - 1]}`;
}

/** Python's argument binding, with its TypeError texts. */
function bind(call: ActionCall, sig: Signature): Record<string, PyValue> {
  const { name, args, kwargs } = call;
  const max = sig.params.length;
  const required = max - sig.defaults.length;
  if (args.length > max) {
    const takes = required === max ? plural(max, 'positional argument') : `from ${required} to ${max} positional arguments`;
    throw new PyError('TypeError', `${name}() takes ${takes} but ${args.length} ${args.length === 1 ? 'was' : 'were'} given`);
  }
  const bound: Record<string, PyValue> = {};
  sig.params.forEach((p, i) => {
    if (i < args.length) bound[p] = args[i]!;
  });
  for (const [key, value] of kwargs) {
    if (!sig.params.includes(key)) throw new PyError('TypeError', `${name}() got an unexpected keyword argument '${key}'`);
    if (key in bound) throw new PyError('TypeError', `${name}() got multiple values for argument '${key}'`);
    bound[key] = value;
  }
  const missing = sig.params.slice(0, required).filter((p) => !(p in bound));
  if (missing.length > 0) {
    throw new PyError('TypeError', `${name}() missing ${missing.length} required positional argument${missing.length === 1 ? '' : 's'}: ${nameList(missing)}`);
  }
  sig.params.forEach((p, i) => {
    if (!(p in bound)) bound[p] = sig.defaults[i - required]!;
  });
  return bound;
}

/** The length of the longest string in a value (lists, tuples and dicts included). */
function longestString(value: PyValue): number {
  if (typeof value === 'string') return value.length;
  if (Array.isArray(value)) return Math.max(0, ...value.map(longestString));
  if (value !== null && typeof value === 'object' && 'tuple' in value) return longestString(value.tuple);
  if (value !== null && typeof value === 'object' && 'dict' in value) return Math.max(0, ...value.dict.map(([k, v]) => Math.max(k.length, longestString(v))));
  return 0;
}

function page(tabs: Tabs): Page {
  const p = tabs.pages[tabs.active];
  if (!p) throw new PyError('Error', 'no open page');
  return p;
}

async function element(tabs: Tabs, bid: PyValue): Promise<Locator> {
  if (typeof bid !== 'string') throw new PyError('ValueError', `expected a string, got ${pyValueRepr(bid)}`);
  const p = page(tabs);
  // A page still loading (after a navigation, or slowly on a busy machine) may not have the element yet.
  await p.waitForLoadState('load', { timeout: tabs.timeoutMs });
  const locator = p.locator(`[bid=${JSON.stringify(bid)}]`);
  if ((await locator.count()) === 0) throw new PyError('ValueError', `Could not find element with bid "${bid}"`);
  return locator.first();
}

function stringArg(value: PyValue, what: string): string {
  if (typeof value !== 'string') throw new PyError('ValueError', `${what}: expected a string, got ${pyValueRepr(value)}`);
  return value;
}

function numberArg(value: PyValue, what: string): number {
  const n = toJs(value);
  if (typeof n !== 'number' || !Number.isFinite(n)) throw new PyError('TypeError', `${what} must be a number, got ${pyValueRepr(value)}`);
  return n;
}

type Modifier = 'Alt' | 'Control' | 'ControlOrMeta' | 'Meta' | 'Shift';
type MouseButton = 'left' | 'middle' | 'right';

function clickOptions(tabs: Tabs, bound: Record<string, PyValue>): { button: MouseButton; modifiers: Modifier[]; timeout: number } {
  return { button: toJs(bound.button!) as MouseButton, modifiers: toJs(bound.modifiers!) as Modifier[], timeout: tabs.timeoutMs };
}

/** Key names Playwright's keyboard.press understands (with optional `Mod+` prefixes). */
const KEY = /^((Shift|Control|Alt|Meta|ControlOrMeta)\+)*(Enter|Tab|Backspace|Delete|Escape|Space|Home|End|PageUp|PageDown|Insert|ArrowUp|ArrowDown|ArrowLeft|ArrowRight|F\d{1,2}|[A-Za-z0-9])$/;

async function run(tabs: Tabs, call: ActionCall): Promise<void> {
  const sig = SIGNATURES[call.name];
  if (!sig) throw new PyError('NameError', `Invalid action type '${call.name}'.`);
  // TRL's scroll('up'|'down'): one string argument instead of BrowserGym's two deltas.
  if (call.name === 'scroll' && call.args.length === 1 && call.kwargs.length === 0 && (call.args[0] === 'up' || call.args[0] === 'down')) {
    await page(tabs).mouse.wheel(0, call.args[0] === 'down' ? SCROLL_STEP : -SCROLL_STEP);
    return;
  }
  const a = bind(call, sig);
  for (const [param, value] of Object.entries(a)) {
    const length = longestString(value);
    if (length > MAX_ARG_CHARS) throw new PyError('ValueError', `${call.name}(): ${param} is ${length} characters; this server takes at most ${MAX_ARG_CHARS}`);
  }
  switch (call.name) {
    case 'noop':
      return page(tabs).waitForTimeout(Math.min(Math.max(numberArg(a.wait_ms!, 'wait_ms'), 0), MAX_NOOP_MS));
    case 'send_msg_to_user':
      if (typeof a.text !== 'string') throw new PyError('ValueError', `Forbidden value: ${pyValueRepr(a.text!)} is not a string`);
      tabs.chat.push(a.text);
      return;
    case 'report_infeasible':
      tabs.chat.push(String(toJs(a.reason!)));
      tabs.infeasible = true;
      return;
    case 'scroll':
      return page(tabs).mouse.wheel(numberArg(a.delta_x!, 'delta_x'), numberArg(a.delta_y!, 'delta_y'));
    case 'fill': {
      const el = await element(tabs, a.bid!);
      const value = stringArg(a.value!, 'value');
      if (a.enable_autocomplete_menu === true && value.length > 0) {
        await el.clear({ timeout: tabs.timeoutMs });
        await el.fill(value.slice(0, -1), { timeout: tabs.timeoutMs });
        await el.pressSequentially(value.slice(-1), { timeout: tabs.timeoutMs });
        return;
      }
      return el.fill(value, { timeout: tabs.timeoutMs });
    }
    case 'select_option': {
      const el = await element(tabs, a.bid!);
      await el.selectOption(toJs(a.options!) as string | string[], { timeout: tabs.timeoutMs });
      return;
    }
    case 'click':
      return (await element(tabs, a.bid!)).click(clickOptions(tabs, a));
    case 'dblclick':
      return (await element(tabs, a.bid!)).dblclick(clickOptions(tabs, a));
    case 'hover':
      return (await element(tabs, a.bid!)).hover({ timeout: tabs.timeoutMs });
    case 'press':
      return (await element(tabs, a.bid!)).press(stringArg(a.key_comb!, 'key_comb'), { timeout: tabs.timeoutMs });
    case 'focus':
      return (await element(tabs, a.bid!)).focus({ timeout: tabs.timeoutMs });
    case 'clear':
      return (await element(tabs, a.bid!)).clear({ timeout: tabs.timeoutMs });
    case 'drag_and_drop': {
      const from = await element(tabs, a.from_bid!);
      const to = await element(tabs, a.to_bid!);
      await from.dragTo(to, { timeout: tabs.timeoutMs });
      return;
    }
    case 'upload_file':
      // Nothing on this server may read the machine's files on a model's say-so.
      throw new PyError('ValueError', 'upload_file is disabled on this server');
    case 'go_back':
      await page(tabs).goBack();
      return;
    case 'go_forward':
      await page(tabs).goForward();
      return;
    case 'goto': {
      // The context's router answers http(s) with the task page or blocks it, but other schemes never
      // reach a router: browser-internal pages (chrome://version shows the command line and profile
      // path) and data: URLs, which would run whatever page and script the caller wrote.
      const url = stringArg(a.url!, 'url');
      if (!/^(https?:|about:blank$)/i.test(url)) throw new PyError('ValueError', `goto: only http(s) URLs may be opened on this server, got ${JSON.stringify(url.slice(0, 100))}`);
      await page(tabs).goto(url);
      return;
    }
    case 'new_tab': {
      // Every open page counts, popups and background tabs included (they are tabs of the session).
      if (tabs.context.pages().filter((p) => !p.isClosed()).length >= MAX_TABS) throw new PyError('ValueError', `new_tab: this server allows at most ${MAX_TABS} tabs per session`);
      const p = await tabs.context.newPage();
      // The session's page listener may have listed it already.
      if (!tabs.pages.includes(p)) tabs.pages.push(p);
      tabs.active = tabs.pages.indexOf(p);
      return;
    }
    case 'tab_close': {
      const p = page(tabs);
      tabs.pages.splice(tabs.active, 1);
      await p.close();
      if (tabs.pages.length === 0) tabs.pages.push(await tabs.context.newPage());
      tabs.active = Math.max(0, tabs.active - 1);
      return;
    }
    case 'tab_focus': {
      const index = toJs(a.index!);
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= tabs.pages.length) {
        throw new PyError('IndexError', 'list index out of range');
      }
      tabs.active = index;
      await page(tabs).bringToFront();
      return;
    }
    case 'send_keys': {
      const text = stringArg(a.text!, 'text');
      const keyboard = page(tabs).keyboard;
      if (KEY.test(text)) await keyboard.press(text);
      else await keyboard.type(text);
      return;
    }
  }
}

/** Runs every call in `actionStr`; returns BrowserGym's `last_action_error` text ('' on success). */
export async function executeAction(tabs: Tabs, actionStr: string): Promise<string> {
  if (actionStr.length > MAX_ACTION_CHARS) return `ValueError: the action is ${actionStr.length} characters; this server takes at most ${MAX_ACTION_CHARS}`;
  const calls = parseActions(actionStr);
  if (calls.length > MAX_CALLS_PER_ACTION) return `ValueError: the action has ${calls.length} calls; this server runs at most ${MAX_CALLS_PER_ACTION} per step`;
  if (calls.length === 0) return 'ValueError: Received an empty action.';
  try {
    // Names are checked before anything runs, as BrowserGym does when it compiles the action.
    for (const call of calls) if (!SIGNATURES[call.name]) throw new PyError('NameError', `Invalid action type '${call.name}'.`);
    for (const call of calls) await run(tabs, call);
    return '';
  } catch (err) {
    if (err instanceof PyError) return err.text;
    return actionErrorText(err);
  }
}
