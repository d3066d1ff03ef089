// One generation batch of multi-turn, tool-calling episodes (grpo-semantics.md §4–§8), TRL's
// `_generate` + `_tool_call_loop` on webgrpo's engine. Tool results enter the token stream by
// concatenating the suffix ids of a dummy render (never by re-tokenizing the conversation), and those
// suffix tokens are masked from the loss. WHEN each episode decodes is the scheduler's choice, within
// `maxBatchSize` decode slots (rollout-lockstep.ts: waves of episodes, each turn waiting for all the
// wave's env replies; rollout-continuous.ts: each episode rejoins the next decode step as soon as its env
// reply is in, and a finished episode's slot goes to the next). A slot is also an env session: an
// episode resets when it is admitted and closes its session when it ends, so a batch holds at most
// `envSlots` sessions (max_concurrent_envs caps them for servers capped below the decode slots). WHAT an
// episode records is decided here, and every episode samples from its own stream, so both schedulers,
// and any slot count, give the same rollouts.

import type { GenerateOutput } from '../../engine/types.ts';
import type { ToolCall } from '../../model/chat-template.ts';
import { renderChat, type ChatMessage } from '../../model/chat-template.ts';
import type { TextTokenizer } from '../../model/tokenizer.ts';
import { EnvPool, envTools, toolSchemaOf, type DatasetRow, type EnvFactory, type Tool, type ToolEnv } from './env.ts';
import { emptyRolloutStats, type Episode, type EpisodeDriver, type Rollout, type RolloutEngine, type RolloutStats, type TurnRequest } from './episode.ts';
import { parseResponse, toolCallFormatOf, type ToolCallFormat } from './parse.ts';
import { RolloutCounter, type RolloutProgress } from './progress.ts';
import { runContinuous } from './rollout-continuous.ts';
import { runLockstep } from './rollout-lockstep.ts';
import { rolloutChatTemplate, templateSpecialTokens } from './templates/select.ts';
import { executeToolCalls, type ToolMessage } from './tools.ts';
import { appendedImages, DROPPED_IMAGE_TEXT, dropOldestImages, expandImagePlaceholders, type ImageTokenizer } from './image-tokens.ts';
import { contentImages, templateContent } from './images.ts';
import { DEFAULT_CONFIG, type RolloutSchedulerName } from '../config.ts';
import { withSessionWait } from '../../openenv/session-limit.ts';
import { BatchSessions, bounded, type Bounded } from './batch-sessions.ts';

export type { Rollout, RolloutEngine, RolloutStats } from './episode.ts';
export type { RolloutProgress } from './progress.ts';

export type { RolloutSchedulerName };
export type { Bounded };

/** The GRPOConfig keys the rollout reads (TRL names, plus webgrpo's rollout keys), already checked by config.ts. */
export interface RolloutConfig {
  max_completion_length: number;
  /** null/undefined = unbounded (TRL default). */
  max_tool_calling_iterations?: number | null;
  temperature: number;
  top_p: number;
  top_k: number;
  chat_template_kwargs?: Record<string, unknown> | null;
  /** No default and no check here: config.ts's default (continuous) and its choices are the ones. */
  rollout_scheduler: RolloutSchedulerName;
  /** Wall-clock cap of one episode from its first turn (a wait for a decode slot does not count; the reset is capped by it too, less its wait for a session); past it the episode is closed as unscorable. null = none. */
  episode_timeout_s?: number | null;
  /** Cap on one env call (a reset less its wait for a server's session, or one turn's tool calls); past it the episode is closed as unscorable. null = none. */
  env_call_timeout_s?: number | null;
  /**
   * Most env sessions open at once (OpenEnv servers' MAX_CONCURRENT_ENVS), for a server capped below the
   * decode slots: at most this many episodes play at a time. null/undefined = the decode slots' count.
   */
  max_concurrent_envs?: number | null;
  /** A failing tool call repeated more than this many times makes its turn stubborn (undefined = config.ts's default). */
  stubborn_threshold?: number;
  /** Most images an episode's context holds; older ones become a short text marker (image-tokens.ts). null/undefined = all. */
  max_context_images?: number | null;
}

