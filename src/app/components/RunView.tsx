// One run: live (this tab trains it) or read-only (a share link). Charts, progress, rollouts,
// controls, share/export/fork, adapter download and a greedy evaluation against the base model.
import { useEffect, useState } from 'react';
import { api, ApiError, ownedRuns, type RunSummary, type StepRecord } from '../api.ts';
import { formatDuration, formatNumber } from '../format.ts';
import { startLiveRun } from '../live-run.ts';
import { useUi } from '../store.ts';
import { trainer } from '../trainer-client.ts';
import type { EvalRow, RolloutView } from '../worker-api.ts';
import { Charts } from './Charts.tsx';
import { ProgressBar } from './ProgressBar.tsx';
import { RolloutViewer } from './RolloutViewer.tsx';
import { NotFound } from './NotFound.tsx';

function groupRollouts(rows: { step: number; data: Record<string, unknown> }[]): { step: number; rollouts: RolloutView[] }[] {
  const by = new Map<number, RolloutView[]>();
  for (const r of rows) by.set(r.step, [...(by.get(r.step) ?? []), r.data as unknown as RolloutView]);
  return [...by.entries()].map(([step, rollouts]) => ({ step, rollouts }));
}

function mergeSteps(stored: StepRecord[], local: StepRecord[]): StepRecord[] {
  const by = new Map(stored.map((s) => [s.step, s]));
  for (const s of local) by.set(s.step, s);
  return [...by.values()].sort((a, b) => a.step - b.step);
}

