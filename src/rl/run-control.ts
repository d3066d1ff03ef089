// Pause / resume / stop of one run, as the run (src/rl/run.ts) understands them: an AbortSignal asks
// the current phase (SFT or GRPO) to return at its next boundary (a checkpoint is saved there), and a
// gate holds the run between segments until the user resumes or stops. The worker pauses, resumes and
// stops through it; the CLI only stops (SIGINT / SIGTERM). The run may also pause itself (the worker:
// its env-server stopped answering): the pause then carries its cause until the run resumes.

export type RunRequest = 'pause' | 'stop' | null;

/** Why a run paused when nobody pressed pause. */
export type PauseCause = 'env-server-unreachable';

/** What a Run (src/rl/run.ts) reads of its control. */
export interface RunControlPort {
  /** Aborted when the current segment should end (pause or stop). */
  readonly signal: AbortSignal;
  readonly request: RunRequest;
  /** Why the run paused itself (null when the user paused it, or it is not paused). */
  readonly cause: { cause: PauseCause; message: string } | null;
  /** After a segment ended early: true once resumed (a fresh signal), false when stopped. */
  waitWhilePaused(): Promise<boolean>;
}

export class RunControl implements RunControlPort {
  private controller = new AbortController();
  private pending: RunRequest = null;
  private release: ((r: 'resume' | 'stop') => void) | null = null;
  private pauseCause: { cause: PauseCause; message: string } | null = null;

  /** The signal of the current training segment (renewed after each resume). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** What the user asked for since the segment began (stop wins over pause). */
  get request(): RunRequest {
    return this.pending;
  }

  /** Paused and idle: the run holds no GPU work until it is resumed or stopped. */
  get paused(): boolean {
    return this.release !== null;
  }

  get cause(): { cause: PauseCause; message: string } | null {
    return this.pauseCause;
  }

  pause(): void {
    if (this.pending !== null) return;
    this.pending = 'pause';
    this.controller.abort();
  }

  /** The run pauses itself: like pause(), remembering why (a user's pause or stop already asked wins). */
  pauseFor(cause: PauseCause, message: string): void {
    if (this.pending !== null) return;
    this.pauseCause = { cause, message };
    this.pause();
  }

  stop(): void {
    this.pending = 'stop';
    this.controller.abort();
    this.release?.('stop');
  }

  resume(): void {
    this.release?.('resume');
  }

  /** While paused: waits for resume (→ a fresh segment, returns true) or stop (returns false). */
  async waitWhilePaused(): Promise<boolean> {
    if (this.pending !== 'pause') return this.pending !== 'stop';
    const answer = await new Promise<'resume' | 'stop'>((resolve) => (this.release = resolve));
    this.release = null;
    if (answer === 'stop') return false;
    this.pending = null;
    this.pauseCause = null;
    this.controller = new AbortController();
    return true;
  }
}