export interface RunRolloutsOptions {
  engine: RolloutEngine;
  tokenizer: TextTokenizer;
  /** One rollout per row (rows already repeated `num_generations` times, adjacent). */
  rows: DatasetRow[];
  /** Instances are pooled per factory: rollout slot i reuses the same instance across calls (TRL). */
  envFactory: EnvFactory;
  config: RolloutConfig;
  /** Sampling seed of this batch; each turn derives its own. */
  seed: number;
  /** Chat template override; by default the checkpoint's, swapped for the training variant with tools. */
  template?: string;
  /**
   * Decode slots: most sequences in one engine batch and most episodes holding a sequence at once —
   * the sequence count the memory plan was checked for. Lockstep plays the rows in waves of this many
   * (or of max_concurrent_envs, if lower); continuous refills a slot as soon as its episode ends.
   * Default: every row at once.
   */
  maxBatchSize?: number;
  /** Continuous scheduler: how long a decode step waits for more env replies when the batch is not full (ms, default 2). */
  batchWindowMs?: number;
  /** Filled with decode/env counters of this batch (benchmarks). */
  stats?: RolloutStats;
  /** Resets prepared for exactly these rows (prepareResets, the first ones started), e.g. while the previous generation trained. */
  prefetched?: PreparedResets;
  /** Live counts (decode steps, env calls, episodes over) as they change, for progress displays. */
  onProgress?: (p: RolloutProgress) => void;
  /**
   * The vision side's expansion of an image into placeholder tokens. Default: the template's one
   * `<|image_pad|>` per image, unexpanded (no vision model reads them: their positions are still recorded).
   */
  imageTokenizer?: ImageTokenizer;
}

/** What became of one reset: its observation, its failure, or a timeout past `resetLimit`. */
export type ResetOutcome = PromiseSettledResult<Bounded<string | null>>;

/**
 * One generation batch's resets (prepareResets). A reset starts when its episode is admitted to a slot
 * (`take`), or earlier for the first `slots` rows when prefetched, so no more env sessions are open
 * than episodes playing.
 */
export interface PreparedResets {
  rows: DatasetRow[];
  /** Rollout slot i's env instance (the factory's pool). */
  envs: ToolEnv[];
  /** ms; Infinity = none. */
  resetLimit: number;
  /** Episodes playing at once (envSlots, and no more than the session limit the run learned): the most sessions this batch opens at a time. */
  slots: number;
  /** The batch's waits for env sessions (its resets report on them) and the session limit the run learned. */
  sessions: BatchSessions;
  /** Row i's reset, started now unless prefetched; taken once. Never rejects. */
  take(i: number): Promise<ResetOutcome>;
  /**
   * Closes the sessions of resets started but never taken (a stale prefetch, a stopped run, a batch that
   * failed), each once its reset is over (bounded by `resetLimit`). Later `take`s are refused.
   */
  discard(): Promise<void>;
}

/**
 * Episodes of a batch of `rows` playing at once: the decode slots (`maxBatchSize`, default every row),
 * capped by `max_concurrent_envs` (an env server's session cap). Each holds one env session.
 */
export function envSlots(rows: number, maxBatchSize: number | undefined, config: Pick<RolloutConfig, 'max_concurrent_envs'>): number {
  const cap = config.max_concurrent_envs;
  const slots = maxBatchSize ?? Math.max(1, rows);
  if (!(slots >= 1)) throw new Error(`maxBatchSize must be ≥ 1, got ${slots}`);
  return Math.min(slots, cap ?? Infinity);
}

/**
 * The resets of one batch (pooled env instance per slot, TRL's order), each bounded by env_call_timeout_s
 * and episode_timeout_s, less the time it waits for a session that another episode of the batch holds
 * (batch-sessions.ts). Starts the first `slots` of them now — those the first admissions take — and the
 * rest when their episode is admitted. runRollouts calls it itself; a trainer calls it one generation
 * ahead so that those resets' network time overlaps the optimizer step.
 */
