// Chromium makes a tab (a popup, target=_blank, a middle/Ctrl/Shift-click background tab) before
// Playwright announces it as a page: the announcement waits for the tab's setup, seconds on a loaded
// machine. A step that answered before then, and a reset that closed "every tab but the task's" right
// after it, missed that tab: it was announced during the next episode, joined it and took a place
// under the cap. So a session waits, after each action and before a reset closes the old tabs, until
// every page Chromium has in its context is one it has seen: each counted tab's Chromium target is
// known (one CDP call when it is counted); a tab closed at birth is gone from Chromium once closed.

import type { BrowserContext, Page } from 'playwright-core';
import type { TargetInfo } from './browser.ts';

const POLL_MS = 25;

/** The Chromium targets of one context's counted tabs. */
export class TabTargets {
  private readonly ids = new Map<Page, Promise<string | null>>();
  private contextId: string | null = null;

  constructor(
    private readonly context: BrowserContext,
    /** Chromium's page targets (SharedBrowser.pageTargets). */
    private readonly pageTargets: () => Promise<TargetInfo[]>,
  ) {}

  /** Learns the Chromium target of a tab the session counted (null once it is gone). */
  track(page: Page): void {
    if (this.ids.has(page)) return;
    const id = (async () => {
      const session = await this.context.newCDPSession(page);
      try {
        const { targetInfo: info } = (await session.send('Target.getTargetInfo')) as { targetInfo: TargetInfo };
        this.contextId ??= info.browserContextId ?? null;
        return info.targetId;
      } finally {
        await session.detach().catch(() => undefined);
      }
    })().catch(() => null);
    this.ids.set(page, id);
    page.once('close', () => this.ids.delete(page));
  }

  /**
   * Resolves once every page Chromium has in this context is a tracked tab, or after `withinMs`
   * (a page that opens tabs without end never settles; its tabs are still capped at birth). It asks
   * the browser, not a page: a page that spins or crashes does not hold it up.
   */
  async settled(withinMs: number): Promise<void> {
    const until = Date.now() + withinMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    // A tab's target id comes from a CDP call to its page: one that never answers ends the wait too.
    const timeUp = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), withinMs)));
    try {
      for (;;) {
        const known = await Promise.race([Promise.all(this.ids.values()), timeUp]);
        if (known === null) return;
        const unseen = (await this.pageTargets()).filter((t) => t.browserContextId === this.contextId && !known.includes(t.targetId));
        if (unseen.length === 0 || Date.now() >= until) return;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    } catch {
      // The browser closed meanwhile: nothing is left to wait for.
    } finally {
      clearTimeout(timer);
    }
  }
}
