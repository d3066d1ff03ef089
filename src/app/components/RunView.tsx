// One run: live (this tab trains it) or read-only (a share link). Charts, progress, rollouts,
// controls, share/export/fork, the files kept with the run (adapter, full model, checkpoint) for any
// viewer, one-click resume of an interrupted or stopped run, and (LoRA only) a greedy evaluation against the base.
import { useEffect, useState } from 'react';
import { api, ApiError, ownedRuns, type ArtifactInfo, type RunSummary, type StepRecord } from '../api.ts';
import { stepWarnings } from '../../rl/grpo/metrics.ts';
import { formatBytes, formatDuration, formatNumber } from '../format.ts';
import { keepRunFiles } from '../live-run.ts';
import { secondsLeft } from '../time-left.ts';
import { stepProgressText } from '../step-progress.ts';
import { liveState, resumeRun, runPrompts, trainingHere } from '../resume.ts';
import { resumable } from '../resumable.ts';
import { runsTrainingInTabs } from '../run-lock.ts';
import { useUi } from '../store.ts';
import { trainer } from '../trainer-client.ts';
import type { EvalRow } from '../../../workers/api.ts';
import { zipSync } from 'fflate';
import { ConfigView } from './ConfigView.tsx';
import { ErrorBoundary } from './ErrorBoundary.tsx';
import { Charts } from './Charts.tsx';
import { ProgressBar } from './ProgressBar.tsx';
import { RolloutViewer } from './RolloutViewer.tsx';
import { NotFound } from './NotFound.tsx';
import { EnvClassCode } from './EnvClassCode.tsx';

/** Stored rollouts by step, their data unchecked (the viewer checks each one's shape). */
function groupRollouts(rows: { step: number; data: unknown }[]): { step: number; rollouts: unknown[] }[] {
  const by = new Map<number, unknown[]>();
  for (const r of rows) by.set(r.step, [...(by.get(r.step) ?? []), r.data]);
  return [...by.entries()].map(([step, rollouts]) => ({ step, rollouts }));
}

/** Exported files as one zip (stored, not deflated: safetensors barely compress), downloaded at once. */
function downloadZip(name: string, files: { name: string; bytes: Uint8Array }[]) {
  download(name, zipSync(Object.fromEntries(files.map((f) => [f.name, f.bytes])), { level: 0 }), 'application/zip');
}

/** A file-name-safe form of a run's name. */
const slug = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '') || 'run';

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

/** "retrying in 12 s" (to a Date.now() time), or "retrying now". */
function retryText(retryAt: number | null): string {
  const s = retryAt === null ? 0 : Math.ceil((retryAt - Date.now()) / 1000);
  return s >= 1 ? `retrying in ${s} s` : 'retrying now';
}

