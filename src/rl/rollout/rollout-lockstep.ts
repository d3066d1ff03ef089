// The lockstep scheduler: every live episode decodes in one engine batch per turn, then the batch waits
// for every env reply before the next turn. Simple and GPU-efficient per step, but one slow env reply
// stalls every episode (rollout-continuous.ts does not wait).

import { timedGenerate, type Episode, type EpisodeDriver, type TurnRequest } from './episode.ts';

export async function runLockstep(episodes: Episode[], driver: EpisodeDriver): Promise<void> {
  let requests = episodes.map((e) => driver.firstTurn(e)).filter((r): r is TurnRequest => r !== null);
  while (requests.length > 0) {
    await generateTurn(driver, requests);
    const withCalls = episodes.filter((e) => e.pendingCalls.length > 0 && !e.rollout.error);
    // The iteration cap leaves the last turn's calls unexecuted.
    const next = await Promise.all(withCalls.filter((e) => e.iterations < driver.maxIterations).map((e) => driver.toolTurn(e)));
    // Keep the batch in rollout order whatever order the env calls finished in.
    requests = next.filter((r): r is TurnRequest => r !== null).sort((x, y) => x.episode.index - y.episode.index);
  }
}

/** Samples one turn for every request in a single engine batch and folds the results into the rollouts. */
async function generateTurn(driver: EpisodeDriver, requests: TurnRequest[]): Promise<void> {
  // With the budget already spent, the suffix still joins the completion but nothing is sampled.
  const sampled = requests.filter((r) => r.maxNewTokens > 0);
  for (const r of sampled) r.episode.seq ??= driver.engine.newSequence();
  let live = sampled.length;
  const outputs = sampled.length === 0 ? [] : await timedGenerate(driver, {
    items: sampled.map((r) => ({ seq: r.episode.seq!, append: r.append, maxNewTokens: r.maxNewTokens, stream: r.episode.index })),
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
