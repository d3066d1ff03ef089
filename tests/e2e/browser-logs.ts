// What the pages of an e2e file logged, for the message of a check that fails: a wait that times out in
// CI then says what the page said (a worker's error, a WebGPU validation message), not only what it
// waited for.
import type { Page } from 'playwright-core';

export interface BrowserLogs {
  /** The watched pages' console messages and uncaught errors, oldest first. */
  lines: string[];
  /** Keeps `page`'s console messages and uncaught errors, each prefixed with `who` when given. */
  watch(page: Page, who?: string): void;
  /** The last `n` lines, one string. */
  tail(n?: number): string;
  /** `what`; if it fails, its error's message followed by the last 30 lines. */
  withLogs<T>(what: Promise<T>): Promise<T>;
}

export function browserLogs(): BrowserLogs {
  const lines: string[] = [];
  const tail = (n = 30) => lines.slice(-n).join('\n');
  return {
    lines,
    watch(page, who) {
      const from = who ? `${who} ` : '';
      page.on('console', (m) => lines.push(`[${from}${m.type()}] ${m.text()}`));
      page.on('pageerror', (e) => lines.push(`[${from}pageerror] ${e.message}`));
    },
    tail,
    async withLogs(what) {
      try {
        return await what;
      } catch (err) {
        throw new Error(`${(err as Error).message}\n--- browser console ---\n${tail()}`);
      }
    },
  };
}