export function prepareResets(
  envFactory: EnvFactory,
  rows: DatasetRow[],
  config: Pick<RolloutConfig, 'episode_timeout_s' | 'env_call_timeout_s' | 'max_concurrent_envs'>,
  maxBatchSize?: number,
): PreparedResets {
  rows.forEach((row, i) => {
    if (!Array.isArray(row.prompt) || row.prompt.length === 0) throw new Error(`row ${i}: 'prompt' must be a non-empty list of messages`);
  });
  const resetLimit = Math.min(seconds(config.env_call_timeout_s), seconds(config.episode_timeout_s));
  const sessions = new BatchSessions(envFactory);
  const slots = Math.min(envSlots(rows.length, maxBatchSize, config), sessions.limit());
  const envs = poolFor(envFactory).take(rows.length);
  const outcomes: (Promise<ResetOutcome> | undefined)[] = [];
  const taken = new Set<number>();
  let discarded = false;
  const start = (i: number): Promise<ResetOutcome> =>
    (outcomes[i] ??= bounded(
      Promise.resolve().then(() => withSessionWait(sessions.waitFor(i), () => envs[i]!.reset(rows[i]!))),
      resetLimit,
      () => sessions.paused(i),
      (listener) => sessions.onChange(listener),
    ).then(
      (value): ResetOutcome => ({ status: 'fulfilled', value }),
      (reason: unknown): ResetOutcome => ({ status: 'rejected', reason }),
    ));
  for (let i = 0; i < Math.min(slots, rows.length); i++) void start(i);
  return {
    rows,
    envs,
    resetLimit,
    slots,
    sessions,
    take(i) {
      if (discarded) throw new Error('these resets were discarded');
      if (taken.has(i)) throw new Error(`reset ${i} was already taken`);
      taken.add(i);
      return start(i);
    },
    async discard() {
      discarded = true;
      await Promise.all(outcomes.map(async (outcome, i) => {
        if (!outcome || taken.has(i)) return;
        await outcome;
        await Promise.resolve().then(() => envs[i]!.close?.()).catch(() => undefined);
      }));
    },
  };
}

const pools = new WeakMap<EnvFactory, EnvPool>();

