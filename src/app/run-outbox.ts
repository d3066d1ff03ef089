// The run store writes of the run this tab trains, queued in order and sent one at a time: while the
// store is away (the env-server stopped, restarting, the laptop asleep) steps keep training and wait
// here — in the tab and in localStorage, so a reload or a closed tab does not lose them — and are sent
// in order once it answers again, with growing pauses between tries. The store keys a step by its
// number (INSERT OR REPLACE), so a step sent twice (its answer lost) is still stored once.
import { ApiError } from './api.ts';

/** One write to the run store, as its route takes it. */
export type OutboxWrite =
  | { kind: 'step'; step: number; metrics: Record<string, number | null>; rollouts: unknown[] }
  | { kind: 'status'; status: string; error?: string };

/** What sends one write (the run store API); throws ApiError on failure. */
export type SendWrite = (w: OutboxWrite) => Promise<unknown>;

export interface OutboxState {
  queued: number;
  /** When the next try is due (Date.now() clock), while the store is unreachable; else null. */
  retryAt: number | null;
  /** Why the last try failed, while retrying. */
  error: string | null;
}

const KEY_PREFIX = 'webgrpo.outbox.';

/** The wait before try number `attempt` (0-based) after a failure: 1 s, 2 s, 4 s, … at most 30 s. */
export function backoffMs(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** Math.max(0, attempt));
}

/** Failures worth trying again: no answer at all, the server's own trouble, or "slow down". */
export function retryable(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false;
  return err.status === 0 || err.status >= 500 || err.status === 408 || err.status === 429;
}

/** A run's queued writes as kept in localStorage (absent or unreadable: none). */
export function storedWrites(storage: Storage, runId: string): OutboxWrite[] {
  try {
    const parsed: unknown = JSON.parse(storage.getItem(KEY_PREFIX + runId) ?? '[]');
    return Array.isArray(parsed) ? (parsed as OutboxWrite[]) : [];
  } catch {
    return [];
  }
}

/** The runs that have writes waiting in localStorage (a tab closed while the store was away). */
export function runsWithStoredWrites(storage: Storage): string[] {
  const ids: string[] = [];
  for (let i = 0; i < storage.length; i++) {
    const key = storage.key(i);
    if (key?.startsWith(KEY_PREFIX)) ids.push(key.slice(KEY_PREFIX.length));
  }
  return ids;
}

export class RunOutbox {
  private queue: OutboxWrite[];
  private sending = false;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private state: OutboxState = { queued: 0, retryAt: null, error: null };
  private idle: (() => void)[] = [];
  private closed = false;

  constructor(
    private readonly runId: string,
    private readonly send: SendWrite,
    private readonly opts: {
      storage?: Storage;
      /** Called whenever the queue or the retry state changes. */
      onState?: (s: OutboxState) => void;
      /** A write the store refused for good (e.g. 403): dropped, and said. */
      onRejected?: (w: OutboxWrite, err: Error) => void;
      /** Once the store answers again after failures. */
      onReconnected?: () => void;
    } = {},
  ) {
    // Writes a closed tab left behind come first: they are older than anything this tab sends.
    this.queue = opts.storage ? storedWrites(opts.storage, runId) : [];
    this.update({ queued: this.queue.length });
    if (this.queue.length > 0) void this.pump();
  }

  get pending(): number {
    return this.queue.length;
  }

  /**
   * Queues a write and starts sending. A status replaces a status still waiting at the tail (only the
   * latest one is true), so heartbeats during an outage do not pile up.
   */
  push(w: OutboxWrite): void {
    const last = this.queue[this.queue.length - 1];
    if (w.kind === 'status' && last?.kind === 'status' && !(this.sending && this.queue.length === 1)) this.queue[this.queue.length - 1] = w;
    else this.queue.push(w);
    this.persist();
    this.update({ queued: this.queue.length });
    if (this.timer === null) void this.pump();
  }

  /** Tries now (the user pressed retry, or the server is known to be back). */
  retryNow(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    void this.pump();
  }

  /** Resolves once every queued write is sent (or dropped as refused). */
  drained(): Promise<void> {
    if (this.queue.length === 0 && !this.sending) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Stops retrying; what is still queued stays in storage for a later page to send. */
  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private async pump(): Promise<void> {
    if (this.sending || this.closed) return;
    this.sending = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        const w = this.queue[0]!;
        try {
          await this.send(w);
        } catch (err) {
          if (retryable(err)) {
            const wait = backoffMs(this.attempt++);
            this.update({ retryAt: Date.now() + wait, error: (err as Error).message });
            this.timer = setTimeout(() => {
              this.timer = null;
              void this.pump();
            }, wait);
            return;
          }
          this.opts.onRejected?.(w, err as Error);
        }
        if (this.attempt > 0) {
          this.attempt = 0;
          this.opts.onReconnected?.();
        }
        this.queue.shift();
        this.persist();
        this.update({ queued: this.queue.length, retryAt: null, error: null });
      }
    } finally {
      this.sending = false;
    }
    if (this.queue.length === 0) for (const resolve of this.idle.splice(0)) resolve();
  }

  private persist(): void {
    const storage = this.opts.storage;
    if (!storage) return;
    const key = KEY_PREFIX + this.runId;
    if (this.queue.length === 0) return storage.removeItem(key);
    try {
      storage.setItem(key, JSON.stringify(this.queue));
    } catch {
      // Over the storage quota (rollouts are the bulk): keep the metrics at least; the tab still has it all.
      try {
        storage.setItem(key, JSON.stringify(this.queue.map((w) => (w.kind === 'step' ? { ...w, rollouts: [] } : w))));
      } catch {
        // Storage is full even so: the queue lives on in this tab only.
      }
    }
  }

  private update(patch: Partial<OutboxState>): void {
    this.state = { ...this.state, ...patch };
    this.opts.onState?.(this.state);
  }
}
