// A GRPO step's progress for the page: the run reports every decode step and env call, far more than
// the page shows, and each report crosses the worker boundary. So a report goes on when the phase
// changed, else at most every STEP_PROGRESS_MS.
import { STEP_PROGRESS_MS } from './api.ts';
import type { RunProgress } from '../src/rl/run.ts';

const phaseKey = (p: RunProgress) => (p.phase === 'logprobs' ? `logprobs:${p.of}` : p.phase);

export function stepProgressReporter(send: (p: RunProgress) => void, now: () => number = () => performance.now()): (p: RunProgress) => void {
  let last = -Infinity;
  let phase = '';
  return (p) => {
    const t = now();
    if (phaseKey(p) === phase && t - last < STEP_PROGRESS_MS) return;
    phase = phaseKey(p);
    last = t;
    send(p);
  };
}
