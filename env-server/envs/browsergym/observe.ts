// Reading a page the way BrowserGym does before every observation (specs/browsergym.md §3.1): mark
// the elements, fetch CDP's full accessibility tree, take the pruned HTML, unmark, attach the bids,
// flatten. Main frame only: the task pages have no iframes.

import type { CDPSession, Page } from 'playwright-core';
import { attachBids, flattenAxtree, type AXNode, type FlattenOptions } from './axtree.ts';
import { MARK_ELEMENTS, PRUNED_HTML, UNMARK_ELEMENTS } from './marking.ts';

export async function readPage(page: Page, cdp: CDPSession, options: FlattenOptions = {}): Promise<{ axtree: string; prunedHtml: string }> {
  await page.evaluate(MARK_ELEMENTS);
  let nodes: AXNode[];
  let prunedHtml: string;
  try {
    ({ nodes } = (await cdp.send('Accessibility.getFullAXTree')) as { nodes: AXNode[] });
    prunedHtml = (await page.evaluate(PRUNED_HTML)) as string;
  } finally {
    await page.evaluate(UNMARK_ELEMENTS);
  }
  attachBids(nodes);
  return { axtree: flattenAxtree(nodes, options), prunedHtml };
}
