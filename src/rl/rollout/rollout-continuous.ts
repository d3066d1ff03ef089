// The continuous scheduler: every episode advances on its own. A decode step feeds one token to every
// turn that is mid-decode plus any turn that became ready since the last step (its prompt or tool suffix
// is prefilled in that same engine call), up to the batch cap. A turn that ends with tool calls leaves
// the batch and its calls go to the env at once; when the reply is in, the episode rejoins the next step.
// So env latency overlaps GPU work and one slow reply delays only its own episode. At most `maxBatchSize`
// episodes hold a slot (an env session and an engine sequence with its KV rows) at once: the rest wait
// in rollout order, and each takes the slot of an episode that ended — its reset starts then, and the
// first turn joins a decode step when the reset is in. No more episodes hold a slot than the env server
// serves sessions once it named its limit (driver.sessionLimit), so an episode waits for its session
// here, before its reset starts, not in the server's queue. Each episode samples from its own stream (engine
// GenerateItem.stream), so its tokens do not depend on which steps it shared. The whole batch is one
// engine decode session, fed step by step: a call costs the host one round trip to the GPU. When nothing
// can join (no turn ready, no env call running), up to DECODE_CHAIN_MAX steps are chained in one call;
// a turn that stops inside a chain ends when the chain does.

import { DECODE_CHAIN_MAX, type DecodeSession } from '../../engine/types.ts';
import { timedStep, type Episode, type EpisodeDriver, type TurnRequest } from './episode.ts';

export interface ContinuousOptions {
  /** Slots: most episodes playing (holding an env session and a sequence) at once, hence most sequences in one decode step. */
  maxBatchSize: number;
  /** When no turn is mid-decode, how long the next step waits for more env replies to join it (ms). */
  batchWindowMs: number;
}

/** A turn being sampled, one token per decode step. */
interface Decoding {
  request: TurnRequest;
  tokens: number[];
  logprobs: number[];
}

export async function runContinuous(episodes: Episode[], driver: EpisodeDriver, opts: ContinuousOptions): Promise<void> {
  if (!(opts.maxBatchSize >= 1)) throw new Error(`maxBatchSize must be ≥ 1, got ${opts.maxBatchSize}`);
  const session = driver.engine.openDecode({ sampling: driver.sampling, stopIds: driver.stopIds, maxRows: opts.maxBatchSize });
  try {
    await feed(session, episodes, driver, opts);
  } catch (e) {
    // The scheduler's own error says more than the validation errors of a run cut short.
    await session.close().catch(() => undefined);
    throw e;
  }
  await session.close();
}

async function feed(session: DecodeSession, episodes: Episode[], driver: EpisodeDriver, opts: ContinuousOptions): Promise<void> {
  const ready: TurnRequest[] = [];
  let decoding: Decoding[] = [];
  let inFlight = 0;
  let failure: { error: unknown } | null = null;
  let wake: (() => void) | null = null;
  const notify = (): void => {
    wake?.();
    wake = null;
  };
  /** Resolves on the next env reply, or after `ms` (Infinity: only on a reply). */
  const nextReply = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const timer = Number.isFinite(ms) ? setTimeout(resolve, ms) : undefined;
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  /** An env call (a reset with its first turn, a tool turn, a close) the loop waits for. */
  const track = (work: Promise<void>): void => {
    inFlight++;
    work.catch((error: unknown) => (failure ??= { error })).finally(() => {
      inFlight--;
      notify();
    });
  };

  const waiting = [...episodes];
  let slotsUsed = 0;
  /** Episodes take free slots in rollout order (their reset starts then); one that cannot start gives its slot on. */
  const admit = (): void => {
    while (!failure && slotsUsed < Math.min(opts.maxBatchSize, driver.sessionLimit()) && waiting.length > 0) {
      const episode = waiting.shift()!;
      slotsUsed++;
      track(driver.firstTurn(episode).then((request) => enqueue(episode, request)));
    }
  };
  /** The slot goes to the next episode once this one's env session is closed. */
  const finish = (episode: Episode): void => {
    track(driver.endEpisode(episode).then(() => {
      slotsUsed--;
      admit();
    }));
  };
  function enqueue(episode: Episode, request: TurnRequest | null): void {
    if (!request) return finish(episode);
    // Budget spent by the suffix: it joins the completion, nothing is sampled, the episode is over.
    if (request.maxNewTokens <= 0) {
      driver.fold(request, { tokens: [], logprobs: [] });
      finish(episode);
    } else ready.push(request);
  }
  const endTurn = (d: Decoding): void => {
    driver.fold(d.request, d);
    const episode = d.request.episode;
    // The iteration cap leaves the last turn's calls unexecuted.
    if (episode.pendingCalls.length === 0 || episode.iterations >= driver.maxIterations) return finish(episode);
    track(driver.toolTurn(episode).then((next) => enqueue(episode, next)));
  };
  const expired = (request: TurnRequest, now: number): boolean => {
    if (now <= request.episode.deadline) return false;
    driver.timeOut(request.episode, 'episode_timeout_s');
    finish(request.episode);
    return true;
  };

  admit();
  for (;;) {
    if (failure) throw (failure as { error: unknown }).error;
    if (decoding.length === 0) {
      if (ready.length === 0) {
        if (inFlight === 0) break;
        driver.progress.decodeIdle();
        await nextReply(Infinity);
        continue;
      }
      // A new wave: give replies that are about to arrive a moment to join it.
      if (inFlight > 0 && ready.length < opts.maxBatchSize && opts.batchWindowMs > 0) await nextReply(opts.batchWindowMs);
    }
    const now = performance.now();
    decoding = decoding.filter((d) => !expired(d.request, now));
    for (let i = ready.length - 1; i >= 0; i--) if (expired(ready[i]!, now)) ready.splice(i, 1);
    // Turns mid-decode keep their place; ready turns join in episode order while there is room.
    ready.sort((x, y) => x.episode.index - y.episode.index);
    const batch = decoding;
    while (batch.length < opts.maxBatchSize && ready.length > 0) batch.push({ request: ready.shift()!, tokens: [], logprobs: [] });
    if (batch.length === 0) continue;
    for (const d of batch) d.request.episode.seq ??= driver.engine.newSequence();
    const left = (d: Decoding): number => d.request.maxNewTokens - d.tokens.length;
    const steps = ready.length === 0 && inFlight === 0 ? Math.min(DECODE_CHAIN_MAX, ...batch.map(left)) : 1;
    const sampled = await timedStep(driver, session, batch.map((d) => ({
      seq: d.request.episode.seq!,
      append: d.tokens.length === 0 ? (d.request.restart ?? d.request.append) : [],
      maxNewTokens: left(d),
      stream: d.request.episode.index,
      ...(d.tokens.length === 0 && d.request.images ? { images: d.request.images } : {}),
    })), steps);
    if (sampled.length !== batch.length) throw new Error(`engine returned tokens for ${sampled.length} of ${batch.length} sequences`);
    decoding = [];
    batch.forEach((d, j) => {
      const out = sampled[j]!;
      d.tokens.push(...out.map((t) => t.token));
      d.logprobs.push(...out.map((t) => t.logprob));
      if (out.some((t) => driver.stopIds.includes(t.token)) || d.tokens.length >= d.request.maxNewTokens) endTurn(d);
      else decoding.push(d);
    });
  }
}
