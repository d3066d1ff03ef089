// One browsergym session (specs/browsergym.md §2.4–§2.6): reset opens the task page in the session's
// own browser context, step runs BrowserGym action text, and every reply carries BrowserGym's
// observation. Unlike upstream, reset's `task_name` picks the task (one server serves them all) and
// `error` carries the action's error text so a model can read what went wrong.

import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import type { AnyEnvInstance, WireObservation } from '../types.ts';
import { cryptoRng, seededRng } from '../rng.ts';
import { executeAction, type Tabs } from './actions.ts';
import type { FlattenOptions } from './axtree.ts';
import type { SharedBrowser } from './browser.ts';
import { readPage } from './observe.ts';
import { screenshotPixels } from './screenshot.ts';
import { pageSeed } from './seed.ts';
import { MINIWOB_TASKS, pageHtml } from './tasks/index.ts';

/** Where the task pages live; the session's context answers these requests itself (no network). */
export const MINIWOB_BASE_URL = 'http://miniwob.localhost/miniwob/';

export interface BrowserGymOptions {
  browser: SharedBrowser;
  /** Task when reset names none (upstream: $BROWSERGYM_TASK_NAME). */
  defaultTask: string;
  viewport: { width: number; height: number };
  /** The page's episode time limit in ms (BrowserGym: 1 000 000). */
  episodeMaxTimeMs: number;
  axtree: FlattenOptions;
  /** Element actions' timeout, ms (BrowserGym: 500). */
  actionTimeoutMs: number;
}

type ScreenshotMode = false | 'pixels' | 'png';

