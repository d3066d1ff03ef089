// What a rollout scheduler drives: one episode's state and the few operations that advance it (fold a
// sampled turn in, run its tool calls, time it out). The schedulers (rollout-lockstep.ts,
// rollout-continuous.ts) only decide WHEN each episode decodes; everything an episode records is decided
// here and in rollout.ts, so both schedulers produce the same rollouts.

import type { DecodeImage, DecodeItem, DecodeSession, Engine, GenerateOutput, SampledToken, SamplingParams, SequenceHandle } from '../../engine/types.ts';
import type { ChatMessage, ToolCall } from '../../model/chat-template.ts';
import type { DatasetRow, Tool, ToolEnv } from './env.ts';
import type { PlacedImage } from './image-tokens.ts';
import type { RolloutCounter } from './progress.ts';

/** The part of the engine a rollout drives. */
export type RolloutEngine = Pick<Engine, 'newSequence' | 'releaseSequence' | 'generate' | 'openDecode'> & {
  readonly config: { maxPositionEmbeddings: number };
};

/** Tool results rolled back for the episode's token budget: the completion length they needed, and the budget. */
export interface OverBudget {
  tokens: number;
  budget: number;
}

export interface Rollout {
  /** The dataset row this rollout was reset with. */
  row: DatasetRow;
  /** The prompt messages after `reset` (observation folded into the last message). */
  prompt: ChatMessage[];
  promptIds: number[];
  /** Every token after the prompt: sampled turns and the tool suffixes between them. */
  completionIds: number[];
  /** Per completion token: 1 = sampled by the policy (trained), 0 = tool suffix (attended, not trained). */
  toolMask: number[];
  /**
   * Per completion token: 1 on the sampled tokens of a stubborn turn (it repeats a failing tool call more
   * than `stubborn_threshold` times); `mask_stubborn_steps` drops them from the loss. 0 elsewhere.
   */
  stubbornMask: number[];
  /** Per completion token: log-prob under the sampling distribution; 0 for tool-suffix tokens. */
  logprobs: number[];
  /** `[assistant, tool…, assistant, …]`, what reward functions receive as the completion. */
  completion: ChatMessage[];
  /**
   * The images in the context, where their placeholder tokens sit in promptIds + completionIds (all in
   * tool suffixes: tool_mask 0). The engine embeds each image's vision features there.
   */
  images: PlacedImage[];
  /** The last completion id is neither eos nor pad (false for an empty completion). */
  truncated: boolean;
  /** The env instance that played this episode (reward functions read its state). */
  env: ToolEnv;
  toolCalls: number;
  toolFailures: number;
  /**
   * Tool calls that never reached the env (a name it does not offer, or arguments its tool cannot take),
   * counted among toolFailures too; with the names the model called that no tool has, and the env's tools.
   */
  invalidToolCalls?: number;
  unknownTools?: string[];
  offeredTools?: string[];
  /** Tool calls that repeated an already failed call more than `stubborn_threshold` times. */
  stubbornCalls: number;
  /**
   * Set when the last iteration's tool results did not fit and were rolled back (§7): with them the
   * completion would hold `tokens`, over `budget` (max_completion_length, or less where the model's
   * context ends first). The episode ended with that call (the env ran it); the model never read its results.
   */
  overBudget?: OverBudget;
  /** Why this rollout cannot be scored (env refused, dropped or timed out); its reward must be NaN. */
  error?: string;
  /** Set when the episode or one of its env calls ran past its timeout (also sets `error`). */
  timedOut?: boolean;
}

/** Per-rollout working state; its `rollout` is the result. */
export interface Episode {
  /** Position in the generation batch; also the episode's sampling stream. */
  index: number;
  rollout: Rollout;
  tools: Tool[];
  /** Engine sequence, once the first turn was scheduled. */
  seq?: SequenceHandle;
  /** Tool calls of the last parsed turn (empty: the episode is over unless a tool turn is running). */
  pendingCalls: ToolCall[];
  /** Tool-call rounds executed so far. */
  iterations: number;
  /** Wall-clock deadline (performance.now() ms) of the episode, set when its first turn is scheduled; Infinity = none. */
  deadline: number;
  /** Failing calls seen so far, by `name + canonical arguments`, with their count. */
  failedCalls: Map<string, number>;
  /** The env session's close, once started (the episode ended or timed out). */
  closing?: Promise<void>;
  /** [from, to) of the last sampled turn in completionIds (stubborn turns are flagged there). */
  lastTurn: [number, number];
}

export interface TurnRequest {
  episode: Episode;
  /** The prompt on the first turn, the tool suffix afterwards. */
  append: number[];
  /**
   * Set when the episode's context was rewritten (max_context_images dropped an image): its sequence was
   * released and the engine prefills this whole context (prompt, completion, suffix) on a new one.
   */
  restart?: number[];
  /** The images among the tokens this turn appends (or restarts with), for a vision model's engine. */
  images?: DecodeImage[];
  first: boolean;
  maxNewTokens: number;
}