function poolFor(factory: EnvFactory): EnvPool {
  let pool = pools.get(factory);
  if (!pool) pools.set(factory, (pool = new EnvPool(factory)));
  return pool;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export interface SuffixContext {
  tokenizer: TextTokenizer;
  template: string;
  chatTemplateKwargs?: Record<string, unknown> | null;
}

/**
 * The text between an assistant turn's `<|im_end|>` and the next turn's first sampled token (§7):
 * render [user, assistant(call)] (A) and A + tool messages + generation prompt (B) with the same template
 * and kwargs, cut A after its last eos, and return B minus A.
 */
export function toolSuffixText(ctx: SuffixContext, toolMessages: readonly ToolMessage[]): string {
  if (toolMessages.length === 0) throw new Error('toolSuffixText: no tool messages');
  const call = { type: 'function' as const, function: { name: toolMessages[0].name, arguments: {} } };
  const dummy: ChatMessage[] = [
    { role: 'user', content: 'dummy' },
    { role: 'assistant', content: '', tool_calls: [call] },
  ];
  const common = { chatTemplateKwargs: ctx.chatTemplateKwargs, specialTokens: templateSpecialTokens(ctx.tokenizer) };
  const a = renderChat(ctx.template, dummy, { ...common, addGenerationPrompt: false });
  const forTemplate = toolMessages.map((m) => ({ ...m, content: templateContent(m.content) }));
  const b = renderChat(ctx.template, [...dummy, ...forTemplate], { ...common, addGenerationPrompt: true });
  const eos = ctx.tokenizer.eosToken;
  const cut = a.lastIndexOf(eos);
  const prefix = cut >= 0 ? a.slice(0, cut + eos.length) : a;
  if (!b.startsWith(prefix)) throw new Error('the chat template is not prefix-preserving: tool suffix ids cannot be derived');
  return b.slice(prefix.length);
}

/** Suffix ids: the suffix STRING tokenized whole (it starts right after a special token, so this is exact). */
export function toolSuffixIds(ctx: SuffixContext, toolMessages: readonly ToolMessage[]): number[] {
  return ctx.tokenizer.encode(toolSuffixText(ctx, toolMessages));
}

/** A copy of the row's prompt with the reset observation appended to the last message (no separator, §1). */
export function promptWithObservation(row: DatasetRow, observation: string | null): ChatMessage[] {
  if (!Array.isArray(row.prompt) || row.prompt.length === 0) throw new Error("a dataset row's 'prompt' must be a non-empty list of messages");
  const prompt = structuredClone(row.prompt);
  if (observation !== null) {
    const last = prompt[prompt.length - 1];
    if (typeof last.content !== 'string') throw new Error('the last prompt message has no text content to append the observation to');
    last.content += observation;
  }
  return prompt;
}

export interface PromptRenderInput {
  tokenizer: TextTokenizer;
  template: string;
  /** The prompt messages, observation already folded in. */
  prompt: readonly ChatMessage[];
  tools: readonly Tool[];
  chatTemplateKwargs?: Record<string, unknown> | null;
}

/** The exact prompt the model sees (§4): rendered with the env's tool schemas and the generation prompt. */
export function renderPrompt(input: PromptRenderInput): { text: string; ids: number[] } {
  const schemas = input.tools.map(toolSchemaOf);
  const text = renderChat(input.template, input.prompt, {
    tools: schemas.length > 0 ? schemas : null,
    addGenerationPrompt: true,
    chatTemplateKwargs: input.chatTemplateKwargs,
    specialTokens: templateSpecialTokens(input.tokenizer),
  });
  return { text, ids: input.tokenizer.encode(text) };
}

function seconds(s: number | null | undefined): number {
  return s === null || s === undefined ? Infinity : s * 1000;
}

/** A failing call's identity: its name and its arguments with keys in a fixed order. */
function callKey(call: ToolCall): string {
  const canonical = (v: unknown): unknown =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]))
      : Array.isArray(v) ? v.map(canonical) : v;
  return JSON.stringify([call.function.name, canonical(call.function.arguments)]);
}

/** How an episode's images enter its tokens: the placeholder expansion and the context cap. */
interface ImageRules {
  tokenizer: ImageTokenizer | null;
  cap: number | null;
  /** Ids of DROPPED_IMAGE_TEXT. */
  marker: number[];
  startId?: number;
  endId?: number;
}

function imageRules(tokenizer: TextTokenizer, config: RolloutConfig, expansion: ImageTokenizer | undefined): ImageRules {
  const pad = tokenizer.tokenToId('<|image_pad|>');
  return {
    tokenizer: expansion ?? (pad === undefined ? null : { padTokenId: pad, tokensFor: () => 1 }),
    cap: config.max_context_images ?? null,
    marker: tokenizer.encode(DROPPED_IMAGE_TEXT),
    startId: tokenizer.tokenToId('<|vision_start|>'),
    endId: tokenizer.tokenToId('<|vision_end|>'),
  };
}

/** The limits a batch plays under, read once from its config (checked by config.ts, where each key has its one default). */
interface EpisodeLimits {
  /** episode_timeout_s in ms (Infinity = none). */
  episodeMs: number;
  /** env_call_timeout_s in ms (Infinity = none). */
  callMs: number;
  stubbornThreshold: number;
  maxModelLen: number;
  images: ImageRules;
}

function episodeLimits(config: RolloutConfig, engine: RolloutEngine, tokenizer: TextTokenizer, expansion: ImageTokenizer | undefined): EpisodeLimits {
  return {
    episodeMs: seconds(config.episode_timeout_s),
    callMs: seconds(config.env_call_timeout_s),
    stubbornThreshold: config.stubborn_threshold ?? DEFAULT_CONFIG.stubborn_threshold,
    maxModelLen: engine.config.maxPositionEmbeddings,
    images: imageRules(tokenizer, config, expansion),
  };
}

