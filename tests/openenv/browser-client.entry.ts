// Runs in headless Chromium (page or dedicated worker): the OpenEnv client on the browser's own
// WebSocket, against an env-server the Node side started.
import { connect, OpenEnvError, withEpisode } from '../../src/openenv/index.ts';

export default async function (args: { base: string; fullBase: string }) {
  const usesGlobalWebSocket = typeof globalThis.WebSocket === 'function';
  // One catch episode, seeded, played to the end with STAY.
  const episode = await withEpisode(`${args.base}/envs/catch`, async (session, first) => {
    let last = first;
    let steps = 0;
    while (!last.done) {
      last = await session.step({ action_id: 1 });
      steps++;
    }
    return { steps, reward: last.reward, phase: (last.observation as { game_phase: string }).game_phase };
  }, { reset: { seed: 11 } });
  // The full server (cap 1) is held by the Node side: the refusal must surface as a typed error.
  const refused = await connect(`${args.fullBase}/envs/echo`);
  let refusal: { code: string; active?: number } | null = null;
  try {
    await refused.reset();
  } catch (err) {
    if (err instanceof OpenEnvError) refusal = { code: err.code, active: err.data?.active_sessions };
    else throw err;
  }
  const inWorker = typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== 'undefined';
  return { usesGlobalWebSocket, inWorker, episode, refusal };
}
