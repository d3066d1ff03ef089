// The env sessions of one generation batch, as the process's session limiter reports them
// (src/openenv/session-limit.ts): each reset gets a SessionWait, so the batch knows which resets wait
// in a server's queue, which hold a session, and the session limit a server named. The schedulers admit
// no more episodes than that limit (a one-session server plays its episodes one after another, never
// a lockstep wave that waits on itself), and a reset's time in the queue is not counted against its
// timeouts: the server is not slow, another episode holds its session.

import { SessionWait } from '../../openenv/session-limit.ts';

/** Outcome of an env call raced against a time limit. */
export type Bounded<T> = { done: true; value: T } | { done: false };

/** The session limit a run's resets learned, per run (its env factory): its next batches admit no more from the start. */
const learned = new WeakMap<object, number>();

export class BatchSessions {
  private readonly waits: SessionWait[] = [];
  private readonly over = new Set<number>();
  private readonly listeners = new Set<() => void>();

  /** `run`: what the learned limit is kept under (the run's env factory). */
  constructor(private readonly run: object) {}

  /** Most episodes the run's env servers serve at once, as their refusals named it; Infinity until one did. */
  limit(): number {
    return learned.get(this.run) ?? Infinity;
  }

  /** The wait reset `i` reports on. */
  waitFor(i: number): SessionWait {
    const wait = new SessionWait();
    this.waits[i] = wait;
    wait.onChange(() => {
      if (wait.limit !== null && wait.limit < this.limit()) learned.set(this.run, wait.limit);
      this.changed();
    });
    return wait;
  }

  /** Reset `i` waits for a session now. */
  queued(i: number): boolean {
    return this.waits[i]?.queued ?? false;
  }

  /**
   * Reset `i`'s clock stands still: it waits for a session while another episode of the batch, still
   * playing, holds one (and gives it back when it ends). A wait nothing here will end (a session held
   * by another client, or never closed) counts, so a reset cannot wait forever.
   */
  paused(i: number): boolean {
    return this.queued(i) && this.waits.some((w, j) => j !== i && w !== undefined && w.holding > 0 && !this.over.has(j));
  }

  /** Episode `i` is over (its session closed or given up on): it no longer holds one for the batch. */
  ended(i: number): void {
    this.over.add(i);
    this.changed();
  }

  /** Calls `listener` at every change of the batch's waits; returns its removal. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves at the next change of the batch's waits. */
  change(): Promise<void> {
    return new Promise<void>((resolve) => {
      const off = this.onChange(() => {
        off();
        resolve();
      });
    });
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/**
 * Races `work` against `ms` (Infinity = no limit) of time during which `paused()` is false; `onChange`
 * says when `paused()` may have changed. A late result is dropped.
 */
export function bounded<T>(work: Promise<T>, ms: number, paused: () => boolean = () => false, onChange?: (listener: () => void) => () => void): Promise<Bounded<T>> {
  if (!Number.isFinite(ms)) return work.then((value) => ({ done: true, value }));
  return new Promise<Bounded<T>>((resolve, reject) => {
    let counted = 0;
    /** When the clock last started; null while it stands still. */
    let since: number | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let over = false;
    const settle = (result: () => void): void => {
      if (over) return;
      over = true;
      clearTimeout(timer);
      off?.();
      result();
    };
    const tick = (): void => {
      if (over) return;
      const now = performance.now();
      if (since !== null) counted += now - since;
      since = paused() ? null : now;
      clearTimeout(timer);
      if (since === null) return;
      // Fired at the limit (or past it, for a limit already spent): the work may still win a 0 ms race, as with a plain timer.
      const left = ms - counted;
      timer = setTimeout(() => {
        tick();
        if (counted >= ms && since !== null) settle(() => resolve({ done: false }));
      }, Math.max(0, left));
    };
    const off = onChange?.(tick);
    tick();
    work.then(
      (value) => settle(() => resolve({ done: true, value })),
      (err: unknown) => settle(() => reject(err)),
    );
  });
}
