// One headless Chromium for all browsergym sessions, launched at the first reset (not at server
// start: envs nobody uses cost nothing), relaunched if it dies. Each session gets its own browser
// context (cookies, storage, pages), so a session that crashes or leaks takes only its context.
//
// What the task pages can reach is decided here and in the session's router (environment.ts). The
// router answers every HTTP request a page makes (task pages from memory, the rest blocked), and a
// browser-wide backstop fails the few it cannot see (unrouted-requests.ts), but neither sees WebRTC
// or WebSockets: those are closed at the Chromium level (see `chromiumArgs`).

import { existsSync } from 'node:fs';
import os from 'node:os';
import { chromium, type Browser, type BrowserContext, type CDPSession } from 'playwright-core';
import { SlotPool } from '../../slots.ts';
import { watchRendererMemory } from './renderer-memory.ts';
import { failUnroutedRequests } from './unrouted-requests.ts';

/**
 * A proxy that cannot exist (RFC 6761 reserves `.invalid`): traffic the router does not see — TURN
 * over TCP, WebSockets — goes to it and fails. Loopback is proxied too (`<-loopback>`; by default
 * Chromium sends it direct), so a task page cannot open a socket to 127.0.0.1.
 */
const NOWHERE_PROXY = 'http://proxy.invalid:1';

/** The renderer's JS heap limit, MiB, unless $BROWSERGYM_RENDERER_HEAP_MB says otherwise. */
export const DEFAULT_RENDERER_HEAP_MB = 256;
/** A renderer using more private memory (MiB) is killed, unless $BROWSERGYM_RENDERER_MEMORY_MB says otherwise. */
export const DEFAULT_RENDERER_MEMORY_MB = 512;

export function chromiumArgs(rendererHeapMb: number): string[] {
  return [
    '--headless=new',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-quic',
    '--disable-gpu',
    // WebRTC: no UDP unless proxied (STUN never leaves), and TCP candidates (TURN) go to the proxy.
    '--webrtc-ip-handling-policy=disable_non_proxied_udp',
    `--proxy-server=${NOWHERE_PROXY}`,
    '--proxy-bypass-list=<-loopback>',
    // A page that grows its JS heap past this crashes its renderer (one session's), not the machine.
    `--js-flags=--max-old-space-size=${rendererHeapMb}`,
  ];
}