export function RunView({ id }: { id: string }) {
  const ui = useUi();
  const live = ui.liveRunId === id;
  const [run, setRun] = useState<RunSummary | null>(null);
  /** Why the run cannot be shown: null while it can; '' for no such run; the store's words for a link without its share token. */
  const [notFound, setNotFound] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [steps, setSteps] = useState<StepRecord[]>([]);
  const [rollouts, setRollouts] = useState<{ step: number; rollouts: unknown[] }[]>([]);
  /** Every step the store kept rollouts for (the viewer pages through them). */
  const [rolloutSteps, setRolloutSteps] = useState<number[]>([]);
  const [renaming, setRenaming] = useState<string | null>(null);
  /** Ticks every second while this tab trains, so time-left counts down between steps. */
  const [now, setNow] = useState(() => performance.now());
  /** When this tab took the run on (a resume starts with the stored steps, none of them timed here). */
  const [liveSince, setLiveSince] = useState(() => performance.now());
  const [evalRows, setEvalRows] = useState<EvalRow[] | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const [files, setFiles] = useState<ArtifactInfo[]>([]);
  /** Runs other tabs of this browser train (their locks), read with each poll of the store. */
  const [trainingInTabs, setTrainingInTabs] = useState<Set<string>>(new Set());
  /** Pause/stop pressed and not yet answered by the worker (pause waits for the step's end, stop for a decode step). */
  const [requested, setRequested] = useState<'pause' | 'stop' | null>(null);
  const filesVersion = useUi((s) => s.filesVersion);

  // The files kept with the run: listed for every viewer, again whenever this tab kept new ones.
  useEffect(() => {
    let stop = false;
    api.artifacts(id).then((r) => !stop && setFiles(r.artifacts), () => undefined);
    return () => {
      stop = true;
    };
  }, [id, filesVersion, run?.status]);

  // The worker answered the request (or the run ended): the "pausing…" note has done its job.
  useEffect(() => setRequested(null), [ui.status]);

  // Read-only (or after a reload): poll the run store while the run is going.
  useEffect(() => {
    let stop = false;
    let last = -1;
    let timer: ReturnType<typeof setTimeout>;
    const poll = async () => {
      try {
        const [r, tabs] = await Promise.all([api.getRun(id, last), runsTrainingInTabs()]);
        if (stop) return;
        setTrainingInTabs(tabs);
        setRun(r.run);
        setError(null);
        if (r.steps.length) {
          last = r.steps[r.steps.length - 1].step;
          setSteps((s) => [...s, ...r.steps]);
          const ro = await api.rollouts(id, 1);
          if (!stop) {
            setRollouts(groupRollouts(ro.rollouts));
            setRolloutSteps(ro.steps);
          }
        }
        // A paused run too: its owner (another tab, another browser) may resume it any moment.
        if (r.run.status === 'running' || r.run.status === 'created' || r.run.status === 'paused' || live) timer = setTimeout(poll, 2000);
      } catch (err) {
        // Retrying cannot help a run that is not there or a link without its share token.
        if (err instanceof ApiError && (err.status === 404 || err.status === 403)) setNotFound(err.status === 403 ? err.message : '');
        else {
          // The live run says itself when its server is away (the outage banner); a viewer sees why here.
          if (!live) setError((err as Error).message);
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

  useEffect(() => {
    if (live) setLiveSince(performance.now());
  }, [live]);
  // Also while an outage counts down to its next try.
  const ticking = live && (ui.status === 'running' || ui.outage !== null || ui.unsaved.retryAt !== null);
  useEffect(() => {
    if (!ticking) return;
    const timer = setInterval(() => setNow(performance.now()), 1000);
    return () => clearInterval(timer);
  }, [ticking]);

  if (notFound !== null) return <NotFound what={`run ${id}`} reason={notFound || undefined} />;

  // A resumed run shows the steps stored before the reload too; this tab's own steps win.
  const shownSteps = live ? mergeSteps(steps, ui.steps) : steps;
  const shownRollouts = live ? ui.rollouts : rollouts;
  const owned = ownedRuns.get(id);
  const state = live || run === null ? null : liveState(run, ownedRuns.active(), trainingInTabs);
  const interrupted = state === 'interrupted';
  const done = shownSteps.length ? shownSteps[shownSteps.length - 1].step + 1 : 0;
  const sftPlanned = Number(run?.config.sft_steps ?? 0);
  const planned = Number(run?.config.max_steps ?? 0) + sftPlanned;
  const total = live && ui.totalSteps ? ui.totalSteps : planned > 0 ? planned : 0;
  const left = secondsLeft({ arrivals: ui.stepStartedAt, stepTimes: shownSteps.slice(-5).map((s) => s.metrics.step_time), total, done, since: liveSince, now });
  const status = interrupted ? 'interrupted' : live ? ui.status : run?.status ?? '…';
  // A stopped run (here or in a view of the store) goes on from the checkpoint kept with it.
  const stoppedResumable = run !== null && resumable(state, status, files) === 'stopped';
  // The env's path name, and the trainer task it serves (they differ for proxied upstreams).
  const envPath = String(run?.env.name ?? '');
  const envTask = String(run?.env.task ?? envPath);
  const lastMetrics = shownSteps.length ? shownSteps[shownSteps.length - 1].metrics : {};
  const lastGrpo = shownSteps.filter((s) => !s.metrics.phase_sft).at(-1);
  const warnings = lastGrpo ? stepWarnings(lastGrpo.metrics) : [];
  const full = run?.config.train_mode === 'full';
  // TRL computes no KL term (and logs none) when beta is 0.
  const klOff = run !== null && Number(run.config.beta ?? 0) === 0;
  const sftDone = shownSteps.filter((s) => s.metrics.phase_sft).length;
  const axis = { total, sftSteps: Math.max(sftDone, Number.isFinite(sftPlanned) ? sftPlanned : 0) };

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

  const training = live && (status === 'running' || status === 'paused');
  /** This tab is starting or training the run: it cannot be deleted under the trainer. */
  const deleteBlocked = live && !['finished', 'stopped', 'failed'].includes(status);
  const progressLabel = (() => {
    if (!live) return '';
    if (done === 0 && status === 'loading') return 'starting…';
    if (status === 'waiting') return 'waiting for the GPU…';
    const of = total ? `step ${done} of ${total}` : `step ${done}`;
    const phase = shownSteps.length ? (shownSteps[shownSteps.length - 1].metrics.phase_sft ? ' · SFT warm-up' : ' · GRPO') : '';
    // Stop abandons the step in progress at its next decode step (its work is not kept).
    if (requested === 'stop') return `${of} · stopping…`;
    if (requested === 'pause') return `${of} · pausing after this step…`;
    if (status === 'running' && Number.isFinite(left)) {
      return left >= 1 ? `${of}${phase} · ${formatDuration(left)} left` : `${of}${phase} · step ${done + 1} running, longer than the last ones`;
    }
    // No step timed yet (the first one, or the first after a resume): what the step is doing, and how long its phase has left.
    if (status === 'running') return `step ${done + 1}${total ? ` of ${total}` : ''} ${stepProgressText(ui.stepProgress, now, ui.stepStartedAt.at(-1) ?? liveSince)}`;
    return `${of}${phase} · ${status}`;
  })();

  const byBundle = (b: string) => files.filter((f) => f.bundle === b);
  return (
    <div className="run">
      <header className="run-head">
        {renaming !== null && owned ? (
          <form className="rename" onSubmit={(e) => { e.preventDefault(); void act('rename', async () => { await api.rename(id, owned, renaming); setRun(run && { ...run, name: renaming.trim() }); setRenaming(null); }); }}>
            <input aria-label="run name" value={renaming} onChange={(e) => setRenaming(e.target.value)} maxLength={200} autoFocus />
            <button type="submit" disabled={!!busy || renaming.trim() === ''} data-testid="rename-save">save</button>
            <button type="button" onClick={() => setRenaming(null)}>cancel</button>
          </form>
        ) : (
          <h2><span data-testid="run-name">{run?.name ?? 'run'}</span> <span className={`status ${status}`} data-testid="run-status">{status}</span></h2>
        )}
        <div className="run-actions">
          <button onClick={() => { void navigator.clipboard?.writeText(api.shareLink(id)); setCopied(true); }} data-testid="share">
            {copied ? 'link copied' : 'copy share link'}
          </button>
          <a className="button" href={api.exportUrl(id)} download>export JSON</a>
          <a className="button" href={api.pageUrl(id)} download data-testid="export-page" title="one HTML file with the charts, config, rollouts and trained weights (adapter or model), that opens without a server">export as a page</a>
          {run && (
            <button
              data-testid="fork"
              title="a new run with this run's model, environment and config"
              onClick={() => { sessionStorage.setItem('webgrpo.fork', JSON.stringify({ parent: id, name: run.name, config: run.config, model: run.model, env: run.env })); location.hash = '#/'; }}
            >fork</button>
          )}
          {run && owned && renaming === null && <button onClick={() => setRenaming(run.name)} data-testid="rename">rename</button>}
          {run && owned && (
            <button
              className="danger"
              disabled={!!busy || deleteBlocked}
              title={deleteBlocked ? 'stop the run before deleting it' : 'delete this run, its steps, rollouts and files'}
              data-testid="delete-run"
              onClick={() => {
                if (!confirm(`Delete the run "${run.name}"? Its steps, rollouts and kept files are removed for good.`)) return;
                void act('delete', async () => {
                  await api.deleteRun(id, owned);
                  ownedRuns.forget(id);
                  if (live) ui.resetRun(null);
                  location.hash = '#/';
                });
              }}
            >delete</button>
          )}
        </div>
      </header>
      <p className="muted run-meta">
        {envTask && <>task <b>{envTask}</b> · </>}model <b>{String(run?.model.name ?? '?')}</b>{full ? ' (full fine-tuning)' : ' (LoRA)'}
        {run?.parent && <> · forked from <a href={`#/runs/${run.parent}`} data-testid="parent-link">run {run.parent.slice(0, 8)}</a></>}
        {!live && !owned && <> · <span>Read-only view of a shared run.</span></>}
      </p>
      {ui.statusMessage && live && <p className={status === 'failed' ? 'error' : 'muted'} role="status">{ui.statusMessage}</p>}
      {run?.error && !live && <p className="error">{run.error}</p>}
      {run && <EnvClassCode env={run.env} />}
      {error && <p className="error" role="alert">{error}</p>}
      {live && ui.outage && (
        <div className="banner" role="status" data-testid="outage-banner">
          <b>env-server unreachable — {retryText(ui.outage.retryAt)}</b>. The run is paused with its state kept, and continues by itself once the server answers (or press resume).
          <div className="muted">{ui.outage.message}</div>
        </div>
      )}
      {live && ui.unsaved.queued > 0 && ui.unsaved.retryAt !== null && (
        <p className="muted" data-testid="unsaved-note">
          {ui.unsaved.queued} {ui.unsaved.queued === 1 ? 'write waits' : 'writes wait'} for the run store (kept in this browser) — {retryText(ui.unsaved.retryAt)}.
        </p>
      )}
      {warnings.length > 0 && (
        <div className="banner" role="status" data-testid="step-warnings">
          {warnings.map((w) => <div key={w}><b>step {lastGrpo!.step + 1}:</b> {w}</div>)}
        </div>
      )}
      {state === 'other-tab' && <p className="banner" data-testid="other-tab-banner">This run is training in another tab of this browser: its controls are there.</p>}
      {interrupted && (
        <div className="banner" data-testid="interrupted-banner">
          This run was interrupted (its tab was closed, reloaded or crashed) at step {done}{total ? ` of ${total}` : ''}.
          {owned ? (
            <button className="primary" disabled={!!busy || ui.modelLoading || trainingHere(ui)} onClick={() => act('resume', () => resumeRun(run!, owned))}>
              {busy === 'resume' ? (ui.modelLoading ? 'loading the model…' : 'resuming…') : 'resume from the last checkpoint'}
            </button>
          ) : (
            <span className="muted"> Only the browser that started it can resume it; fork it to train again.</span>
          )}
        </div>
      )}
      {stoppedResumable && owned && (
        <div className="banner" data-testid="stopped-banner">
          This run was stopped at step {done}{total ? ` of ${total}` : ''}; its checkpoint is kept.
          <button className="primary" disabled={!!busy || ui.modelLoading || trainingHere(ui)} onClick={() => act('resume', () => resumeRun(run!, owned))} data-testid="resume-stopped">
            {busy === 'resume' ? (ui.modelLoading ? 'loading the model…' : 'resuming…') : 'resume from the last checkpoint'}
          </button>
        </div>
      )}
      {live && (
        <div className="controls">
          <ProgressBar fraction={total ? done / total : 0} label={progressLabel} />
          <button disabled={status !== 'running' || requested !== null} onClick={() => { setRequested('pause'); void trainer().pause(); }} data-testid="pause">
            {requested === 'pause' ? 'pausing…' : 'pause'}
          </button>
          <button disabled={status !== 'paused'} onClick={() => void trainer().resume()} data-testid="resume">resume</button>
          <button disabled={!training || requested === 'stop'} onClick={() => { setRequested('stop'); void trainer().stop(); }} data-testid="stop">
            {requested === 'stop' ? 'stopping…' : 'stop'}
          </button>
        </div>
      )}
      <div className="summary">
        {['reward', 'success_rate', 'loss', 'kl', 'entropy', 'tools/call_frequency'].filter((k) => k !== 'success_rate' || lastMetrics[k] !== undefined).map((k) => (
          <span key={k} data-testid={`summary-${k}`}><code>{k}</code> {k === 'kl' && klOff ? 'off (beta = 0)' : formatNumber(lastMetrics[k])}</span>
        ))}
      </div>
      <ErrorBoundary what="the charts">
        <Charts steps={shownSteps} axis={axis} task={envTask} klOff={klOff} />
      </ErrorBoundary>
      <h3>Rollouts</h3>
      <ErrorBoundary what="the rollouts">
        <RolloutViewer runId={id} steps={rolloutSteps} local={shownRollouts} />
      </ErrorBoundary>
      {run && <ConfigView run={run} />}
      {live && (status === 'finished' || status === 'stopped' || status === 'paused') && (
        <section className="panel">
          <h3>Trained model</h3>
          {full ? (
            <button disabled={!!busy} data-testid="download-model" onClick={() => act('model', async () => {
              downloadZip(`${slug(run?.name ?? 'run')}-model.zip`, await trainer().exportModel());
            })}>{busy === 'model' ? 'exporting…' : 'download model (one zip: safetensors, Hugging Face layout)'}</button>
          ) : (
            <>
              <button disabled={!!busy} data-testid="download-adapter" onClick={() => act('adapter', async () => {
                downloadZip(`${slug(run?.name ?? 'run')}-adapter.zip`, await trainer().exportAdapter());
              })}>download LoRA adapter (one zip, PEFT)</button>
              <button disabled={!!busy} onClick={() => act('eval', async () => {
                setEvalRows(await trainer().evaluate({ envUrl: `${location.origin}/envs/${envPath}`, envName: envTask, prompts: run ? runPrompts(run.env) : undefined, episodes: 8, config: run?.config ?? {} }));
              })}>{busy === 'eval' ? 'evaluating…' : 'evaluate (greedy) vs base'}</button>
            </>
          )}
          <button disabled={!!busy} data-testid="download-onnx" onClick={() => act('onnx', async () => {
            downloadZip(`${slug(run?.name ?? 'run')}-transformers-js.zip`, await trainer().exportOnnx());
          })}>{busy === 'onnx' ? 'exporting…' : 'download for transformers.js (one zip, ONNX)'}</button>
          {owned && <button disabled={!!busy} onClick={() => act('keep', () => keepRunFiles(id, owned, run?.config ?? {}))}>{busy === 'keep' ? 'saving…' : 'save files with the run again'}</button>}
          {full && <p className="muted">Full fine-tuning changed every weight, so there is no separate adapter, and no untouched base in this tab to compare against: evaluate the downloaded model against its base elsewhere.</p>}
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
      <section className="panel files" data-testid="saved-files">
        <h3>Files kept with this run</h3>
        {files.length === 0 ? (
          <p className="muted">{live && training ? 'The trained weights and the checkpoint are kept here when the run pauses or ends.' : 'None: this run kept no weights (it ended before saving, or they were over the size limit).'}</p>
        ) : (
          <ul>
            {(['adapter', 'model', 'checkpoint'] as const).filter((b) => byBundle(b).length).map((b) => (
              <li key={b}>
                <b>{b === 'adapter' ? 'LoRA adapter (PEFT)' : b === 'model' ? 'fully fine-tuned model (Hugging Face layout)' : 'trainer checkpoint (to resume)'}</b>:{' '}
                {byBundle(b).map((f) => (
                  <a key={f.name} className="file" href={api.artifactUrl(id, f.bundle, f.name)} download={f.name} data-testid={`file-${f.bundle}-${f.name}`}>{f.name} <span className="muted">({formatBytes(f.bytes)})</span></a>
                ))}
                {/* A model folder is only useful whole: one zip of it, as the training tab and the exported page offer it. */}
                {b === 'model' && (
                  <button className="small" disabled={!!busy} data-testid="download-kept-model" onClick={() => act('kept-model', async () => {
                    downloadZip(`${slug(run?.name ?? 'run')}-model.zip`, await Promise.all(byBundle('model').map(async (f) => ({ name: f.name, bytes: await api.artifactBytes(id, 'model', f.name) }))));
                  })}>{busy === 'kept-model' ? 'fetching…' : 'download the model (one zip)'}</button>
                )}
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  );
}
