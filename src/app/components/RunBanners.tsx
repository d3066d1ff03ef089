// What the run page has to say about the run's state, above its charts: the trainer's and the store's
// messages, an env-server outage and writes waiting for the store (this tab's run), the last step's
// warnings, and where the run trains or can be resumed from.
import type { RunSummary } from '../api.ts';
import { resumeRun, trainingHere, type LiveState } from '../resume.ts';
import { useUi } from '../store.ts';
import type { RunAct } from '../use-run-data.ts';

/** "retrying in 12 s" (to a Date.now() time), or "retrying now". */
function retryText(retryAt: number | null): string {
  const s = retryAt === null ? 0 : Math.ceil((retryAt - Date.now()) / 1000);
  return s >= 1 ? `retrying in ${s} s` : 'retrying now';
}

export interface RunBannersProps {
  run: RunSummary | null;
  live: boolean;
  status: string;
  /** liveState() of a run this tab does not train (null for this tab's own). */
  state: LiveState;
  error: string | null;
  /** The last GRPO step's warnings, and that step's 0-based row. */
  warnings: string[];
  warnedStep: number | null;
  /** Steps done and planned (0: unknown). */
  done: number;
  total: number;
  /** A stopped run whose checkpoint is kept. */
  stoppedResumable: boolean;
  owned: string | null;
  busy: string | null;
  act: RunAct;
}

export function RunBanners(p: RunBannersProps) {
  const ui = useUi();
  const { run, live, owned, busy, act } = p;
  const of = `${p.done}${p.total ? ` of ${p.total}` : ''}`;
  const resumeLabel = busy === 'resume' ? (ui.modelLoading ? 'loading the model…' : 'resuming…') : 'resume from the last checkpoint';
  return (
    <>
      {ui.statusMessage && live && <p className={p.status === 'failed' ? 'error' : 'muted'} role="status">{ui.statusMessage}</p>}
      {run?.error && !live && <p className="error">{run.error}</p>}
      {p.error && <p className="error" role="alert">{p.error}</p>}
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
      {p.warnings.length > 0 && (
        <div className="banner" role="status" data-testid="step-warnings">
          {p.warnings.map((w) => <div key={w}><b>step {p.warnedStep! + 1}:</b> {w}</div>)}
        </div>
      )}
      {p.state === 'other-tab' && <p className="banner" data-testid="other-tab-banner">This run is training in another tab of this browser: its controls are there.</p>}
      {p.state === 'interrupted' && (
        <div className="banner" data-testid="interrupted-banner">
          This run was interrupted (its tab was closed, reloaded or crashed) at step {of}.
          {owned ? (
            <button className="primary" disabled={!!busy || ui.modelLoading || trainingHere(ui)} onClick={() => act('resume', () => resumeRun(run!, owned))}>
              {resumeLabel}
            </button>
          ) : (
            <span className="muted"> Only the browser that started it can resume it; fork it to train again.</span>
          )}
        </div>
      )}
      {p.stoppedResumable && owned && (
        <div className="banner" data-testid="stopped-banner">
          This run was stopped at step {of}; its checkpoint is kept.
          <button className="primary" disabled={!!busy || ui.modelLoading || trainingHere(ui)} onClick={() => act('resume', () => resumeRun(run!, owned))} data-testid="resume-stopped">
            {resumeLabel}
          </button>
        </div>
      )}
    </>
  );
}
