// Runs side by side: their steps merged onto one step axis (each run's metrics under its own key, so
// one chart draws one line per run), and the config keys whose values differ between them.
import type { StepRecord } from './api.ts';

/** The key of run `i`'s metric `name` in merged steps. */
export const runMetric = (i: number, name: string) => `run${i}:${name}`;

/** Every step any run has, in order; run i's metrics under runMetric(i, …); a run without the step has a gap. */
export function mergeRunSteps(runs: readonly StepRecord[][]): StepRecord[] {
  const by = new Map<number, Record<string, number | null>>();
  runs.forEach((steps, i) => {
    for (const s of steps) {
      const merged = by.get(s.step) ?? {};
      for (const [k, v] of Object.entries(s.metrics)) merged[runMetric(i, k)] = v;
      by.set(s.step, merged);
    }
  });
  return [...by.entries()].sort((a, b) => a[0] - b[0]).map(([step, metrics]) => ({ step, metrics }));
}

/** The config keys whose values are not the same in every run (absent counts as a value), sorted, with each run's value. */
export function configDifferences(configs: readonly Record<string, unknown>[]): { key: string; values: (string | null)[] }[] {
  const keys = new Set(configs.flatMap((c) => Object.keys(c)));
  const shown = (v: unknown) => (v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v));
  return [...keys]
    .sort()
    .map((key) => ({ key, values: configs.map((c) => shown(c[key])) }))
    .filter((d) => d.values.some((v) => v !== d.values[0]));
}

/** The compare route's ids (`#/compare/<id>,<id>…`), or null when the hash is not one. */
export function compareIds(hash: string): string[] | null {
  const m = /^#\/compare\/([A-Za-z0-9_,-]+)$/.exec(hash);
  if (!m) return null;
  const ids = [...new Set(m[1]!.split(',').filter(Boolean))];
  return ids.length >= 2 ? ids : null;
}