function screenshotMode(value: unknown): ScreenshotMode {
  if (value === undefined || value === null || value === false) return false;
  if (value === true || value === 'pixels') return 'pixels';
  if (value === 'png') return 'png';
  throw new Error(`screenshot must be true, false, 'pixels' or 'png', got ${JSON.stringify(value)}`);
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class BrowserGymEnvironment implements AnyEnvInstance {
  private episodeId: string = globalThis.crypto.randomUUID();
  private stepCount = 0;
  private taskName = '';
  private goal = '';
  private currentUrl = '';
  private cumReward = 0;
  private context: BrowserContext | null = null;
  private tabs: Tabs | null = null;
  private taskPage: Page | null = null;
  private taskUrl = '';
  private cdp: CDPSession | null = null;
  private cdpPage: Page | null = null;
  private screenshot: ScreenshotMode = false;
  /** The current episode's page, served for the task URL. */
  private html = '';
  /** Validation ended the episode (wrong page or URL): it stays over with reward 0. */
  private invalidated = false;
  /** Calls run one at a time, in arrival order, whatever the transport does. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** The session's browser context died mid-episode (not closed by us). */
  private lost = false;

  constructor(private readonly opts: BrowserGymOptions) {}

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  reset(kwargs: Record<string, unknown>): Promise<WireObservation> {
    return this.serial(() => this.doReset(kwargs));
  }

  step(action: Record<string, unknown>): Promise<WireObservation> {
    return this.serial(() => this.doStep(String(action.action_str)));
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

  close(): Promise<void> {
    this.closed = true;
    return this.serial(async () => {
      const context = this.context;
      this.context = null;
      this.tabs = null;
      this.taskPage = null;
      this.cdp = null;
      this.cdpPage = null;
      await context?.close().catch(() => undefined);
    });
  }

  private async doReset(kwargs: Record<string, unknown>): Promise<WireObservation> {
    if (this.closed) throw new Error('this browsergym session is closed');
    const name = kwargs.task_name ?? this.opts.defaultTask;
    const task = typeof name === 'string' ? MINIWOB_TASKS.get(name) : undefined;
    if (!task) throw new Error(`Unknown task_name ${JSON.stringify(name)}: this server has ${[...MINIWOB_TASKS.keys()].join(', ')}`);
    const seed = kwargs.seed;
    if (seed !== undefined && seed !== null && !(typeof seed === 'number' && Number.isInteger(seed) && seed >= 0 && seed <= 0xffffffff)) {
      throw new Error(`seed must be an integer between 0 and 2**32 - 1 or null, got ${JSON.stringify(seed)}`);
    }
    this.screenshot = screenshotMode(kwargs.screenshot);
    // Same gym seed → same page seed (as BrowserGym) → same instance; no seed → a fresh random one.
    const rng = seed === undefined || seed === null ? cryptoRng() : seededRng(pageSeed(seed));
    const instance = task.generate(rng);
    const html = pageHtml(instance);

    this.episodeId = globalThis.crypto.randomUUID();
    this.stepCount = 0;
    this.cumReward = 0;
    this.taskName = task.name;
    this.goal = instance.goal;
    this.invalidated = false;
    this.lost = false;

    this.html = html;
    if (!this.context) {
      const context = await this.opts.browser.newContext({ viewport: this.opts.viewport });
      // The agent's browser reaches nothing but the task pages, answered from memory (the current
      // episode's page for every MiniWoB URL); everything else is blocked.
      await context.route('**/*', (route) => {
        const url = route.request().url();
        if (url.startsWith(MINIWOB_BASE_URL)) return route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: this.html });
        if (url.startsWith('data:') || url === 'about:blank') return route.fallback();
        return route.abort('blockedbyclient');
      });
      this.context = context;
      // The context can die under us (browser crash, killed renderer): the next reset starts afresh.
      context.on('close', () => {
        if (this.context !== context) return;
        this.context = null;
        this.tabs = null;
        this.taskPage = null;
        this.cdp = null;
        this.cdpPage = null;
        this.lost = true;
      });
    }
    // One tab again: keep the first open page (navigating it is cheaper than a new one).
    const [keep, ...extra] = this.context.pages().filter((p) => !p.isClosed());
    for (const p of extra) await p.close().catch(() => undefined);
    this.taskUrl = `${MINIWOB_BASE_URL}${task.name}.html`;
    let page = keep ?? (await this.context.newPage());
    try {
      await page.goto(this.taskUrl, { waitUntil: 'load' });
    } catch {
      // A crashed tab cannot navigate: replace it once.
      await page.close().catch(() => undefined);
      page = await this.context.newPage();
      await page.goto(this.taskUrl, { waitUntil: 'load' });
    }
    await page.evaluate(`core.EPISODE_MAX_TIME = ${this.opts.episodeMaxTimeMs}; core.startEpisodeReal();`);
    this.taskPage = page;
    this.tabs = { context: this.context, pages: [page], active: 0, chat: [], infeasible: false, timeoutMs: this.opts.actionTimeoutMs };
    return this.observe(0.0, false, '');
  }

  private async doStep(actionStr: string): Promise<WireObservation> {
    this.stepCount += 1;
    try {
      if (this.lost) throw new Error("This session's browser context was closed (browser or tab crash); reset to start a new episode.");
      if (!this.tabs || !this.taskPage) throw new Error('Cannot call env.step() before calling env.reset()');
      const actionError = await executeAction(this.tabs, actionStr);
      const { reward, done } = await this.validate();
      const terminated = done || this.tabs.infeasible;
      this.cumReward += reward;
      return await this.observe(reward, terminated, actionError);
    } catch (err) {
      // Upstream's infrastructure-error path (§2.6): the session lives on, the error is in `error`.
      return {
        observation: { text: '', url: this.currentUrl, screenshot: null, goal: this.goal, axtree_txt: '', pruned_html: '', error: errorText(err), last_action_error: true },
        reward: 0.0,
        done: false,
      };
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
      ({ axtree, prunedHtml: pruned } = await readPage(page, this.cdp, this.opts.axtree));
    } catch {
      // A page mid-navigation or about:blank has no tree: upstream sends "" as well.
    }
    this.currentUrl = page.url();
    const screenshot = this.screenshot === false ? null : await screenshotPixels(page, this.screenshot);
    return {
      observation: {
        text: axtree !== '' ? axtree : pruned,
        url: this.currentUrl,
        screenshot,
        goal: this.goal,
        axtree_txt: axtree,
        pruned_html: pruned,
        error: actionError,
        last_action_error: actionError !== '',
      },
      reward,
      done,
    };
  }
}
