// One live owner per run: the tab that trains a run holds the Web Lock `webgrpo.run.<id>` for as long as
// its trainer works on it (paused included); the browser drops the lock when that tab closes, reloads or
// crashes. Every tab of the browser shares the run's token and checkpoints (localStorage, IndexedDB),
// so the lock, not those, says whether a run is live elsewhere: the home page shows such a run as
// running in another tab, and a resume from a second tab is refused (atomically, whatever it was shown).

const PREFIX = 'webgrpo.run.';

export const TRAINING_IN_ANOTHER_TAB = 'This run is training in another tab of this browser: follow or stop it there (this tab can resume it once that tab has closed).';

/** A held run lock; release() once the trainer is done with the run. */
export interface RunClaim {
  release(): void;
}

function locks(): LockManager {
  // Web Locks exist wherever the trainer can run: both need a secure context (https or localhost).
  if (!navigator.locks) throw new Error('This page is not a secure context (https or localhost), so it cannot train: WebGPU and Web Locks need one');
  return navigator.locks;
}

/** Holds lock `name` until release(); with ifAvailable, null at once when another tab holds it. */
function hold(name: string, ifAvailable: boolean): Promise<RunClaim | null> {
  return new Promise((resolve, reject) => {
    locks()
      .request(name, { ifAvailable }, (lock) => {
        if (!lock) return resolve(null);
        // The lock is held until this promise settles.
        return new Promise<void>((release) => resolve({ release }));
      })
      .catch(reject);
  });
}

/** Takes the run's lock, or returns null at once when another tab holds it. */
export function claimRun(runId: string): Promise<RunClaim | null> {
  return hold(PREFIX + runId, true);
}

/**
 * This browser's GPU, for one trainer at a time. Every tab's worker has its own WebGPU device and
 * plans its memory against the whole adapter, so two trainers at once could together overrun the GPU
 * (and each would run at half speed): a second tab's run waits, told why (`onWait`, with the runs the
 * other tabs train), and starts by itself once the first tab's trainer is done with its run.
 */
export async function claimGpu(runId: string, onWait: (others: string[]) => void): Promise<RunClaim> {
  const now = await hold(GPU_LOCK, true);
  if (now) return now;
  onWait([...(await runsTrainingInTabs())].filter((id) => id !== runId));
  return (await hold(GPU_LOCK, false))!;
}

const GPU_LOCK = 'webgrpo.gpu';

/** The runs some tab of this browser is training now (this one's included). */
export async function runsTrainingInTabs(): Promise<Set<string>> {
  if (!navigator.locks) return new Set();
  const { held = [] } = await navigator.locks.query();
  return new Set(held.flatMap((l) => (l.name?.startsWith(PREFIX) ? [l.name.slice(PREFIX.length)] : [])));
}
