// The MiniWoB page contract (specs/browsergym.md §5.1), written for webgrpo: every task page has the
// `WOB_*` globals, a `core` with `startEpisodeReal`, `endEpisode` (first call wins, optional time
// discount), `getUtterance` and the episode time limit. The instance (layout, labels, goal) is drawn
// on the server from the page seed, so a page is plain HTML plus the task's handlers (`genProblem`).
//
// The head holds title, 2 metas, style and 3 scripts so that, with body, #wrap, #query and #area,
// the first element of #area gets bid 13, as on MiniWoB's own pages (Appendix C).

import type { Rng } from '../../rng.ts';

export interface TaskInstance {
  /** The document title (the RootWebArea's name). */
  title: string;
  /** The instruction; never in the DOM (BrowserGym empties #query), only in the observation's `goal`. */
  goal: string;
  /** HTML inside `<div id="area">`. */
  area: string;
  /** Body of `genProblem()`: installs the handlers that call `core.endEpisode(reward, timeProportional, reason)`. */
  script: string;
  /** JSON data the script reads as `TASK` (e.g. the expected answer). */
  data?: Record<string, unknown>;
}

export interface MiniwobTask {
  name: string;
  /** BrowserGym's one-line description of the MiniWoB task. */
  description: string;
  generate(rng: Rng): TaskInstance;
}

const CORE = `
var WOB_REWARD_GLOBAL = 0, WOB_RAW_REWARD_GLOBAL = 0, WOB_REWARD_REASON = null, WOB_DONE_GLOBAL = false, WOB_EPISODE_ID = 0, WOB_TASK_READY = true;
var core = {
  EPISODE_MAX_TIME: 10000,
  startTime: 0,
  timer: null,
  startEpisodeReal: function () {
    genProblem();
    WOB_DONE_GLOBAL = false; WOB_REWARD_GLOBAL = 0; WOB_RAW_REWARD_GLOBAL = 0; WOB_REWARD_REASON = null;
    core.startTime = Date.now();
    core.timer = setTimeout(function () { core.endEpisode(-1, false, 'timed out'); }, core.EPISODE_MAX_TIME);
  },
  endEpisode: function (reward, timeProportional, reason) {
    if (core.timer === null) return;
    clearTimeout(core.timer);
    core.timer = null;
    var raw = reward;
    if (timeProportional && reward > 0) reward = reward * Math.max(0, 1 - (Date.now() - core.startTime) / core.EPISODE_MAX_TIME);
    WOB_RAW_REWARD_GLOBAL = raw; WOB_REWARD_GLOBAL = reward; WOB_REWARD_REASON = reason === undefined ? null : reason;
    WOB_DONE_GLOBAL = true; WOB_EPISODE_ID += 1;
  },
  getUtterance: function () { return TASK.goal; }
};
function byId(id) { return document.getElementById(id); }
`;

const STYLE = `
body { margin: 0; font: 10px Arial, sans-serif; }
#wrap { width: 160px; height: 210px; border: 1px solid #ddd; }
#query { background: #ff0; min-height: 50px; }
#area { padding: 2px; }
button { font-size: 10px; margin: 2px; }
input[type=text], input[type=password] { width: 120px; }
.dialog { border: 1px solid #999; padding: 3px; }
ul[role=tablist] { list-style: none; padding: 0; display: flex; gap: 4px; }
`;

function escapeScript(json: string): string {
  return json.replaceAll('<', '\\u003c');
}

export function escapeHtml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
}

/** The whole page of an instance. */
export function pageHtml(instance: TaskInstance): string {
  const data = escapeScript(JSON.stringify({ goal: instance.goal, ...instance.data }));
  return (
    `<!DOCTYPE html><html><head><title>${escapeHtml(instance.title)}</title>` +
    `<meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
    `<style>${STYLE}</style><script>${CORE}</script><script>var TASK = ${data};</script>` +
    `<script>function genProblem() {\n${instance.script}\n}</script></head>` +
    `<body><div id="wrap"><div id="query"></div><div id="area">${instance.area}</div></div></body></html>`
  );
}

// ---- drawing helpers (all from the page seed's stream) ----

export function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[rng.int(items.length)]!;
}

export function shuffle<T>(rng: Rng, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** `count` distinct items. */
export function sample<T>(rng: Rng, items: readonly T[], count: number): T[] {
  return shuffle(rng, items).slice(0, count);
}

/** An integer in [min, max). */
export function randi(rng: Rng, min: number, max: number): number {
  return min + rng.int(max - min);
}

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export function randomString(rng: Rng, minLen: number, maxLen: number, alphabet = ALNUM): string {
  const len = randi(rng, minLen, maxLen + 1);
  let out = '';
  for (let i = 0; i < len; i++) out += alphabet[rng.int(alphabet.length)];
  return out;
}

/** `count` distinct random strings. */
export function distinctStrings(rng: Rng, count: number, minLen: number, maxLen: number): string[] {
  const seen = new Set<string>();
  while (seen.size < count) seen.add(randomString(rng, minLen, maxLen));
  return [...seen];
}

export const FIRST_NAMES = [
  'Ada', 'Alma', 'Arlo', 'Bea', 'Boris', 'Cato', 'Cleo', 'Dara', 'Dov', 'Edda', 'Elio', 'Faye', 'Fritz', 'Gala', 'Gus',
  'Hale', 'Ines', 'Ivo', 'Jada', 'Joss', 'Kaia', 'Kip', 'Lark', 'Lev', 'Mara', 'Milo', 'Nell', 'Nico', 'Odile', 'Oren',
  'Pia', 'Quin', 'Rhea', 'Rolf', 'Sade', 'Tam', 'Tova', 'Ugo', 'Vida', 'Wren', 'Xan', 'Yara', 'Zeno', 'Zola',
];

export const WORDS = [
  'amet', 'arcu', 'augue', 'blandit', 'cras', 'cursus', 'dapibus', 'dictum', 'donec', 'eget', 'elit', 'enim', 'erat',
  'felis', 'fusce', 'gravida', 'iaculis', 'justo', 'lacus', 'lectus', 'ligula', 'lorem', 'magna', 'mauris', 'metus',
  'morbi', 'nibh', 'nulla', 'odio', 'orci', 'pede', 'porta', 'proin', 'purus', 'quis', 'risus', 'sapien', 'semper',
  'tellus', 'tempor', 'urna', 'varius', 'vel', 'vitae',
];

export function sentence(rng: Rng, words: number): string {
  const parts = Array.from({ length: words }, () => pick(rng, WORDS));
  const text = parts.join(' ');
  return text[0]!.toUpperCase() + text.slice(1) + '.';
}