/** `$CHROMIUM_PATH`, else the first system Chromium/Chrome found, else Playwright's own download. */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.CHROMIUM_PATH) return env.CHROMIUM_PATH;
  for (const candidate of ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome']) {
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Why Chromium's sandbox cannot be used here, when that is known before trying: Chromium refuses it
 * to root. Otherwise null, and the launch tries it (it also needs user namespaces or a setuid
 * chrome-sandbox helper; only the attempt tells).
 */
export function knownSandboxBlocker(uid: number | undefined = process.getuid?.()): string | null {
  return uid === 0 ? 'the server runs as root, and Chromium allows its sandbox to no root process' : null;
}

/** A Chromium target, as CDP's Target domain lists it. */
export interface TargetInfo {
  targetId: string;
  type: string;
  browserContextId?: string;
}

export interface ContextOptions {
  viewport: { width: number; height: number };
}

export interface SharedBrowserOptions {
  rendererHeapMb?: number;
  rendererMemoryMb?: number;
  /** Where the sandbox warning goes (default: stderr). */
  warn?: (line: string) => void;
}

/**
 * How long a reset may wait for its turn (resetTurn): each reset before it is bounded by its own
 * deadline (at most 300 s, BROWSERGYM_STEP_TIMEOUT_S), so a wait this long means the server is stuck.
 */
const RESET_TURN_WAIT_MS = 600_000;

const SANDBOX_OFF_NOTE =
  'task pages still reach only the env-server\'s task pages (from memory or the --miniwob folder; every request of every tab routed or blocked, WebRTC and sockets sent to a dead proxy), downloads are refused, every action has a deadline, and renderers have heap and memory limits';

export class SharedBrowser {
  private launching: Promise<Browser> | null = null;
  private openContexts = 0;
  private openTabs = 0;
  private closed = false;
  /** Once a sandboxed launch failed, later relaunches go straight to the unsandboxed one. */
  private sandboxBlocker: string | null = knownSandboxBlocker();
  private warned = false;
  private readonly args: string[];
  private readonly rendererMemoryMb: number;
  private readonly warn: (line: string) => void;
  /**
   * Resets running at once: as many as the machine has cores. A reset opens a page (the first one a
   * context and a renderer); eight at once on a busy 2-core machine each took 8 times as long, and all
   * ran past their deadline together (20 s, measured next to CPU hogs), where one at a time per core
   * each finishes its own work well inside it.
   */
  private readonly resetSlots = new SlotPool(os.availableParallelism());
  /**
   * Each launch's browser-level CDP session for pageTargets, open as long as the browser: detaching
   * a browser-level session stopped the renderer memory watch's own (its next call failed).
   */
  private readonly targetSessions = new WeakMap<Browser, CDPSession>();

  constructor(options: SharedBrowserOptions = {}) {
    this.args = chromiumArgs(options.rendererHeapMb ?? DEFAULT_RENDERER_HEAP_MB);
    this.rendererMemoryMb = options.rendererMemoryMb ?? DEFAULT_RENDERER_MEMORY_MB;
    this.warn = options.warn ?? ((line) => process.stderr.write(`${line}\n`));
  }

  /** Contexts created and not yet closed (the leak check: 0 once every session ended). */
  get contexts(): number {
    return this.openContexts;
  }

  /** Pages open in all contexts, however they were opened (popups and background tabs included). */
  get pages(): number {
    return this.openTabs;
  }

  private async launch(executablePath: string | undefined): Promise<Browser> {
    const browser = await this.launchSandboxedIfPossible(executablePath);
    await failUnroutedRequests(browser);
    await watchRendererMemory(browser, this.rendererMemoryMb, this.warn);
    this.targetSessions.set(browser, await browser.newBrowserCDPSession());
    return browser;
  }

  private async launchSandboxedIfPossible(executablePath: string | undefined): Promise<Browser> {
    const launch = (chromiumSandbox: boolean) => chromium.launch({ executablePath, headless: true, chromiumSandbox, args: this.args });
    let blocker = this.sandboxBlocker;
    if (blocker === null) {
      try {
        return await launch(true);
      } catch (err) {
        const lines = err instanceof Error ? err.message.split('\n') : [String(err)];
        const why = (lines.find((l) => /sandbox/i.test(l)) ?? lines[0]!).trim();
        blocker = `Chromium could not start with its sandbox (${why}); it needs user namespaces (the kernel or AppArmor may forbid them) or a setuid chrome-sandbox`;
      }
    }
    // Only a launch that works without the sandbox shows the sandbox was the problem.
    const browser = await launch(false);
    this.sandboxBlocker = blocker;
    if (!this.warned) {
      this.warned = true;
      this.warn(`webgrpo: browsergym runs Chromium WITHOUT its sandbox: ${blocker}. What still protects you: ${SANDBOX_OFF_NOTE}.`);
    }
    return browser;
  }

  private browser(): Promise<Browser> {
    if (this.closed) return Promise.reject(new Error('the browsergym browser was shut down'));
    if (!this.launching) {
      const executablePath = chromiumPath();
      const launching = this.launch(executablePath).catch((err: unknown) => {
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

  /** Resolves once Chromium runs (launching it if needed): a launch is not charged to a session's deadline. */
  async ready(): Promise<void> {
    await this.browser();
  }

  /**
   * Waits for a reset's turn (see resetSlots); call the returned function once the reset is over.
   * A session's deadline starts with its turn: it bounds that session's own work, not the queue.
   */
  async resetTurn(): Promise<() => void> {
    if (!this.resetSlots.tryAcquire() && !(await this.resetSlots.wait(RESET_TURN_WAIT_MS).granted)) {
      throw new Error(`this browsergym server's resets waited ${RESET_TURN_WAIT_MS / 1000} s for a turn: the server is stuck`);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.resetSlots.release();
    };
  }

  /** Chromium's page targets in every context, tabs Playwright has not announced as pages yet included. */
  async pageTargets(): Promise<TargetInfo[]> {
    const session = this.targetSessions.get(await this.browser());
    if (!session) return [];
    const { targetInfos } = (await session.send('Target.getTargets')) as { targetInfos: TargetInfo[] };
    return targetInfos.filter((t) => t.type === 'page');
  }

  /** A fresh isolated context; close it with `context.close()`. */
  async newContext(options: ContextOptions): Promise<BrowserContext> {
    const browser = await this.browser();
    // No downloads (a page's blob download would otherwise be written to the temp folder) and no
    // service workers (they would fetch past the context's router).
    const context = await browser.newContext({ viewport: options.viewport, acceptDownloads: false, serviceWorkers: 'block' });
    this.openContexts++;
    let counted = true;
    context.on('close', () => {
      if (counted) this.openContexts--;
      counted = false;
    });
    context.on('page', (page) => {
      this.openTabs++;
      page.once('close', () => this.openTabs--);
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
