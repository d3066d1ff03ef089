// The lockstep scheduler: episodes play in waves of at most `maxBatchSize` (the decode batch cap from the
// memory plan, or fewer when the env server caps its sessions). A wave starts with its episodes' resets
// and waits for all of them; then every live episode decodes in one engine batch per turn, and the wave
// waits for every env reply before the next turn. An episode that ends gives back its sequence and closes
// its env session at once; the next wave starts when the wave's last session is closed. Simple and
// GPU-efficient per step, but one slow env reply stalls the whole wave (rollout-continuous.ts does not wait).
// A wave is no wider than the sessions the env server serves once it named its limit (driver.sessionLimit);
// a reset that waits for a session the wave's own episodes hold (the limit was learned from this wave's
// refusals) would wait for the wave to end, so it moves to the next wave, and a one-session server plays
// its episodes one wave after another.

import { timedGenerate, type Episode, type EpisodeDriver, type TurnRequest } from './episode.ts';

/** An episode whose reset started: its first turn, and that turn once it is in. */
interface Started {
  first: Promise<TurnRequest | null>;
  turn?: TurnRequest | null;
}

export async function runLockstep(episodes: Episode[], driver: EpisodeDriver, opts: { maxBatchSize: number }): Promise<void> {
  if (!(opts.maxBatchSize >= 1)) throw new Error(`maxBatchSize must be ≥ 1, got ${opts.maxBatchSize}`);
  const unstarted = [...episodes];
  /** Started episodes that did not play yet, in rollout order (resets start in rollout order). */
  const started = new Map<Episode, Started>();
  while (unstarted.length > 0 || started.size > 0) {
    while (started.size < Math.min(opts.maxBatchSize, driver.sessionLimit()) && unstarted.length > 0) {
      const episode = unstarted.shift()!;
      const entry: Started = { first: driver.firstTurn(episode) };
      // A rejection (a rollout bug) is thrown where nextWave awaits `first`.
      entry.first.then((turn) => (entry.turn = turn), () => undefined);
      started.set(episode, entry);
    }
    const wave = await nextWave(started, driver);
    for (const [episode] of wave) started.delete(episode);
    await playWave(wave, driver);
  }
}

/**
 * The started episodes whose first turn is in, once no other one's reset is running but those that wait
 * for a session: the waiting ones play in a later wave.
 */
async function nextWave(started: Map<Episode, Started>, driver: EpisodeDriver): Promise<[Episode, TurnRequest | null][]> {
  for (;;) {
    const entries = [...started];
    const pending = entries.filter(([, s]) => s.turn === undefined);
    const ready = entries.filter(([, s]) => s.turn !== undefined);
    if (ready.length > 0 && pending.every(([e]) => driver.waitingForSession(e))) return ready.map(([e, s]) => [e, s.turn!]);
    await Promise.race([driver.sessionChange(), ...pending.map(([, s]) => s.first)]);
  }
}

async function playWave(wave: [Episode, TurnRequest | null][], driver: EpisodeDriver): Promise<void> {
  const episodes = wave.map(([e]) => e);
  const ending: Promise<void>[] = [];
  let live = new Set(episodes);
  /** Ends the episodes of the wave that have no next turn. */
  const endAllBut = (requests: TurnRequest[]): void => {
    const next = new Set(requests.map((r) => r.episode));
    for (const e of live) if (!next.has(e)) ending.push(driver.endEpisode(e));
    live = next;
  };
  let requests = wave.map(([, r]) => r).filter((r): r is TurnRequest => r !== null);
  endAllBut(requests);
  while (requests.length > 0) {
    await generateTurn(driver, requests);
    driver.progress.decodeIdle();
    const withCalls = episodes.filter((e) => e.pendingCalls.length > 0 && !e.rollout.error);
    // The iteration cap leaves the last turn's calls unexecuted.
    const next = await Promise.all(withCalls.filter((e) => e.iterations < driver.maxIterations).map((e) => driver.toolTurn(e)));
    // Keep the batch in rollout order whatever order the env calls finished in.
    requests = next.filter((r): r is TurnRequest => r !== null).sort((x, y) => x.episode.index - y.episode.index);
    endAllBut(requests);
  }
  await Promise.all(ending);
}

/** Samples one turn for every request in a single engine batch and folds the results into the rollouts. */
async function generateTurn(driver: EpisodeDriver, requests: TurnRequest[]): Promise<void> {
  // With the budget already spent, the suffix still joins the completion but nothing is sampled.
  const sampled = requests.filter((r) => r.maxNewTokens > 0);
  for (const r of sampled) r.episode.seq ??= driver.engine.newSequence();
  let live = sampled.length;
  const outputs = sampled.length === 0 ? [] : await timedGenerate(driver, {
    items: sampled.map((r) => ({ seq: r.episode.seq!, append: r.restart ?? r.append, maxNewTokens: r.maxNewTokens, stream: r.episode.index, ...(r.images ? { images: r.images } : {}) })),
    sampling: driver.sampling,
    stopIds: driver.stopIds,
    onStep: (info) => {
      driver.stats.decodeBatchSizes.push(live);
      live = info.live;
    },
  });
  if (outputs.length !== sampled.length) throw new Error(`engine returned ${outputs.length} outputs for ${sampled.length} items`);
  for (const request of requests) {
    const index = sampled.indexOf(request);
    driver.fold(request, index >= 0 ? outputs[index]! : { tokens: [], logprobs: [] });
  }
}
