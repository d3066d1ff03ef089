// One headless Chromium for all browsergym sessions, launched at the first reset (not at server
// start: envs nobody uses cost nothing), relaunched if it dies. Each session gets its own browser
// context (cookies, storage, pages), so a session that crashes or leaks takes only its context.

import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';

const CHROMIUM_ARGS = ['--headless=new', '--no-sandbox', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--disable-gpu'];

/** `$CHROMIUM_PATH`, else the first system Chromium/Chrome found, else Playwright's own download. */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.CHROMIUM_PATH) return env.CHROMIUM_PATH;
  for (const candidate of ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome']) {
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

export interface ContextOptions {
  viewport: { width: number; height: number };
}

export class SharedBrowser {
  private launching: Promise<Browser> | null = null;
  private openContexts = 0;
  private closed = false;

  /** Contexts created and not yet closed (the leak check: 0 once every session ended). */
  get contexts(): number {
    return this.openContexts;
  }

  private browser(): Promise<Browser> {
    if (this.closed) return Promise.reject(new Error('the browsergym browser was shut down'));
    if (!this.launching) {
      const executablePath = chromiumPath();
      const launching = chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS }).catch((err: unknown) => {
        this.launching = null;
        const where = executablePath ?? "Playwright's default Chromium";
        throw new Error(`browsergym cannot start Chromium (${where}): ${err instanceof Error ? err.message.split('\n')[0] : String(err)}. Install chromium or set CHROMIUM_PATH.`);
      });
      launching.then((b) => b.on('disconnected', () => {
        if (this.launching === launching) this.launching = null;
      }), () => undefined);
      this.launching = launching;
    }
    return this.launching;
  }

  /** A fresh isolated context; close it with `closeContext`. */
  async newContext(options: ContextOptions): Promise<BrowserContext> {
    const browser = await this.browser();
    const context = await browser.newContext({ viewport: options.viewport });
    this.openContexts++;
    let counted = true;
    context.on('close', () => {
      if (counted) this.openContexts--;
      counted = false;
    });
    return context;
  }

  /** Closes the browser (all contexts with it); later calls to newContext fail. */
  async shutdown(): Promise<void> {
    this.closed = true;
    const launching = this.launching;
    this.launching = null;
    if (launching) await launching.then((b) => b.close(), () => undefined);
  }

  /**
   * Closes the browser once no context is open (sessions closing right now get `waitMs` to finish),
   * allowing a later relaunch. With contexts still open after that — another server in this process
   * shares the built-in definition — the browser stays for them.
   */
  async release(waitMs = 10_000): Promise<void> {
    const deadline = Date.now() + waitMs;
    while (this.openContexts > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    if (this.openContexts > 0) return;
    const launching = this.launching;
    this.launching = null;
    if (launching) await launching.then((b) => b.close(), () => undefined);
  }
}
