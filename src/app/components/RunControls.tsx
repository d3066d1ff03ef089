// This tab's run under way: its progress (step n of N, the phase, time left or what the step is doing)
// and the pause, resume and stop buttons, with "pausing…"/"stopping…" until the worker answers.
import { useEffect, useState } from 'react';
import type { StepRecord } from '../api.ts';
import { formatDuration } from '../format.ts';
import { stepProgressText } from '../step-progress.ts';
import { useUi } from '../store.ts';
import { secondsLeft } from '../time-left.ts';
import { trainer } from '../trainer-client.ts';
import { ProgressBar } from './ProgressBar.tsx';

export function RunControls(p: { steps: StepRecord[]; done: number; total: number; status: string; now: number }) {
  const ui = useUi();
  const { steps, done, total, status, now } = p;
  /** When this tab took the run on (a resume starts with the stored steps, none of them timed here). */
  const [liveSince] = useState(() => performance.now());
  /** Pause/stop pressed and not yet answered by the worker (pause waits for the step's end, stop for a decode step). */
  const [requested, setRequested] = useState<'pause' | 'stop' | null>(null);
  // The worker answered the request (or the run ended): the "pausing…" note has done its job.
  useEffect(() => setRequested(null), [ui.status]);

  const training = status === 'running' || status === 'paused';
  const left = secondsLeft({ arrivals: ui.stepStartedAt, stepTimes: steps.slice(-5).map((s) => s.metrics.step_time), total, done, since: liveSince, now });
  const label = (() => {
    if (done === 0 && status === 'loading') return 'starting…';
    if (status === 'waiting') return 'waiting for the GPU…';
    const of = total ? `step ${done} of ${total}` : `step ${done}`;
    const phase = steps.length ? (steps[steps.length - 1].metrics.phase_sft ? ' · SFT warm-up' : ' · GRPO') : '';
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

  return (
    <div className="controls">
      <ProgressBar fraction={total ? done / total : 0} label={label} />
      <button disabled={status !== 'running' || requested !== null} onClick={() => { setRequested('pause'); void trainer().pause(); }} data-testid="pause">
        {requested === 'pause' ? 'pausing…' : 'pause'}
      </button>
      <button disabled={status !== 'paused'} onClick={() => void trainer().resume()} data-testid="resume">resume</button>
      <button disabled={!training || requested === 'stop'} onClick={() => { setRequested('stop'); void trainer().stop(); }} data-testid="stop">
        {requested === 'stop' ? 'stopping…' : 'stop'}
      </button>
    </div>
  );
}
