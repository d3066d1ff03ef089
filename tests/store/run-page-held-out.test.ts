// The exported run page (and so a share link's page) shows the run's held-out evaluations: the app's
// Evaluate kept with its step (trained and base with their intervals, the paired difference) and the
// trainer's eval loop, plus their points as charts.
import { describe, expect, it } from 'vitest';
import { renderRunPage } from '../../env-server/run-page.ts';
import type { RunSummary, StepRecord } from '../../env-server/runs-wire.ts';

const run = { id: 'r1', name: 'n', status: 'finished', createdAt: '', updatedAt: '', config: {}, model: { name: 'm' }, env: { name: 'catch' }, error: null } as unknown as RunSummary;

describe('run page: held-out evaluation', () => {
  it('lists each evaluation with its interval and the paired difference', () => {
    const steps: StepRecord[] = [
      { step: 0, metrics: { reward: 0.1, eval_success_rate: 0.25, eval_success_ci95_low: 0.1, eval_success_ci95_high: 0.5, eval_episodes: 16 } },
      { step: 1, metrics: { reward: 0.2, 'evaluate/success_rate': 0.75, 'evaluate/success_ci95_low': 0.58, 'evaluate/success_ci95_high': 0.87, 'evaluate/episodes': 32, 'evaluate/base_success_rate': 0.5, 'evaluate/base_success_ci95_low': 0.34, 'evaluate/base_success_ci95_high': 0.66, 'evaluate/success_difference': 0.25, 'evaluate/success_difference_ci95_low': 0.05, 'evaluate/success_difference_ci95_high': 0.45 } },
    ];
    const html = renderRunPage({ run, steps, rollouts: [], adapter: { files: [], bytes: null } });
    expect(html).toContain('<h2>Held-out evaluation</h2>');
    const rows = [...html.matchAll(/<tr data-testid="page-held-out">(.*?)<\/tr>/g)].map((m) => m[1]!.replace(/<\/?td>/g, '|'));
    expect(rows).toEqual([
      '|1||eval loop||16||25% (10%–50%)||—||—|',
      '|2||Evaluate (greedy)||32||75% (58%–87%)||50% (34%–66%)||+25 pp (+5 to +45)|',
    ]);
    expect(html).toContain('data-metric="evaluate/success_rate" data-points="1"');
    expect(html).toContain('data-metric="eval_success_rate" data-points="1"');
  });

  it('has no such section for a run never evaluated', () => {
    const html = renderRunPage({ run, steps: [{ step: 0, metrics: { reward: 1 } }], rollouts: [], adapter: { files: [], bytes: null } });
    expect(html).not.toContain('Held-out evaluation');
  });
});