/**
 * What the schedulers drive (EpisodeDriver): one batch's episodes admitted (reset, prompt rendered with
 * the env's tools), folded turn by turn, their tool calls run under the timeouts, and their sessions
 * closed. The schedulers (rollout-lockstep.ts, rollout-continuous.ts) only decide WHEN each plays.
 */
class EpisodeRunner implements EpisodeDriver {
  readonly engine: RolloutEngine;
  readonly sampling: EpisodeDriver['sampling'];
  readonly stopIds: number[];
  readonly maxIterations: number;
  readonly stats: RolloutStats;
  readonly progress: RolloutCounter;
  private readonly templates = new Map<boolean, string>();
  private readonly admitted = new Set<Episode>();
  /** Resets taken and not yet over: their session, if one comes, is closed once it has. */
  private readonly resetting = new Map<Episode, Promise<ResetOutcome>>();

  constructor(
    private readonly opts: RunRolloutsOptions,
    private readonly resets: PreparedResets,
    private readonly limits: EpisodeLimits,
  ) {
    const { config } = opts;
    this.engine = opts.engine;
    this.sampling = { temperature: config.temperature, topP: config.top_p, topK: config.top_k, seed: opts.seed >>> 0 };
    this.stopIds = [opts.tokenizer.eosTokenId];
    this.maxIterations = config.max_tool_calling_iterations ?? Infinity;
    this.stats = opts.stats ?? emptyRolloutStats();
    this.progress = new RolloutCounter(opts.rows.length, opts.onProgress);
  }

  /** The template for prompts with or without tools (the checkpoint's own, chosen once per kind). */
  private templateFor(hasTools: boolean): string {
    if (this.opts.template !== undefined) return this.opts.template;
    let t = this.templates.get(hasTools);
    if (t === undefined) this.templates.set(hasTools, (t = rolloutChatTemplate(this.opts.tokenizer, { hasTools })));
    return t;
  }

  private suffixCtx(): SuffixContext {
    return { tokenizer: this.opts.tokenizer, template: this.templateFor(true), chatTemplateKwargs: this.opts.config.chat_template_kwargs ?? null };
  }

  private closeEnv(episode: Episode): Promise<void> {
    return (episode.closing ??= Promise.resolve().then(() => episode.rollout.env.close?.()).then(() => undefined, () => undefined));
  }

  /** The episode's reset, then its prompt: the observation folded in, rendered with the env's tools. */
  private async admit(episode: Episode): Promise<boolean> {
    const { rollout } = episode;
    const { maxModelLen } = this.limits;
    this.admitted.add(episode);
    const pending = this.resets.take(episode.index);
    this.resetting.set(episode, pending);
    const outcome = await this.progress.envCall(pending);
    this.resetting.delete(episode);
    if (outcome.status === 'rejected') rollout.error = `reset failed: ${errorText(outcome.reason)}`;
    else if (!outcome.value.done) {
      rollout.error = `reset timed out after ${this.resets.resetLimit / 1000} s`;
      rollout.timedOut = true;
    }
    const observation = outcome.status === 'fulfilled' && outcome.value.done ? (outcome.value.value ?? null) : null;
    rollout.prompt = promptWithObservation(rollout.row, observation);
    episode.tools = envTools(rollout.env);
    rollout.promptIds = renderPrompt({
      tokenizer: this.opts.tokenizer, template: this.templateFor(episode.tools.length > 0), prompt: rollout.prompt, tools: episode.tools, chatTemplateKwargs: this.opts.config.chat_template_kwargs ?? null,
    }).ids;
    if (!rollout.error && rollout.promptIds.length >= maxModelLen) {
      rollout.error = `prompt of ${rollout.promptIds.length} tokens does not fit max_position_embeddings ${maxModelLen}`;
    }
    return !rollout.error;
  }

  async firstTurn(episode: Episode): Promise<TurnRequest | null> {
    if (!(await this.admit(episode))) return null;
    // The episode's clock starts with its first turn: its reset was bounded on its own.
    episode.deadline = performance.now() + this.limits.episodeMs;
    const images = appendedImages(episode.rollout.images, 0, this.limits.images.tokenizer);
    return {
      episode,
      append: episode.rollout.promptIds,
      ...(images ? { images } : {}),
      first: true,
      maxNewTokens: Math.min(this.opts.config.max_completion_length, this.limits.maxModelLen - episode.rollout.promptIds.length),
    };
  }

