// A counted pool of session slots with an optional FIFO queue and bounded waits. A freed slot goes
// straight to the oldest waiter, so a newcomer can never overtake the queue.

export interface SlotWait {
  /** Resolves true when the slot is granted (the caller now owns it), false on timeout or cancel. */
  readonly granted: Promise<boolean>;
  /** Leaves the queue (e.g. the client went away). No effect once settled. */
  cancel(): void;
}

interface Waiter {
  settle(granted: boolean): void;
}

export class SlotPool {
  private activeCount = 0;
  private readonly waiters: Waiter[] = [];

  constructor(readonly capacity: number) {
    if (!(Number.isInteger(capacity) && capacity >= 1)) throw new Error(`Session cap must be an integer ≥ 1, got ${capacity}`);
  }

  get active(): number {
    return this.activeCount;
  }

  get queued(): number {
    return this.waiters.length;
  }

  tryAcquire(): boolean {
    if (this.activeCount >= this.capacity) return false;
    this.activeCount++;
    return true;
  }

  /** Queues for a slot, giving up after `timeoutMs`. Call only after tryAcquire() failed. */
  wait(timeoutMs: number): SlotWait {
    let waiter!: Waiter;
    const granted = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => waiter.settle(false), timeoutMs);
      waiter = {
        settle: (ok) => {
          const i = this.waiters.indexOf(waiter);
          if (i === -1) return;
          this.waiters.splice(i, 1);
          clearTimeout(timer);
          resolve(ok);
        },
      };
      this.waiters.push(waiter);
    });
    return { granted, cancel: () => waiter.settle(false) };
  }

  release(): void {
    if (this.activeCount <= 0) throw new Error('SlotPool.release() without a matching acquire');
    const next = this.waiters[0];
    // The slot changes hands without the count dropping: the waiter now owns it.
    if (next) next.settle(true);
    else this.activeCount--;
  }

  /** Turns every waiter away (server shutdown). */
  cancelAll(): void {
    for (const waiter of [...this.waiters]) waiter.settle(false);
  }
}
