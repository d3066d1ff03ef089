// One run: live (this tab trains it) or read-only (a share link). The page is put together here from
// parts with one job each: the data (use-run-data.ts), the head (RunHeader), the state's banners
// (RunBanners), this tab's controls (RunControls), the charts, the rollouts, the config, the trained
// model's downloads and evaluation (TrainedModelPanel) and the files kept with the run (RunFiles).
import { useState } from 'react';
import { ownedRuns, type RunSummary, type StepRecord } from '../api.ts';
import { DEFAULT_CONFIG, type GRPOConfig } from '../../rl/config.ts';
import { stepWarnings } from '../../rl/grpo/metrics.ts';
import { formatNumber } from '../format.ts';
import { liveState } from '../resume.ts';
import { resumable } from '../resumable.ts';
import { useUi } from '../store.ts';
import { useRunAction, useRunData, useSecondTicks } from '../use-run-data.ts';
import { ConfigView } from './ConfigView.tsx';
import { ErrorBoundary } from './ErrorBoundary.tsx';
import { Charts } from './Charts.tsx';
import { RolloutViewer } from './RolloutViewer.tsx';
import { NotFound } from './NotFound.tsx';
import { RunBanners } from './RunBanners.tsx';
import { RunControls } from './RunControls.tsx';
import { RunFiles } from './RunFiles.tsx';
import { RunHeader } from './RunHeader.tsx';
import { TrainedModelPanel } from './TrainedModelPanel.tsx';
import { EnvClassCode } from './EnvClassCode.tsx';

function mergeSteps(stored: StepRecord[], local: StepRecord[]): StepRecord[] {
  const by = new Map(stored.map((s) => [s.step, s]));
  for (const s of local) by.set(s.step, s);
  return [...by.values()].sort((a, b) => a.step - b.step);
}

/** Steps with metrics added since they were read (an Evaluate's, at its step). */
function withMetrics(steps: StepRecord[], added: Map<number, Record<string, number | null>>): StepRecord[] {
  return added.size === 0 ? steps : steps.map((s) => (added.has(s.step) ? { ...s, metrics: { ...s.metrics, ...added.get(s.step) } } : s));
}

/** A stored run's setting: its config's, or the key's one default (a run stored by an older webgrpo may lack the key). */
function setting(run: RunSummary | null, key: keyof GRPOConfig): unknown {
  return run?.config[key] ?? DEFAULT_CONFIG[key];
}

export function RunView({ id }: { id: string }) {
  const ui = useUi();
  const live = ui.liveRunId === id;
  const { run, setRun, notFound, error, setError, steps, rollouts, rolloutSteps, trainingInTabs, files } = useRunData(id, live);
  const { busy, act } = useRunAction(setError);
  // An Evaluate of this tab, drawn at once (the store keeps it too, for reloads and share links).
  const [evaluated, setEvaluated] = useState<Map<number, Record<string, number | null>>>(new Map());
  // Also while an outage counts down to its next try.
  const now = useSecondTicks(live && (ui.status === 'running' || ui.outage !== null || ui.unsaved.retryAt !== null));

  if (notFound !== null) return <NotFound what={`run ${id}`} reason={notFound || undefined} />;

  // A resumed run shows the steps stored before the reload too; this tab's own steps win.
  const shownSteps = withMetrics(live ? mergeSteps(steps, ui.steps) : steps, evaluated);
  const shownRollouts = live ? ui.rollouts : rollouts;
  const owned = ownedRuns.get(id);
  const state = live || run === null ? null : liveState(run, ownedRuns.active(), trainingInTabs);
  const done = shownSteps.length ? shownSteps[shownSteps.length - 1].step + 1 : 0;
  const sftPlanned = Number(setting(run, 'sft_steps'));
  // max_steps -1: the length follows num_train_epochs, unknown here.
  const planned = Math.max(0, Number(setting(run, 'max_steps'))) + sftPlanned;
  const total = live && ui.totalSteps ? ui.totalSteps : planned > 0 ? planned : 0;
  const status = state === 'interrupted' ? 'interrupted' : live ? ui.status : run?.status ?? '…';
  // A stopped run (here or in a view of the store) goes on from the checkpoint kept with it.
  const stoppedResumable = run !== null && resumable(state, status, files) === 'stopped';
  // The env's path name, and the trainer task it serves (they differ for proxied upstreams).
  const envPath = String(run?.env.name ?? '');
  const envTask = String(run?.env.task ?? envPath);
  const lastMetrics = shownSteps.length ? shownSteps[shownSteps.length - 1].metrics : {};
  const lastGrpo = shownSteps.filter((s) => !s.metrics.phase_sft).at(-1);
  const full = run?.config.train_mode === 'full';
  // TRL computes no KL term (and logs none) when beta is 0.
  const klOff = run !== null && Number(setting(run, 'beta')) === 0;
  const sftDone = shownSteps.filter((s) => s.metrics.phase_sft).length;
  const axis = { total, sftSteps: Math.max(sftDone, Number.isFinite(sftPlanned) ? sftPlanned : 0) };
  const training = live && (status === 'running' || status === 'paused');

  return (
    <div className="run">
      <RunHeader id={id} run={run} setRun={setRun} status={status} live={live} owned={owned} busy={busy} act={act} />
      <p className="muted run-meta">
        {envTask && <>task <b>{envTask}</b> · </>}model <b>{String(run?.model.name ?? '?')}</b>{full ? ' (full fine-tuning)' : ' (LoRA)'}
        {run?.parent && <> · forked from <a href={`#/runs/${run.parent}`} data-testid="parent-link">run {run.parent.slice(0, 8)}</a></>}
        {!live && !owned && <> · <span>Read-only view of a shared run.</span></>}
      </p>
      <RunBanners
        run={run} live={live} status={status} state={state} error={error}
        warnings={lastGrpo ? stepWarnings(lastGrpo.metrics) : []} warnedStep={lastGrpo?.step ?? null}
        done={done} total={total} stoppedResumable={stoppedResumable} owned={owned} busy={busy} act={act}
      />
      {live && <RunControls steps={shownSteps} done={done} total={total} status={status} now={now} />}
      {run && <EnvClassCode env={run.env} />}
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
        <TrainedModelPanel id={id} run={run} owned={owned} full={full} envPath={envPath} task={envTask} busy={busy} act={act}
          lastStep={shownSteps.at(-1)?.step ?? null} onEvaluated={(step, metrics) => setEvaluated((m) => new Map(m).set(step, metrics))} />
      )}
      <RunFiles id={id} runName={run?.name} files={files} training={training} busy={busy} act={act} />
    </div>
  );
}
