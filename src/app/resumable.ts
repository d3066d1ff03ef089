// Which runs offer "resume" to the browser that owns them: an interrupted run (its writer went away
// mid-run), and a stopped run whose trainer checkpoint is kept with it — a stop keeps the last finished
// step's checkpoint (live-run.ts keepRunFiles), so the run can go on from there as an interrupted one
// does. A finished or failed run does not: it has no steps left, or its state is not to be trusted.
import type { LiveState } from './resume.ts';

export type ResumeKind = 'interrupted' | 'stopped' | null;

/** `state`: liveState() of the run; `kept`: the files kept with it, as `bundle/name` or {bundle}. */
export function resumable(state: LiveState, status: string, kept: readonly (string | { bundle: string })[]): ResumeKind {
  if (state === 'interrupted') return 'interrupted';
  const checkpoint = kept.some((f) => (typeof f === 'string' ? f.startsWith('checkpoint/') : f.bundle === 'checkpoint'));
  return status === 'stopped' && checkpoint ? 'stopped' : null;
}