  fold(request: TurnRequest, out: Pick<GenerateOutput, 'tokens' | 'logprobs'>): void {
    foldTurn(this.opts.tokenizer, request, out, toolCallFormatOf(this.templateFor(request.episode.tools.length > 0)));
  }

  async toolTurn(episode: Episode): Promise<TurnRequest | null> {
    const { callMs, episodeMs } = this.limits;
    this.stats.envSteps++;
    const limit = Math.min(callMs, episode.deadline - performance.now());
    const result = await this.progress.envCall(bounded(runToolTurn(episode, this.suffixCtx(), this.opts.config, this.limits), limit));
    if (result.done) {
      // Its context was rewritten (an image dropped): the next turn prefills it on a fresh sequence.
      if (result.value?.restart) this.releaseSequence(episode);
      return result.value;
    }
    this.timeOut(episode, limit === callMs ? `an env call took over env_call_timeout_s = ${callMs / 1000}` : `episode_timeout_s = ${episodeMs / 1000}`);
    return null;
  }

  timeOut(episode: Episode, what: string): void {
    episode.rollout.error = `episode timed out: ${what}`;
    episode.rollout.timedOut = true;
    episode.pendingCalls = [];
    // The env call may still be running: closing the session ends it, and nothing waits for it.
    void this.closeEnv(episode);
  }

  releaseSequence(episode: Episode): void {
    if (episode.seq) this.engine.releaseSequence(episode.seq);
    episode.seq = undefined;
  }

  async endEpisode(episode: Episode): Promise<void> {
    this.releaseSequence(episode);
    // The slot is free once the server let the session go; a close that hangs holds it one env call at most.
    await this.progress.envCall(bounded(this.closeEnv(episode), this.limits.callMs));
    this.resets.sessions.ended(episode.index);
    this.progress.episodeDone();
  }

  sessionLimit(): number {
    return this.resets.sessions.limit();
  }

  waitingForSession(episode: Episode): boolean {
    return this.resets.sessions.queued(episode.index);
  }

  sessionChange(): Promise<void> {
    return this.resets.sessions.change();
  }

  /**
   * After the batch, played or failed: sequences back; only a failed batch leaves sessions here —
   * prefetched resets never taken (discard closes them) and resets still running (closed once they
   * are over, not awaited: one may never answer) are not waited for; episodes still playing are closed now.
   */
  async settle(episodes: readonly Episode[]): Promise<void> {
    for (const e of episodes) this.releaseSequence(e);
    void this.resets.discard();
    for (const [episode, pending] of this.resetting) void pending.then(() => this.closeEnv(episode));
    await Promise.all(episodes.filter((e) => this.admitted.has(e) && !this.resetting.has(e)).map((e) => this.closeEnv(e)));
  }
}

function newEpisode(row: DatasetRow, i: number, env: ToolEnv): Episode {
  return {
    index: i,
    rollout: {
      row, prompt: promptWithObservation(row, null), promptIds: [], completionIds: [], toolMask: [], stubbornMask: [], logprobs: [], completion: [], images: [],
      truncated: false, env, toolCalls: 0, toolFailures: 0, stubbornCalls: 0,
    },
    tools: [], pendingCalls: [], iterations: 0, deadline: Infinity, failedCalls: new Map(), lastTurn: [0, 0],
  };
}

