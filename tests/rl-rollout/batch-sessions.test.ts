// A batch's view of its resets' sessions (src/rl/rollout/batch-sessions.ts): a reset's clock stands still
// while it waits for a session another playing episode of the batch holds, and runs again when nothing
// in the batch will give one back (a session held by another client, or never closed), so a reset never
// waits forever; the limit a run learned holds for its later batches.

import { describe, expect, it } from 'vitest';
import { BatchSessions, bounded } from '../../src/rl/rollout/batch-sessions.ts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('BatchSessions', () => {
  it("a queued reset's clock stands still only while another episode of the batch, still playing, holds a session", () => {
    const batch = new BatchSessions({});
    const [a, b] = [batch.waitFor(0), batch.waitFor(1)];
    a.update({ holding: 1, limit: 1 });
    b.update({ queued: true, limit: 1 });
    expect(batch.paused(1)).toBe(true);
    expect(batch.paused(0)).toBe(false);
    // Episode 0 ended but its session was never closed (a class without close()): b's wait counts again.
    batch.ended(0);
    expect(batch.paused(1)).toBe(false);
    expect(batch.queued(1)).toBe(true);
  });

  it('the limit is learned per run: a later batch of the run starts with it, another run does not', () => {
    const run = {};
    new BatchSessions(run).waitFor(0).update({ limit: 2 });
    expect(new BatchSessions(run).limit()).toBe(2);
    expect(new BatchSessions({}).limit()).toBe(Infinity);
  });
});

describe('bounded', () => {
  it('counts only the time not paused', async () => {
    let paused = true;
    const listeners = new Set<() => void>();
    const onChange = (l: () => void) => (listeners.add(l), () => listeners.delete(l));
    // 60 ms of work under a 40 ms limit: the first 50 ms stand still, so 10 ms count.
    const result = bounded(sleep(60).then(() => 'in'), 40, () => paused, onChange);
    await sleep(50);
    paused = false;
    for (const l of listeners) l();
    expect(await result).toEqual({ done: true, value: 'in' });
    expect(listeners.size).toBe(0);
    // Unpaused, the same work is late.
    expect(await bounded(sleep(60).then(() => 'in'), 40)).toEqual({ done: false });
  });
});
