// One browsergym session (specs/browsergym.md §2.4–§2.6): reset opens the task page in the session's
// own browser context, step runs BrowserGym action text, and every reply carries BrowserGym's
// observation. Unlike upstream, reset's `task_name` picks the task (one server serves them all) and
// `error` carries the action's error text so a model can read what went wrong. The tasks are ours
// (pages generated here from the seed) or a real MiniWoB++ folder's (the page seeds itself, run by
// BrowserGym's episode contract, miniwob-episode.ts).
//
// Every reset and step has a hard deadline: past it the session's browser context is closed (its
// renderer with it), whatever the page does — a page spinning in JS blocks every Playwright call on
// it, but closing the context still works. Closing the session closes the context at once too, even
// with a step in flight, so a session that leaves costs nothing after it left.

import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import type { AnyEnvInstance, WireObservation } from '../types.ts';
import { cryptoRng, seededRng } from '../rng.ts';
import { executeAction, MAX_TABS, type Tabs } from './actions.ts';
import { axtreeOptions, parseAxtreeForm, type AxtreeForm, type FlattenOptions } from './axtree.ts';
import { cleanMessage } from './error-text.ts';
import type { SharedBrowser } from './browser.ts';
import { readPage } from './observe.ts';
import { screenshot } from './screenshot.ts';
import { TabTargets } from './tab-targets.ts';
import { pageSeed } from './seed.ts';
import { MINIWOB_BASE_URL, type MiniwobSource } from './miniwob-source.ts';
import { HIDE_HUMAN_DISPLAY, startRealEpisode, READ_GOAL } from './miniwob-episode.ts';
import { MINIWOB_TASKS, pageHtml, type MiniwobTask } from './tasks/index.ts';


export interface BrowserGymOptions {
  browser: SharedBrowser;
  /** Task when reset names none (upstream: $BROWSERGYM_TASK_NAME). */
  defaultTask: string;
  viewport: { width: number; height: number };
  /** The page's episode time limit in ms (BrowserGym: 1 000 000). */
  episodeMaxTimeMs: number;
  /** The tree's form when reset names none. */
  axtree: AxtreeForm;
  /** Element actions' wait for the page and the element, ms (BrowserGym: 500; ours is longer). */
  actionTimeoutMs: number;
  /** A reset or step taking longer (ms) closes the session's context and answers an error. */
  stepTimeoutMs: number;
  /** Screenshots are scaled to fit this many pixels on their longest side. */
  screenshotMaxSide: number;
  /** Steps one episode may take; a step past them ends the episode without running. */
  maxEpisodeSteps: number;
  /** The tasks reset may pick (default MINIWOB_TASKS). */
  tasks?: ReadonlyMap<string, MiniwobTask>;
  /** A real MiniWoB++ folder: its tasks replace the built-in ones, run by BrowserGym's episode contract. */
  miniwob?: MiniwobSource;
}

/** A reset or step ran past its deadline (its context is closed by then). */
class DeadlineError extends Error {}

type ScreenshotMode = false | 'pixels' | 'png';

function screenshotMode(value: unknown): ScreenshotMode {
  if (value === undefined || value === null || value === false) return false;
  if (value === true || value === 'pixels') return 'pixels';
  if (value === 'png') return 'png';
  throw new Error(`screenshot must be true, false, 'pixels' or 'png', got ${JSON.stringify(value)}`);
}

/** An infrastructure error's text for `error`: Playwright's first line, without its call log or colours. */
function errorText(err: unknown): string {
  return cleanMessage(err instanceof Error ? err.message : String(err));
}

const LOST_BY_CRASH = "This session's browser context was closed (browser or tab crash)";

export class BrowserGymEnvironment implements AnyEnvInstance {
  private episodeId: string = globalThis.crypto.randomUUID();
  private stepCount = 0;
  private taskName = '';
  private goal = '';
  private currentUrl = '';
  private cumReward = 0;
  private context: BrowserContext | null = null;
  private tabs: Tabs | null = null;
  /** The Chromium targets of the context's counted tabs: a step and a reset wait for tabs not yet announced. */
  private tabTargets: TabTargets | null = null;
  private taskPage: Page | null = null;
  private taskUrl = '';
  private cdp: CDPSession | null = null;
  private cdpPage: Page | null = null;
  private screenshot: ScreenshotMode = false;
  private flatten: FlattenOptions = {};
  /** The current episode's page, served for the task URL. */
  private html = '';
  /** Validation ended the episode (wrong page or URL): it stays over with reward 0. */
  private invalidated = false;
  /** Calls run one at a time, in arrival order, whatever the transport does. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Why the session's browser context is gone mid-episode (crash, deadline); null while it is not. */
  private lost: string | null = null;
  /** Counts dropped contexts: work that outlived its context (a call past its deadline) sees it changed. */
  private generation = 0;
  /** Tabs closed at birth (past MAX_TABS) since the last observation: the next one says so. */
  private tabsRefused = 0;