function download(name: string, bytes: Uint8Array | string, type = 'application/octet-stream') {
  const url = URL.createObjectURL(new Blob([bytes as BlobPart], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function RunView({ id }: { id: string }) {
  const ui = useUi();
  const live = ui.liveRunId === id;
  const [run, setRun] = useState<RunSummary | null>(null);
  const [notFound, setNotFound] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [steps, setSteps] = useState<StepRecord[]>([]);
  const [rollouts, setRollouts] = useState<{ step: number; rollouts: RolloutView[] }[]>([]);
  const [evalRows, setEvalRows] = useState<EvalRow[] | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);

  // Read-only (or after a reload): poll the run store while the run is going.
  useEffect(() => {
    let stop = false;
    let last = -1;
    let timer: ReturnType<typeof setTimeout>;
    const poll = async () => {
      try {
        const r = await api.getRun(id, last);
        if (stop) return;
        setRun(r.run);
        if (r.steps.length) {
          last = r.steps[r.steps.length - 1].step;
          setSteps((s) => [...s, ...r.steps]);
          const ro = await api.rollouts(id, 5);
          if (!stop) setRollouts(groupRollouts(ro.rollouts));
        }
        if (r.run.status === 'running' || r.run.status === 'created' || live) timer = setTimeout(poll, 2000);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) setNotFound(true);
        else {
          setError((err as Error).message);
          timer = setTimeout(poll, 5000);
        }
      }
    };
    void poll();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [id, live]);

  if (notFound) return <NotFound what={`run ${id}`} />;

  // A resumed run shows the steps stored before the reload too; this tab's own steps win.
  const shownSteps = live ? mergeSteps(steps, ui.steps) : steps;
  const shownRollouts = live ? ui.rollouts : rollouts;
  const owned = ownedRuns.get(id);
  const interrupted = !live && owned && ownedRuns.active() === id && run && (run.status === 'running' || run.status === 'paused');
  const done = shownSteps.length ? shownSteps[shownSteps.length - 1].step + 1 : 0;
  const total = live ? ui.totalSteps : Number(run?.config.max_steps ?? 0) + Number(run?.config.sft_steps ?? 0);
  const t = ui.stepStartedAt;
  const perStep = t.length > 1 ? (t[t.length - 1] - t[0]) / 1000 / (t.length - 1) : NaN;
  const status = live ? ui.status : run?.status ?? '…';
  // The env's path name, and the trainer task it serves (they differ for proxied upstreams).
  const envPath = String(run?.env.name ?? '');
  const envTask = String(run?.env.task ?? envPath);
  const lastMetrics = shownSteps.length ? shownSteps[shownSteps.length - 1].metrics : {};

  async function act(label: string, fn: () => Promise<void>) {
    setBusy(label);
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(null);
    }
  }

  return (
    <div className="run">
      <header className="run-head">
        <h2>{run?.name ?? 'run'} <span className={`status ${status}`} data-testid="run-status">{status}</span></h2>
        <div className="run-actions">
          <button onClick={() => { void navigator.clipboard?.writeText(`${location.origin}/#/runs/${id}`); setCopied(true); }} data-testid="share">
            {copied ? 'link copied' : 'copy share link'}
          </button>
          <a className="button" href={api.exportUrl(id)} download>export JSON</a>
          {run && <button onClick={() => { sessionStorage.setItem('webgrpo.fork', JSON.stringify(run.config)); location.hash = '#/'; }}>fork</button>}
        </div>
      </header>
      {!live && !owned && <p className="muted">Read-only view of a shared run.</p>}
      {ui.statusMessage && live && <p className={status === 'failed' ? 'error' : 'muted'} role="status">{ui.statusMessage}</p>}
      {run?.error && !live && <p className="error">{run.error}</p>}
      {error && <p className="error" role="alert">{error}</p>}
      {interrupted && (
        <div className="banner">
          This run was interrupted (tab closed or crashed).
          <button disabled={!ui.model} onClick={() => act('resume', () => startLiveRun({ runId: id, token: owned!, config: run!.config, envUrl: `${location.origin}/envs/${envPath}`, envName: envTask, sftSteps: 0, resume: true }))}>
            resume from the last checkpoint
          </button>
          {!ui.model && <span className="muted"> (load the same model on the setup page first)</span>}
        </div>
      )}
      {live && (
        <div className="controls">
          <ProgressBar fraction={total ? done / total : 0} label={`step ${done} / ${total || '?'} · ${formatDuration(perStep * (total - done))} left`} />
          <button disabled={status !== 'running'} onClick={() => trainer().pause()}>pause</button>
          <button disabled={status !== 'paused'} onClick={() => trainer().resume()}>resume</button>
          <button disabled={status !== 'running' && status !== 'paused'} onClick={() => trainer().stop()}>stop</button>
        </div>
      )}
      <div className="summary">
        {['reward', 'reward_std', 'loss', 'kl', 'entropy', 'tools/call_frequency'].map((k) => (
          <span key={k}><code>{k}</code> {formatNumber(lastMetrics[k])}</span>
        ))}
      </div>
      <Charts steps={shownSteps} />
      <h3>Rollouts</h3>
      <RolloutViewer steps={shownRollouts} />
      {live && (status === 'finished' || status === 'stopped' || status === 'paused') && (
        <section className="panel">
          <h3>Trained model</h3>
          <button disabled={!!busy} data-testid="download-adapter" onClick={() => act('adapter', async () => {
            for (const f of await trainer().exportAdapter()) download(f.name, f.bytes, f.name.endsWith('.json') ? 'application/json' : 'application/octet-stream');
          })}>download LoRA adapter (PEFT)</button>
          <button disabled={!!busy} onClick={() => act('eval', async () => {
            setEvalRows(await trainer().evaluate({ envUrl: `${location.origin}/envs/${envPath}`, envName: envTask, episodes: 8, config: run?.config ?? {} }));
          })}>{busy === 'eval' ? 'evaluating…' : 'evaluate (greedy) vs base'}</button>
          {evalRows && (
            <table className="eval" data-testid="eval-table">
              <thead><tr><th>policy</th><th>episodes</th><th>mean reward</th><th>success</th><th>tool calls</th></tr></thead>
              <tbody>
                {evalRows.map((r) => <tr key={r.policy}><td>{r.policy}</td><td>{r.episodes}</td><td>{formatNumber(r.meanReward)}</td><td>{formatNumber(r.successRate * 100, 0)}%</td><td>{formatNumber(r.meanToolCalls, 2)}</td></tr>)}
              </tbody>
            </table>
          )}
        </section>
      )}
    </div>
  );
}
