// Getting a slot for a new socket: at once, or after a bounded wait in the queue (`--queue`), or a
// refusal exactly as OpenEnv sends it (specs/openenv-protocol.md §3.4): the handshake has already
// succeeded, so the refusal is one error frame and a close 1000. `/mcp` sockets refuse in JSON-RPC.

import type { Downstream } from './downstream.ts';
import { capacityFrame, queueTimeoutFrame } from './frames.ts';
import type { SlotPool } from './slots.ts';

export interface AdmissionPolicy {
  queue: boolean;
  queueTimeoutMs: number;
  log(line: string): void;
  /** A session's open and close lines: one per episode, so quiet unless asked for (`--verbose`). */
  logSession(line: string): void;
}

/** The frame a refused socket gets: at once (queue off) or after the queue wait ran out. */
export interface RefusalFrames {
  atCapacity(active: number, max: number): string;
  queueTimedOut(active: number, max: number, waitedMs: number): string;
}

export const WS_REFUSALS: RefusalFrames = { atCapacity: capacityFrame, queueTimedOut: queueTimeoutFrame };

/** Resolves true when `down` owns a slot of `pool` (the caller must release it when the session ends). */
export async function admit(
  down: Downstream,
  pool: SlotPool,
  policy: AdmissionPolicy,
  label: string,
  refusals: RefusalFrames = WS_REFUSALS,
): Promise<boolean> {
  if (pool.tryAcquire()) return true;
  if (!policy.queue) {
    policy.log(`session refused ${label}#${down.id} at capacity ${pool.active}/${pool.capacity}`);
    down.end('refused: at capacity', refusals.atCapacity(pool.active, pool.capacity));
    return false;
  }
  const wait = pool.wait(policy.queueTimeoutMs);
  const stopListening = down.onEnd(() => wait.cancel());
  const granted = await wait.granted;
  stopListening();
  if (!granted) {
    if (!down.ended) policy.log(`session refused ${label}#${down.id} after ${policy.queueTimeoutMs / 1000} s in the queue`);
    down.end('queue timeout', refusals.queueTimedOut(pool.active, pool.capacity, policy.queueTimeoutMs));
    return false;
  }
  return true;
}
