// Two or more runs compared (picked in the runs list): their curves overlaid on one step axis —
// success, reward, loss, KL, entropy, completion lengths — one colour per run, each run's latest value
// beside each title in its colour, and the config keys they differ in.
import { useEffect, useState } from 'react';
import { api, type RunSummary, type StepRecord } from '../api.ts';
import { configDifferences, mergeRunSteps, runMetric } from '../compare.ts';
import { Chart, color } from './Chart.tsx';

/** The metrics compared, with TRL's names. */
const METRICS: { title: string; metric: string; percent?: boolean }[] = [
  { title: 'success rate', metric: 'success_rate', percent: true },
  { title: 'reward', metric: 'reward' },
  { title: 'loss', metric: 'loss' },
  { title: 'kl', metric: 'kl' },
  { title: 'entropy', metric: 'entropy' },
  { title: 'completion length', metric: 'completions/mean_length' },
];

export function CompareView({ ids }: { ids: string[] }) {
  const [runs, setRuns] = useState<{ run: RunSummary; steps: StepRecord[] }[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let stop = false;
    Promise.all(ids.map((id) => api.getRun(id))).then(
      (r) => !stop && setRuns(r),
      (err) => !stop && setError(`Cannot compare: ${(err as Error).message}`),
    );
    return () => {
      stop = true;
    };
  }, [ids.join(',')]);

  if (error) return <p className="error" role="alert">{error}</p>;
  if (!runs) return <p className="muted">loading the runs…</p>;
  const merged = mergeRunSteps(runs.map((r) => r.steps));
  const total = Math.max(...runs.map((r) => (r.steps.length ? r.steps[r.steps.length - 1]!.step + 1 : 0)), 1);
  const label = (i: number) => `${runs[i]!.run.name} (${runs[i]!.run.id.slice(0, 6)})`;
  const diffs = configDifferences(runs.map((r) => r.run.config));
  return (
    <div className="run compare" data-testid="compare-view">
      <h2>Comparing {runs.length} runs</h2>
      <ul className="compare-runs">
        {runs.map((r, i) => (
          <li key={r.run.id}><span className="swatch" style={{ background: color(i) }} /> <a href={`#/runs/${r.run.id}`}>{label(i)}</a> <span className="muted">· {String(r.run.env.task ?? r.run.env.name ?? '')} · {r.steps.length} steps · {r.run.status}</span></li>
        ))}
      </ul>
      <div className="charts">
        {METRICS.filter(({ metric }) => merged.some((s) => runs.some((_, i) => typeof s.metrics[runMetric(i, metric)] === 'number'))).map(({ title, metric, percent }) => (
          <Chart
            key={metric}
            title={title}
            steps={merged}
            axis={{ total, sftSteps: 0 }}
            format={percent ? (v) => `${Math.round(v * 100)}%` : undefined}
            yRange={percent ? [0, 1] : undefined}
            latest="each"
            series={runs.map((_, i) => ({ label: label(i), value: (m) => m[runMetric(i, metric)], color: color(i) }))}
          />
        ))}
      </div>
      <section className="panel" data-testid="config-diff">
        <h3>Config differences</h3>
        {diffs.length === 0 ? (
          <p className="muted">None: the runs share one config.</p>
        ) : (
          <table className="runs-table">
            <thead><tr><th>key</th>{runs.map((_, i) => <th key={i}>{label(i)}</th>)}</tr></thead>
            <tbody>
              {diffs.map((d) => (
                <tr key={d.key} data-testid="config-diff-row"><td><code>{d.key}</code></td>{d.values.map((v, i) => <td key={i}>{v ?? <span className="muted">—</span>}</td>)}</tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