  constructor(private readonly opts: BrowserGymOptions) {}

  /**
   * Runs `work` after the calls before it, under the deadline. Past the deadline the context is
   * closed, which makes the hung work's Playwright calls reject; the queue moves on without it.
   */
  private serial<T>(what: 'reset' | 'step', work: () => Promise<T>): Promise<T> {
    const timed = () => this.withDeadline(what, work);
    const next = this.queue.then(timed, timed);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async withDeadline<T>(what: 'reset' | 'step', work: () => Promise<T>): Promise<T> {
    // Chromium's launch (first reset) is Playwright's to bound, the wait for a reset's turn is the
    // other sessions' resets; the deadline is for this session's page work.
    let release = (): void => undefined;
    if (what === 'reset') {
      await this.opts.browser.ready();
      release = await this.opts.browser.resetTurn();
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const why = `the ${what} ran past the server's ${this.opts.stepTimeoutMs / 1000} s deadline (BROWSERGYM_STEP_TIMEOUT_S)`;
        void this.dropContext(`This session's browser context was closed: ${why}`);
        reject(new DeadlineError(`The ${what} ran past the server's ${this.opts.stepTimeoutMs / 1000} s deadline (BROWSERGYM_STEP_TIMEOUT_S), so this session's browser context was closed; reset to start a new episode.`));
      }, this.opts.stepTimeoutMs);
    });
    const running = work();
    // Past the deadline its rejection (context closed) has nobody waiting for it.
    running.catch(() => undefined);
    try {
      return await Promise.race([running, expired]);
    } finally {
      clearTimeout(timer);
      release();
    }
  }

  /** Forgets the context and closes it (with its pages and renderer); `lost` says why, null when the client closed. */
  private dropContext(lost: string | null): Promise<void> {
    const context = this.context;
    this.generation++;
    this.context = null;
    this.tabs = null;
    this.tabTargets = null;
    this.taskPage = null;
    this.cdp = null;
    this.cdpPage = null;
    this.lost = lost;
    return context ? context.close().catch(() => undefined) : Promise.resolve();
  }

  /**
   * Every page of the session's context is a tab of the session, however it was opened (new_tab, a
   * popup, target=_blank, a middle or Ctrl+click's background tab): past MAX_TABS it is closed at
   * once, else it joins the tab list (tab_focus reaches it) and leaves it when it closes.
   */
  private countPage(context: BrowserContext, page: Page): void {
    if (this.context !== context) return;
    if (context.pages().filter((p) => !p.isClosed()).length > MAX_TABS) {
      this.tabsRefused++;
      void page.close().catch(() => undefined);
      return;
    }
    this.tabTargets?.track(page);
    const tabs = this.tabs;
    if (tabs && !tabs.pages.includes(page)) tabs.pages.push(page);
    page.once('close', () => {
      const i = tabs?.pages.indexOf(page) ?? -1;
      if (i === -1) return;
      tabs!.pages.splice(i, 1);
      if (tabs!.active > i || tabs!.active >= tabs!.pages.length) tabs!.active = Math.max(0, tabs!.active - 1);
    });
  }

  /** Waits (at most the action timeout) until Chromium has no tab in this context that was not counted yet. */
  private async settleTabs(): Promise<void> {
    await this.tabTargets?.settled(this.opts.actionTimeoutMs);
  }

  reset(kwargs: Record<string, unknown>): Promise<WireObservation> {
    return this.serial('reset', () => this.doReset(kwargs));
  }

  step(action: Record<string, unknown>): Promise<WireObservation> {
    return this.serial('step', () => this.doStep(String(action.action_str))).catch((err: unknown) => {
      // The step that hit the deadline ends the episode; the error says what happened.
      if (err instanceof DeadlineError) return this.errorObservation(err.message, true);
      throw err;
    });
  }

  state(): Record<string, unknown> {
    return {
      episode_id: this.episodeId,
      step_count: this.stepCount,
      benchmark: 'miniwob',
      task_name: this.taskName,
      task_id: null,
      goal: this.goal,
      current_url: this.currentUrl,
      max_steps: null,
      cum_reward: this.cumReward,
    };
  }

  /** Closes the context now, not after the calls in flight (one may hang on a spinning page). */
  close(): Promise<void> {
    this.closed = true;
    return this.dropContext(null);
  }

  private errorObservation(error: string, done: boolean): WireObservation {
    return {
      observation: { text: '', url: this.currentUrl, screenshot: null, goal: this.goal, axtree_txt: '', pruned_html: '', error, last_action_error: true },
      reward: 0.0,
      done,
    };
  }

  private async doReset(kwargs: Record<string, unknown>): Promise<WireObservation> {
    if (this.closed) throw new Error('this browsergym session is closed');
    const tasks = this.opts.tasks ?? MINIWOB_TASKS;
    const source = this.opts.miniwob;
    const name = kwargs.task_name ?? this.opts.defaultTask;
    const known = source ? typeof name === 'string' && source.names.includes(name) : typeof name === 'string' && tasks.has(name);
    if (!known) throw new Error(`Unknown task_name ${JSON.stringify(name)}: this server has ${(source ? source.names : [...tasks.keys()]).join(', ')}`);
    const taskName = name as string;
    const seed = kwargs.seed;
    if (seed !== undefined && seed !== null && !(typeof seed === 'number' && Number.isInteger(seed) && seed >= 0 && seed <= 0xffffffff)) {
      throw new Error(`seed must be an integer between 0 and 2**32 - 1 or null, got ${JSON.stringify(seed)}`);
    }
    this.screenshot = screenshotMode(kwargs.screenshot);
    this.flatten = axtreeOptions(kwargs.axtree === undefined || kwargs.axtree === null ? this.opts.axtree : parseAxtreeForm(kwargs.axtree, 'axtree'));
    // Same gym seed → same page seed (as BrowserGym) → same instance; no seed → a fresh random one.
    const rng = seed === undefined || seed === null ? cryptoRng() : seededRng(pageSeed(seed));
    // A real page seeds itself (Math.seedrandom) with BrowserGym's page seed; ours are generated here.
    const realSeed = seed === undefined || seed === null ? rng.int(1_000_000) : pageSeed(seed);
    const instance = source ? null : tasks.get(taskName)!.generate(rng);

    this.episodeId = globalThis.crypto.randomUUID();
    this.stepCount = 0;
    this.cumReward = 0;
    this.taskName = taskName;
    this.goal = instance?.goal ?? '';
    this.invalidated = false;
    this.lost = null;

    if (instance) this.html = pageHtml(instance);
    const generation = this.generation;
    if (!this.context) {
      const context = await this.opts.browser.newContext({ viewport: this.opts.viewport });
      if (this.closed || generation !== this.generation) {
        // Closed (or past the deadline) while the context was being made: it belongs to nobody.
        await context.close().catch(() => undefined);
        throw new Error('this browsergym session was closed during its reset');
      }
      // The agent's browser reaches nothing but the task pages, answered from memory (the current
      // episode's page for every MiniWoB URL); everything else is blocked.
      await context.route('**/*', async (route) => {
        const url = route.request().url();
        if (url.startsWith('data:') || url === 'about:blank') return route.fallback();
        if (source) {
          // A real folder's files, read (or fetched) by the server: the browser itself reaches nothing.
          const answer = await source.answer(url).catch(() => null);
          if (answer) return route.fulfill(answer).catch(() => undefined);
          return route.abort('blockedbyclient').catch(() => undefined);
        }
        if (url.startsWith(MINIWOB_BASE_URL)) return route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: this.html });
        return route.abort('blockedbyclient');
      });
      this.context = context;
      this.tabTargets = new TabTargets(context, () => this.opts.browser.pageTargets());
      // The context can die under us (browser crash, killed renderer): the next reset starts afresh.
      context.on('close', () => {
        if (this.context === context) void this.dropContext(LOST_BY_CRASH);
      });
      context.on('page', (p) => {
        // A crashed tab (e.g. its renderer ran out of JS heap) takes the whole context: nothing of an
        // episode whose page died is worth keeping, and a fresh context is what a reset needs.
        p.on('crash', () => {
          if (this.context === context) void this.dropContext(`${LOST_BY_CRASH}: its page crashed (out of memory, or its renderer was killed)`);
        });
        this.countPage(context, p);
      });
    }
    const context = this.context;
    // The last step's tabs may not all be announced yet: they are that episode's, closed here too.
    await this.settleTabs();
    // One tab again: keep the first open page (navigating it is cheaper than a new one).
    const [keep, ...extra] = context.pages().filter((p) => !p.isClosed());
    for (const p of extra) await p.close().catch(() => undefined);
    this.taskUrl = source ? source.taskUrl(taskName) : `${MINIWOB_BASE_URL}${taskName}.html`;
    let page = keep ?? (await context.newPage());
    try {
      await page.goto(this.taskUrl, { waitUntil: 'load' });
    } catch {
      // A crashed tab cannot navigate: replace it once.
      await page.close().catch(() => undefined);
      page = await context.newPage();
      await page.goto(this.taskUrl, { waitUntil: 'load' });
    }
    if (source) {
      // BrowserGym's MiniWoB setup: hide the human display, seed, start, wait for the task, read the goal.
      await page.evaluate(HIDE_HUMAN_DISPLAY);
      await page.evaluate(startRealEpisode(realSeed, this.opts.episodeMaxTimeMs));
      await page.waitForFunction('WOB_TASK_READY', undefined, { timeout: this.opts.actionTimeoutMs });
      this.goal = String(await page.evaluate(READ_GOAL));
    } else {
      await page.evaluate(`core.EPISODE_MAX_TIME = ${this.opts.episodeMaxTimeMs}; core.startEpisodeReal();`);
    }
    if (generation !== this.generation) throw new Error('this browsergym session was closed during its reset');
    this.taskPage = page;
    // A page the task page opened while loading is a tab of this episode too.
    const opened = context.pages().filter((p) => p !== page && !p.isClosed());
    this.tabs = { context, pages: [page, ...opened], active: 0, chat: [], infeasible: false, timeoutMs: this.opts.actionTimeoutMs };
    this.tabsRefused = 0;
    return this.observe(0.0, false, '');
  }

  private async doStep(actionStr: string): Promise<WireObservation> {
    this.stepCount += 1;
    const generation = this.generation;
    try {
      if (this.lost !== null) throw new Error(`${this.lost}; reset to start a new episode.`);
      if (!this.tabs || !this.taskPage) throw new Error('Cannot call env.step() before calling env.reset()');
      if (this.stepCount > this.opts.maxEpisodeSteps) {
        return this.errorObservation(`This episode reached the server's limit of ${this.opts.maxEpisodeSteps} steps (BROWSERGYM_MAX_EPISODE_STEPS); reset to start a new one.`, true);
      }
      const actionError = await executeAction(this.tabs, actionStr);
      // Tabs the action opened are this step's: counted (or refused) before it answers.
      await this.settleTabs();
      const { reward, done } = await this.validate();
      const terminated = done || this.tabs.infeasible;
      this.cumReward += reward;
      return await this.observe(reward, terminated, actionError);
    } catch (err) {
      // The context died during this step (its page crashed): the episode is over, and this says why.
      if (generation !== this.generation && this.lost !== null) return this.errorObservation(`${this.lost}; reset to start a new episode.`, true);
      // Upstream's infrastructure-error path (§2.6): the session lives on, the error is in `error`.
      return this.errorObservation(errorText(err), false);
    }
  }

  /** BrowserGym's MiniWoB validate (§5.3): wrong page or URL ends the episode at 0; else the page's flags. */
  private async validate(): Promise<{ reward: number; done: boolean }> {
    const tabs = this.tabs!;
    if (this.invalidated || tabs.pages[tabs.active] !== this.taskPage || this.taskPage!.url() !== this.taskUrl) {
      this.invalidated = true;
      return { reward: 0, done: true };
    }
    const [raw, done] = (await this.taskPage!.evaluate('[WOB_RAW_REWARD_GLOBAL, WOB_DONE_GLOBAL]')) as [number, boolean];
    return { reward: raw > 0 ? 1.0 : 0.0, done: Boolean(done) };
  }

  private async observe(reward: number, done: boolean, actionError: string): Promise<WireObservation> {
    const tabs = this.tabs!;
    const page = tabs.pages[tabs.active]!;
    if (this.cdpPage !== page || this.cdp === null) {
      await this.cdp?.detach().catch(() => undefined);
      this.cdp = await this.context!.newCDPSession(page);
      this.cdpPage = page;
    }
    await page.waitForLoadState('domcontentloaded', { timeout: 3000 }).catch(() => undefined);
    let axtree = '';
    let pruned = '';
    try {
      ({ axtree, prunedHtml: pruned } = await readPage(page, this.cdp, this.flatten));
    } catch {
      // A page mid-navigation or about:blank has no tree: upstream sends "" as well.
    }
    this.currentUrl = page.url();
    const shot = this.screenshot === false ? null : await screenshot(page, this.screenshot, this.opts.screenshotMaxSide);
    // Read last: a tab the action opened may be announced only after the action returned.
    const refused = this.tabsRefused;
    this.tabsRefused = 0;
    const note = refused === 0 ? '' : `ValueError: ${refused === 1 ? 'a new tab was' : `${refused} new tabs were`} closed at once: this server allows at most ${MAX_TABS} tabs per session`;
    const error = [actionError, note].filter((e) => e !== '').join('\n');
    return {
      observation: {
        text: axtree !== '' ? axtree : pruned,
        url: this.currentUrl,
        screenshot: shot,
        goal: this.goal,
        axtree_txt: axtree,
        pruned_html: pruned,
        error,
        last_action_error: error !== '',
      },
      reward,
      done,
    };
  }
}
