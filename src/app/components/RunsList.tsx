// The runs the store keeps, newest first: what each trained (task, model), how far it got, how well it
// did, and when. Interrupted runs this browser started, and stopped ones with a checkpoint kept, resume
// with one click (the model is loaded again automatically); every run opens to its charts, rollouts and kept files; the runs this browser
// started can be deleted here (after a confirmation); ticked runs open side by side in the compare view.
import { useEffect, useState } from 'react';
import { api, ownedRuns, type RunListEntry } from '../api.ts';
import { formatAgo, formatNumber, formatSuccess } from '../format.ts';
import { liveState, resumeRun } from '../resume.ts';
import { resumable } from '../resumable.ts';
import { runsTrainingInTabs } from '../run-lock.ts';
import { useUi } from '../store.ts';

/** How often the list looks again at which runs other tabs train. */
const LOCK_POLL_MS = 2000;

export function RunsList({ pageSize, title, compact = false }: { pageSize: number; title: string; compact?: boolean }) {
  const [page, setPage] = useState(0);
  const [data, setData] = useState<{ runs: RunListEntry[]; total: number; trainingInTabs: Set<string> } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  /** Bumped after a delete: the page is listed again. */
  const [version, setVersion] = useState(0);
  /** Runs ticked for the compare view. */
  const [picked, setPicked] = useState<string[]>([]);
  const modelLoading = useUi((s) => s.modelLoading);
  const liveRunId = useUi((s) => s.liveRunId);
  /** The run this tab is training now (a finished live run may be deleted). */
  const training = useUi((s) => (s.status === 'running' || s.status === 'paused' || s.status === 'loading' || s.status === 'waiting' ? s.liveRunId : null));

  useEffect(() => {
    let stop = false;
    Promise.all([api.listRuns(pageSize, page * pageSize), runsTrainingInTabs()]).then(
      ([d, trainingInTabs]) => !stop && setData({ ...d, trainingInTabs }),
      (e) => !stop && setError(`Cannot list runs: ${(e as Error).message}`),
    );
    return () => {
      stop = true;
    };
  }, [page, pageSize, liveRunId, version]);

  // Another tab's run lock goes when that tab closes, or a moment after a reload (the old page is torn
  // down after this one asked): the marks follow the locks, so such a run turns resumable by itself.
  useEffect(() => {
    const timer = setInterval(() => {
      void runsTrainingInTabs().then((now) =>
        setData((d) => (d && (d.trainingInTabs.size !== now.size || [...now].some((id) => !d.trainingInTabs.has(id))) ? { ...d, trainingInTabs: now } : d)),
      );
    }, LOCK_POLL_MS);
    return () => clearInterval(timer);
  }, []);

  if (error) return <section className="panel runs"><h3>{title}</h3><p className="error" role="alert">{error}</p></section>;
  if (!data || (compact && data.total === 0)) return null;
  const active = ownedRuns.active();

  async function resume(id: string) {
    setBusy(id);
    setError(null);
    try {
      const token = ownedRuns.get(id);
      if (!token) throw new Error('Only the browser that started a run can resume it');
      await resumeRun((await api.getRun(id, Number.MAX_SAFE_INTEGER)).run, token);
    } catch (err) {
      setError(`Could not resume: ${(err as Error).message}`);
    } finally {
      setBusy(null);
    }
  }

  async function remove(r: RunListEntry, token: string) {
    if (!confirm(`Delete the run "${r.name}"? Its steps, rollouts and kept files are removed for good.`)) return;
    setBusy(r.id);
    setError(null);
    try {
      await api.deleteRun(r.id, token);
      ownedRuns.forget(r.id);
      setVersion((v) => v + 1);
    } catch (err) {
      setError(`Could not delete: ${(err as Error).message}`);
    } finally {
      setBusy(null);
    }
  }

  const pages = Math.max(1, Math.ceil(data.total / pageSize));
  return (
    <section className="panel runs" data-testid="runs-list">
      <h3>
        {title} <span className="muted">({data.total})</span>
        {compact && data.total > pageSize && <a className="more" href="#/runs">all runs →</a>}
        {data.total > 1 && (
          <button className="small" disabled={picked.length < 2} onClick={() => (location.hash = `#/compare/${picked.join(',')}`)} data-testid="compare-runs" title="tick two or more runs to overlay their curves">
            compare {picked.length >= 2 ? `${picked.length} runs` : 'ticked runs'}
          </button>
        )}
      </h3>
      {data.total === 0 ? (
        <p className="muted">No runs yet: set one up below and press Start.</p>
      ) : (
        <table className="runs-table">
          <thead>
            <tr><th><span className="sr-only">compare</span></th><th>run</th><th>status</th><th>task</th><th>model</th><th className="num">steps</th><th className="num" title="mean reward of the last GRPO steps (up to 5)">recent reward</th><th className="num" title="the latest held-out evaluation: success with its 95% interval">held-out success</th><th>started</th><th>last update</th><th /></tr>
          </thead>
          <tbody>
            {data.runs.map((r) => {
              const state = liveState(r, active, data.trainingInTabs);
              const interrupted = state === 'interrupted';
              const status = interrupted ? 'interrupted' : state === 'other-tab' ? 'running in another tab' : r.status;
              const token = ownedRuns.get(r.id);
              const canResume = resumable(state, r.status, r.artifacts) !== null && token !== null;
              return (
                <tr key={r.id} data-testid="run-row" data-run-id={r.id}>
                  <td>
                    <input type="checkbox" aria-label={`compare ${r.name}`} data-testid="compare-pick" checked={picked.includes(r.id)}
                      onChange={(e) => setPicked((p) => (e.target.checked ? [...p, r.id] : p.filter((x) => x !== r.id)))} />
                  </td>
                  <td>
                    <a href={`#/runs/${r.id}`}>{r.name}</a> <span className="muted run-id" title={r.id}>{r.id.slice(0, 6)}</span>
                    {r.parent && <span className="tag" title={`forked from run ${r.parent}`}>fork</span>}
                  </td>
                  <td><span className={`status ${interrupted ? 'interrupted' : r.status}`} data-testid="run-row-status">{status}</span></td>
                  <td>{r.task}</td>
                  <td>{r.model}{r.trainMode === 'full' ? <span className="muted"> (full)</span> : null}</td>
                  <td className="num">{r.steps}{r.totalSteps !== null ? ` / ${r.totalSteps}` : ''}</td>
                  <td className="num" data-testid="run-row-recent-reward" title={r.recentSteps ? `mean of the last ${r.recentSteps} GRPO steps` : undefined}>{formatNumber(r.recentReward)}</td>
                  <td className="num" data-testid="run-row-held-out" title={r.heldOut ? `step ${r.heldOut.step + 1}${r.heldOut.episodes ? `, ${r.heldOut.episodes} episodes` : ''}` : 'not evaluated on held-out episodes yet'}>{r.heldOut ? formatSuccess(r.heldOut.successRate, r.heldOut.ci95) : '—'}</td>
                  <td title={r.createdAt}>{formatAgo(r.createdAt)}</td>
                  <td title={r.updatedAt}>{formatAgo(r.updatedAt)}</td>
                  <td>
                    {canResume && (
                      <button className="primary small" disabled={busy !== null || modelLoading || training !== null} onClick={() => resume(r.id)} data-testid="resume-run" title="go on from the run's last checkpoint">
                        {busy === r.id ? 'loading model…' : 'resume'}
                      </button>
                    )}
                    {token && r.id !== training && (
                      <button className="small danger" disabled={busy !== null} onClick={() => remove(r, token)} data-testid="delete-run-row" title="delete this run, its steps, rollouts and files">delete</button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {!compact && pages > 1 && (
        <div className="pager">
          <button disabled={page === 0} onClick={() => setPage(page - 1)}>← newer</button>
          <span className="muted">page {page + 1} of {pages}</span>
          <button disabled={page + 1 >= pages} onClick={() => setPage(page + 1)}>older →</button>
        </div>
      )}
    </section>
  );
}