/** Decode-side counters of one rollout batch (the `bench rollouts` report reads them). */
export interface RolloutStats {
  /** Engine decode steps, each with the number of sequences it decoded. */
  decodeBatchSizes: number[];
  /** Milliseconds spent inside engine.generate (the GPU's share of the wall clock). */
  generateMs: number;
  /** Tool-call rounds sent to envs (env steps). */
  envSteps: number;
  /** Wall-clock milliseconds of the whole batch, resets included. */
  wallMs: number;
}

export function emptyRolloutStats(): RolloutStats {
  return { decodeBatchSizes: [], generateMs: 0, envSteps: 0, wallMs: 0 };
}

/** What a scheduler needs to advance episodes; rollout.ts provides it. */
export interface EpisodeDriver {
  engine: RolloutEngine;
  /** One seed for the whole batch; each episode samples from its own stream (its index). */
  sampling: SamplingParams;
  stopIds: number[];
  maxIterations: number;
  /**
   * Admits the episode: resets its env (the session opens now), renders its prompt and returns the first
   * turn's request (prompt appended), or null when the episode cannot start. A scheduler calls it when
   * the episode gets its slot: episode_timeout_s counts from the first turn, so an episode waiting for a
   * slot is not timed out for it. Env trouble never rejects (the episode ends as unscorable).
   */
  firstTurn(episode: Episode): Promise<TurnRequest | null>;
  /** Folds a sampled turn into the rollout; the episode's pendingCalls become the turn's calls. */
  fold(request: TurnRequest, out: Pick<GenerateOutput, 'tokens' | 'logprobs'>): void;
  /**
   * Runs the episode's pending calls (bounded by the call timeout and the episode deadline) and returns
   * the next turn's request, or null when the episode is over. Env trouble never rejects (it ends the
   * episode as unscorable); only a rollout bug does, e.g. a chat template that is not prefix-preserving.
   */
  toolTurn(episode: Episode): Promise<TurnRequest | null>;
  /** Ends an episode that ran past its deadline: unscorable, counted as timed out. */
  timeOut(episode: Episode, what: string): void;
  /** Gives the episode's engine sequence (its KV rows) back, once the episode is over; no-op without one. */
  releaseSequence(episode: Episode): void;
  /**
   * Ends an episode that is over: its sequence goes back and its env session is closed. Resolves when
   * the session is closed (or after an env call's timeout), then its slot may go to the next episode.
   * Never rejects.
   */
  endEpisode(episode: Episode): Promise<void>;
  /**
   * Most episodes the env servers serve at once, as a refusal named it (OpenEnv's create_app serves one
   * by default); Infinity until one did. It may drop while a batch plays: schedulers read it at each admission.
   */
  sessionLimit(): number;
  /** The episode's reset waits for a server's session that other episodes hold (its clock stands still meanwhile). */
  waitingForSession(episode: Episode): boolean;
  /** Resolves at the next change of the batch's waits for sessions (one granted, queued, given back, a limit learned). */
  sessionChange(): Promise<void>;
  stats: RolloutStats;
  /** Live counts for progress displays. */
  progress: RolloutCounter;
}

/** Engine generate with the time counted as GPU-busy and each decode step counted for progress. */
export async function timedGenerate(driver: EpisodeDriver, req: Parameters<RolloutEngine['generate']>[0]): Promise<GenerateOutput[]> {
  const t0 = performance.now();
  // Sequences in the step about to run: all sampling items first, then those still live after each step.
  let live = req.items.filter((item) => item.maxNewTokens > 0).length;
  const onStep: typeof req.onStep = (info) => {
    req.onStep?.(info);
    driver.progress.decodeStep(live);
    live = info.live;
  };
  try {
    return await driver.engine.generate({ ...req, onStep });
  } finally {
    driver.stats.generateMs += performance.now() - t0;
  }
}

/** `steps` chained steps of a decode session, the time counted as GPU-busy and each step counted for progress and stats. */
export async function timedStep(driver: EpisodeDriver, session: DecodeSession, items: DecodeItem[], steps: number): Promise<SampledToken[][]> {
  const t0 = performance.now();
  try {
    const sampled = await session.step(items, steps);
    // Step j of a chain decoded the sequences that had not stopped before it (the GPU computes the
    // stopped ones too, and their tokens are dropped; steps after every sequence stopped are not counted).
    for (let j = 0; j < steps; j++) {
      const n = sampled.filter((tokens) => tokens.length > j).length;
      if (n === 0) break;
      driver.progress.decodeStep(n);
      driver.stats.decodeBatchSizes.push(n);
    }
    return sampled;
  } finally {
    driver.stats.generateMs += performance.now() - t0;
  }
}
