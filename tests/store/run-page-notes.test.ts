// The exported run page's notes on a rollout (unscorable reason, tool results rolled back for the
// budget) come from stored or imported JSON that anyone could have written: escaped, bounded, and a
// malformed overBudget is left out rather than printed or thrown on.
import { describe, expect, it } from 'vitest';
import { renderRunPage } from '../../env-server/run-page.ts';
import type { RunSummary } from '../../env-server/runs-wire.ts';

const run = { id: 'r1', name: 'n', status: 'finished', createdAt: '', updatedAt: '', config: {}, model: { name: 'm' }, env: { name: 'e' }, error: null } as unknown as RunSummary;
const page = (data: Record<string, unknown>) => renderRunPage({ run, steps: [], rollouts: [{ step: 0, index: 0, data: { turns: [], ...data } }], adapter: { files: [], bytes: null } });

describe('run page: rollout notes', () => {
  it('escapes the unscorable reason and cuts a huge one', () => {
    const html = page({ error: '<script>alert(1)</script>' + 'x'.repeat(100_000) });
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toContain('unscorable: &#60;script&#62;alert(1)&#60;/script&#62;');
    expect(html.length).toBeLessThan(60_000);
  });

  it('prints a well-formed overBudget and drops malformed, nested or hostile ones', () => {
    expect(page({ overBudget: { tokens: 640, budget: 600 } })).toContain('<p class="note">the last tool results were rolled back: 640 tokens with them, over the budget of 600</p>');
    for (const overBudget of [null, 5, 'x', [], { tokens: '640', budget: 600 }, { tokens: 1.5, budget: 2 }, { tokens: { toString: '<b>' }, budget: 1 }, { tokens: 1 }]) {
      expect(page({ overBudget }), JSON.stringify(overBudget)).not.toContain('class="note"');
    }
  });
});
