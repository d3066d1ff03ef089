// The browser-wide backstop behind the sessions' routers. Each session's router (context.route in
// environment.ts) answers every request of every page in its context — but Playwright can only
// route a page once it has attached to it, and a tab Chromium opens without an opener (middle click,
// Ctrl/Shift/Meta+click, Ctrl+Enter on a link, a page's own synthetic Ctrl+click) starts its first
// navigation before that: that one request reached the network (a loopback service, when nothing
// else stopped it). An interceptor on the browser target sees requests only after the pages' own
// interceptors let them pass, and a router never lets one pass (it answers or aborts each), so
// whatever reaches this one is a request no router saw: it fails, whatever its URL.

import type { Browser } from 'playwright-core';

interface RequestPaused {
  requestId: string;
}

/** Fails, from now on, every request of `browser` that no context's router answered. */
export async function failUnroutedRequests(browser: Browser): Promise<void> {
  const cdp = await browser.newBrowserCDPSession();
  cdp.on('Fetch.requestPaused', (event: RequestPaused) => {
    // The browser may be closing: a request it no longer has needs no answer.
    cdp.send('Fetch.failRequest', { requestId: event.requestId, errorReason: 'BlockedByClient' }).catch(() => undefined);
  });
  await cdp.send('Fetch.enable', { patterns: [{ urlPattern: '*' }] });
}
