// An environment class's EnvClient on a server that serves one session at a time (OpenEnv's create_app
// default: grid_world and maze from OpenEnv's source). `webgrpo train --env-class examples/grid_world.mjs`
// against the real server lost 4 of 8 rollouts of its step to "reset failed: Server at capacity: 1/1
// sessions active": the client's jittered retries gave up while another rollout's episode played on.
// Once the server named its limit (its first refusal), a reset waits for the session instead, with no
// more refusals. Replayed from the bytes
// OpenEnv's grid_world sent (tests/fixtures/openenv/grid_world/), with its one-session refusal.

import { afterEach, describe, expect, it } from 'vitest';
import { EnvClient } from '../../src/openenv/index.ts';
import { startReplayServer, type ReplayServer } from './replay-server.ts';

let server: ReplayServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

/** Resolves once `check()` holds, polling the event loop (no wall-clock bound: the test runner's own applies). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
}

describe('EnvClient on a one-session server', () => {
  it("a second client's reset waits for the first episode's session after one refusal, then plays", async () => {
    server = await startReplayServer('grid_world', { maxSessions: 1 });
    const a = new EnvClient(server.url);
    const b = new EnvClient(server.url);
    expect((await a.reset()).observation).toMatchObject({ x: 0, y: 0 });
    let bDone: unknown = null;
    const bReset = b.reset().then((r) => (bDone = r), (err: Error) => (bDone = err));
    // The refusal named the limit: b waits in the queue (withEpisode's jittered retries gave up after six).
    await until(() => server!.refused >= 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(bDone).toBeNull();
    expect(server.refused).toBe(1);
    expect((await a.step({ action: 'DOWN' })).observation).toMatchObject({ x: 1, y: 0 });
    await a.close();
    await bReset;
    expect(bDone).toMatchObject({ observation: { x: 0, y: 0 }, done: false });
    expect((await b.step({ action: 'DOWN' })).observation).toMatchObject({ x: 1, y: 0 });
    await b.close();
    expect(server.peakSessions).toBe(1);
    expect(server.unmatched).toEqual([]);
  });

  it('a client closed while its reset waits gives the session back as soon as it gets one', async () => {
    server = await startReplayServer('grid_world', { maxSessions: 1 });
    const a = new EnvClient(server.url);
    const b = new EnvClient(server.url);
    const c = new EnvClient(server.url);
    await a.reset();
    const bReset = b.reset().catch((err: Error) => err);
    await until(() => server!.refused >= 1);
    await b.close(); // the rollout gave up on b's reset
    await a.close();
    expect(String(await bReset)).toMatch(/closed while reset\(\) waited for a session/);
    // b's late session went back: c gets the server's one session.
    expect((await c.reset()).observation).toMatchObject({ x: 0, y: 0 });
    await c.close();
    expect(server.peakSessions).toBe(1);
  });
});
