// The lockstep scheduler: episodes play in waves of at most `maxBatchSize` (the decode batch cap from the
// memory plan, or fewer when the env server caps its sessions). A wave starts with its episodes' resets
// and waits for all of them; then every live episode decodes in one engine batch per turn, and the wave
// waits for every env reply before the next turn. An episode that ends gives back its sequence and closes
// its env session at once; the next wave starts when the wave's last session is closed. Simple and
// GPU-efficient per step, but one slow env reply stalls the whole wave (rollout-continuous.ts does not wait).

import { timedGenerate, type Episode, type EpisodeDriver, type TurnRequest } from './episode.ts';

export async function runLockstep(episodes: Episode[], driver: EpisodeDriver, opts: { maxBatchSize: number }): Promise<void> {
  if (!(opts.maxBatchSize >= 1)) throw new Error(`maxBatchSize must be ≥ 1, got ${opts.maxBatchSize}`);
  for (let from = 0; from < episodes.length; from += opts.maxBatchSize) await playWave(episodes.slice(from, from + opts.maxBatchSize), driver);
}

async function playWave(wave: Episode[], driver: EpisodeDriver): Promise<void> {
  const ending: Promise<void>[] = [];
  let live = new Set(wave);
  /** Ends the episodes of the wave that have no next turn. */
  const endAllBut = (requests: TurnRequest[]): void => {
    const next = new Set(requests.map((r) => r.episode));
    for (const e of live) if (!next.has(e)) ending.push(driver.endEpisode(e));
    live = next;
  };
  let requests = (await Promise.all(wave.map((e) => driver.firstTurn(e)))).filter((r): r is TurnRequest => r !== null);
  endAllBut(requests);
  while (requests.length > 0) {
    await generateTurn(driver, requests);
    driver.progress.decodeIdle();
    const withCalls = wave.filter((e) => e.pendingCalls.length > 0 && !e.rollout.error);
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
