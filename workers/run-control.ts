// Pause / resume / stop of one run, as the trainer loop understands them: an AbortSignal asks the
// current phase (SFT or GRPO) to return at its next boundary (GRPO saves a checkpoint there), and a
// gate holds the worker between phases until the user resumes or stops. The run may also pause itself
// (its env-server stopped answering): the pause then carries its cause until the run resumes.

import type { PauseCause } from '../src/app/worker-api.ts';

export type RunRequest = 'pause' | 'stop' | null;

export class RunControl {
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

  /** Why the run paused itself (null when the user paused it, or it is not paused). */
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