export async function runRollouts(opts: RunRolloutsOptions): Promise<Rollout[]> {
  const t0 = performance.now();
  const { tokenizer, rows, config } = opts;
  const limits = episodeLimits(config, opts.engine, tokenizer, opts.imageTokenizer);
  // Episodes play (hold a decode slot and an env session) `slots` at a time, and no more than the
  // session limit the env servers named (the schedulers read it as it is learned); each one's reset
  // starts when it is admitted — or was started while the previous generation trained (prefetched) —
  // and its session is closed when it ends, so no more sessions are open than episodes playing.
  const slots = envSlots(rows.length, opts.maxBatchSize, config);
  const resets = opts.prefetched ?? prepareResets(opts.envFactory, rows, config, slots);
  if (resets.rows !== rows) throw new Error('runRollouts: the prefetched resets were started for other rows');
  if (resets.slots > slots) throw new Error(`runRollouts: the resets were prefetched for ${resets.slots} episodes at once, over this batch's ${slots}`);
  const episodes = rows.map((row, i) => newEpisode(row, i, resets.envs[i]!));
  const runner = new EpisodeRunner(opts, resets, limits);
  try {
    if (config.rollout_scheduler === 'continuous') await runContinuous(episodes, runner, { maxBatchSize: slots, batchWindowMs: opts.batchWindowMs ?? 2 });
    else await runLockstep(episodes, runner, { maxBatchSize: slots });
  } finally {
    await runner.settle(episodes);
  }

  const endIds = new Set([tokenizer.eosTokenId, ...(tokenizer.padTokenId === null ? [] : [tokenizer.padTokenId])]);
  for (const { rollout } of episodes) {
    const last = rollout.completionIds[rollout.completionIds.length - 1];
    rollout.truncated = rollout.completionIds.length > 0 && !endIds.has(last);
  }
  runner.stats.wallMs += performance.now() - t0;
  return episodes.map((e) => e.rollout);
}

/** Counts calls that never reached the env, and says what the model called beside what the env offers. */
function noteInvalidCalls(episode: Episode, invalid: number, unknownNames: readonly string[]): void {
  const { rollout } = episode;
  rollout.invalidToolCalls = (rollout.invalidToolCalls ?? 0) + invalid;
  rollout.unknownTools = [...new Set([...(rollout.unknownTools ?? []), ...unknownNames])];
  rollout.offeredTools = episode.tools.map((t) => t.declaration.name);
}

/**
 * Executes an episode's pending calls and, budget permitting, returns the next turn's request (suffix
 * appended, budget left). Over budget, the iteration's tool messages are rolled back and the episode ends
 * with its unexecuted `…</tool_call><|im_end|>` (§7). Images of the tool messages are placed in the
 * suffix, and the oldest images beyond max_context_images are dropped (the request then restarts).
 */
async function runToolTurn(episode: Episode, ctx: SuffixContext, config: RolloutConfig, limits: EpisodeLimits): Promise<TurnRequest | null> {
  const { maxModelLen, stubbornThreshold, images: rules } = limits;
  const { rollout } = episode;
  const calls = episode.pendingCalls;
  episode.pendingCalls = [];
  episode.iterations++;
  const result = await executeToolCalls(episode.tools, calls);
  if (rollout.error) return null; // timed out while the calls ran: the episode is already closed
  rollout.toolCalls += result.calls;
  rollout.toolFailures += result.failures;
  if (result.invalid > 0) noteInvalidCalls(episode, result.invalid, result.unknownNames);
  markStubborn(episode, result.failedCalls, stubbornThreshold);
  const pictures = result.messages.flatMap((m) => contentImages(m.content));
  let suffix = toolSuffixIds(ctx, result.messages);
  let images = rollout.images;
  if (pictures.length > 0 && rules.tokenizer) {
    const expanded = expandImagePlaceholders(suffix, pictures, rules.tokenizer);
    const base = rollout.promptIds.length + rollout.completionIds.length;
    suffix = expanded.ids;
    images = [...images, ...expanded.placed.map((p) => ({ ...p, offset: p.offset + base }))];
  }
  const capped = rules.cap === null ? null : dropOldestImages({
    promptLength: rollout.promptIds.length,
    completion: { ids: rollout.completionIds, toolMask: rollout.toolMask, stubbornMask: rollout.stubbornMask, logprobs: rollout.logprobs },
    suffix, images, cap: rules.cap, marker: rules.marker, startId: rules.startId, endId: rules.endId,
  });
  const completionLength = capped ? capped.completion.ids.length : rollout.completionIds.length;
  if (capped) suffix = capped.suffix;
  const used = completionLength + suffix.length;
  const budget = Math.min(config.max_completion_length, maxModelLen - rollout.promptIds.length - 1);
  if (used > budget) {
    rollout.overBudget = { tokens: used, budget };
    return null;
  }
  rollout.completion.push(...result.messages);
  rollout.images = capped ? capped.images : images;
  if (capped) {
    rollout.completionIds = capped.completion.ids;
    rollout.toolMask = capped.completion.toolMask;
    rollout.stubbornMask = capped.completion.stubbornMask;
    rollout.logprobs = capped.completion.logprobs;
    episode.lastTurn = [episode.lastTurn[0] - capped.completionShift, episode.lastTurn[1] - capped.completionShift];
  }
  // A restart prefills the whole context: all its images; otherwise those of the suffix.
  const turnImages = appendedImages(rollout.images, capped ? 0 : rollout.promptIds.length + rollout.completionIds.length, rules.tokenizer);
  return {
    episode,
    append: suffix,
    ...(capped ? { restart: [...rollout.promptIds, ...rollout.completionIds, ...suffix] } : {}),
    ...(turnImages ? { images: turnImages } : {}),
    first: false,
    maxNewTokens: Math.min(config.max_completion_length - used, maxModelLen - rollout.promptIds.length - used),
  };
}

