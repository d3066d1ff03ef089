// Reading a page the way BrowserGym does before every observation (specs/browsergym.md §3.1): mark
// the elements, fetch CDP's full accessibility tree, take the pruned HTML, unmark, attach the bids,
// flatten. Main frame only: the task pages have no iframes.

import type { CDPSession, Page } from 'playwright-core';
import { attachBids, flattenAxtree, type AXNode, type FlattenOptions } from './axtree.ts';
import { MARK_ELEMENTS, PRUNED_HTML, UNMARK_ELEMENTS } from './marking.ts';

export async function readPage(page: Page, cdp: CDPSession, options: FlattenOptions = {}): Promise<{ axtree: string; prunedHtml: string }> {
  await page.evaluate(MARK_ELEMENTS);
  let nodes: AXNode[];
  try {
    ({ nodes } = (await cdp.send('Accessibility.getFullAXTree')) as { nodes: AXNode[] });
  } catch (err) {
    await page.evaluate(UNMARK_ELEMENTS).catch(() => undefined);
    throw err;
  }
  // One round trip for both: the pruned HTML (read while marked, as BrowserGym's DOM snapshot), then unmark.
  const prunedHtml = (await page.evaluate(`[${PRUNED_HTML}, ${UNMARK_ELEMENTS}][0]`)) as string;
  attachBids(nodes);
  return { axtree: flattenAxtree(nodes, options), prunedHtml };
}
