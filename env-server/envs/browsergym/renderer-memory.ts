// Kills any renderer of our Chromium whose private memory passes a bound. The renderers' JS heap has
// its own limit (--max-old-space-size), but ArrayBuffers, canvases and the DOM live outside it: a
// page can fill 1 GB of typed arrays in a second. Browser contexts never share a renderer, so a
// killed renderer is one session's page crashing (environment.ts then drops that context).
//
// Linux only: memory is read from /proc/<pid>/status (RssAnon: private, resident). Elsewhere the
// watch is off and the heap limit alone applies.

import { readFileSync } from 'node:fs';
import type { Browser, CDPSession } from 'playwright-core';

const POLL_MS = 250;

/** Private resident memory of a process, MiB; null when it cannot be read (gone, or not Linux). */
export function privateMemoryMb(pid: number): number | null {
  try {
    const kb = /^RssAnon:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
}

/**
 * Starts watching `browser`'s renderers; stops by itself when the browser goes. A failed poll (the CDP
 * session detached, a call that timed out while Chromium was busy) never ends the watch while the
 * browser lives: the next poll opens a new session, so the bound holds for the browser's whole life.
 */
export async function watchRendererMemory(browser: Browser, limitMb: number, log: (line: string) => void): Promise<void> {
  if (privateMemoryMb(process.pid) === null) return;
  let cdp: CDPSession | null = await browser.newBrowserCDPSession();
  let busy = false;
  const poll = async (): Promise<void> => {
    cdp ??= await browser.newBrowserCDPSession();
    const { processInfo } = await cdp.send('SystemInfo.getProcessInfo');
    for (const { type, id } of processInfo) {
      if (type !== 'renderer') continue;
      const mb = privateMemoryMb(id);
      if (mb === null || mb <= limitMb) continue;
      log(`webgrpo: browsergym killed a renderer using ${Math.round(mb)} MiB (limit ${limitMb} MiB, BROWSERGYM_RENDERER_MEMORY_MB)`);
      try {
        process.kill(id, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  };
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    poll()
      .catch(() => {
        if (!browser.isConnected()) return clearInterval(timer);
        // The session is suspect: drop it, and the next poll starts a fresh one.
        void cdp?.detach().catch(() => {});
        cdp = null;
      })
      .finally(() => (busy = false));
  }, POLL_MS);
  timer.unref();
  browser.on('disconnected', () => clearInterval(timer));
}
