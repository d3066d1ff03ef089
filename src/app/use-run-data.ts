// The run page's data: the run, its steps and rollouts polled from the run store while it is going,
// the files kept with it, and the runs other tabs of this browser train. Loading only: what the page
// shows of them is the components' job.
import { useEffect, useState } from 'react';
import { api, ApiError, type ArtifactInfo, type RunSummary, type StepRecord } from './api.ts';
import { runsTrainingInTabs } from './run-lock.ts';
import { useUi } from './store.ts';

export type GroupedRollouts = { step: number; rollouts: unknown[] }[];

/** Stored rollouts by step, their data unchecked (the viewer checks each one's shape). */
function groupRollouts(rows: { step: number; data: unknown }[]): GroupedRollouts {
  const by = new Map<number, unknown[]>();
  for (const r of rows) by.set(r.step, [...(by.get(r.step) ?? []), r.data]);
  return [...by.entries()].map(([step, rollouts]) => ({ step, rollouts }));
}

export interface RunData {
  run: RunSummary | null;
  setRun(run: RunSummary | null): void;
  /** Why the run cannot be shown: null while it can; '' for no such run; the store's words for a link without its share token. */
  notFound: string | null;
  /** The store's last error for a viewer (cleared by the next good poll), or an action's. */
  error: string | null;
  setError(error: string | null): void;
  steps: StepRecord[];
  rollouts: GroupedRollouts;
  /** Every step the store kept rollouts for (the viewer pages through them). */
  rolloutSteps: number[];
  /** Runs other tabs of this browser train (their locks), read with each poll of the store. */
  trainingInTabs: Set<string>;
  files: ArtifactInfo[];
}

export function useRunData(id: string, live: boolean): RunData {
  const [run, setRun] = useState<RunSummary | null>(null);
  const [notFound, setNotFound] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [steps, setSteps] = useState<StepRecord[]>([]);
  const [rollouts, setRollouts] = useState<GroupedRollouts>([]);
  const [rolloutSteps, setRolloutSteps] = useState<number[]>([]);
  const [files, setFiles] = useState<ArtifactInfo[]>([]);
  const [trainingInTabs, setTrainingInTabs] = useState<Set<string>>(new Set());
  const filesVersion = useUi((s) => s.filesVersion);

  // The files kept with the run: listed for every viewer, again whenever this tab kept new ones.
  useEffect(() => {
    let stop = false;
    api.artifacts(id).then((r) => !stop && setFiles(r.artifacts), () => undefined);
    return () => {
      stop = true;
    };
  }, [id, filesVersion, run?.status]);

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

  return { run, setRun, notFound, error, setError, steps, rollouts, rolloutSteps, trainingInTabs, files };
}

/**
 * One action at a time (rename, resume, an export…): `busy` names the one in flight, and its failure
 * goes to `setError` (the page's error line).
 */
export function useRunAction(setError: (e: string | null) => void): { busy: string | null; act: RunAct } {
  const [busy, setBusy] = useState<string | null>(null);
  const act: RunAct = async (label, fn) => {
    setBusy(label);
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(null);
    }
  };
  return { busy, act };
}

export type RunAct = (label: string, fn: () => Promise<void>) => Promise<void>;

/** performance.now(), renewed every second while `active` (time left and retry countdowns count down between steps). */
export function useSecondTicks(active: boolean): number {
  const [now, setNow] = useState(() => performance.now());
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => setNow(performance.now()), 1000);
    return () => clearInterval(timer);
  }, [active]);
  return now;
}