/**
 * Stubborn steps (WebGym; our definition, specs/browsergym.md §7 leaves it open): a failing call whose
 * exact (name, arguments) already failed MORE than `threshold` times earlier in the episode is a stubborn
 * repeat, and so is the turn that made it: that turn's sampled tokens are flagged in stubbornMask.
 */
function markStubborn(episode: Episode, failed: readonly ToolCall[], threshold: number): void {
  const { rollout } = episode;
  let stubborn = 0;
  for (const call of failed) {
    const key = callKey(call);
    const before = episode.failedCalls.get(key) ?? 0;
    episode.failedCalls.set(key, before + 1);
    if (before > threshold) stubborn++;
  }
  if (stubborn === 0) return;
  rollout.stubbornCalls += stubborn;
  const [from, to] = episode.lastTurn;
  for (let t = from; t < to; t++) rollout.stubbornMask[t] = 1;
}

/** Folds one sampled turn (possibly empty: budget spent) into the rollout and parses its tool calls. */
function foldTurn(tokenizer: TextTokenizer, request: TurnRequest, out: { tokens: number[]; logprobs: number[] }, format: ToolCallFormat): void {
  const { episode } = request;
  const { rollout } = episode;
  const stopIds = [tokenizer.eosTokenId];
  const stopAt = out.tokens.findIndex((t) => stopIds.includes(t));
  if (stopAt >= 0 && stopAt < out.tokens.length - 1) throw new Error('engine generated past a stop token');
  if (out.tokens.length > request.maxNewTokens) throw new Error(`engine generated ${out.tokens.length} tokens, over maxNewTokens ${request.maxNewTokens}`);
  if (out.logprobs.length !== out.tokens.length) throw new Error('engine returned logprobs and tokens of different lengths');
  const suffix = request.first ? [] : request.append;
  rollout.completionIds.push(...suffix);
  rollout.toolMask.push(...suffix.map(() => 0));
  rollout.stubbornMask.push(...suffix.map(() => 0));
  rollout.logprobs.push(...suffix.map(() => 0));
  const start = rollout.completionIds.length;
  rollout.completionIds.push(...out.tokens);
  rollout.toolMask.push(...out.tokens.map(() => 1));
  rollout.stubbornMask.push(...out.tokens.map(() => 0));
  rollout.logprobs.push(...out.logprobs);
  episode.lastTurn = [start, rollout.completionIds.length];
  if (out.tokens.length === 0) return;
  // The ids appended before this turn end with its generation prompt (TRL passes them as `prefix`).
  const message = parseResponse(tokenizer, out.tokens, { format, prefix: request.append });
  rollout.completion.push(message);
  episode.pendingCalls = message.tool_calls ?? [];
}
