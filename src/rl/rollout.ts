// One generation batch of multi-turn, tool-calling episodes (grpo-semantics.md §4–§8), TRL's
// `_generate` + `_tool_call_loop` on webgrpo's engine. Every live rollout decodes in the same engine
// batch each turn; tool results enter the token stream by concatenating the suffix ids of a dummy
// render (never by re-tokenizing the conversation), and those suffix tokens are masked from the loss.

import type { Engine } from '../engine/types.ts';
import { renderChat, type ChatMessage } from '../model/chat-template.ts';
import type { TextTokenizer } from '../model/tokenizer.ts';
import { EnvPool, envTools, toolSchemaOf, type DatasetRow, type EnvFactory, type Tool, type ToolEnv } from './env.ts';
import { parseResponse } from './parse.ts';
import { rolloutChatTemplate, templateSpecialTokens } from './templates/select.ts';
import { executeToolCalls, type ToolMessage } from './tools.ts';

/** The GRPOConfig keys the rollout reads (TRL names). */
export interface RolloutConfig {
  max_completion_length: number;
  /** null/undefined = unbounded (TRL default). */
  max_tool_calling_iterations?: number | null;
  temperature: number;
  top_p: number;
  top_k: number;
  chat_template_kwargs?: Record<string, unknown> | null;
}

/** The part of the engine a rollout drives. */
export type RolloutEngine = Pick<Engine, 'newSequence' | 'releaseSequence' | 'generate'> & {
  readonly config: { maxPositionEmbeddings: number };
};

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
  /** Per completion token: log-prob under the sampling distribution; 0 for tool-suffix tokens. */
  logprobs: number[];
  /** `[assistant, tool…, assistant, …]`, what reward functions receive as the completion. */
  completion: ChatMessage[];
  /** The last completion id is neither eos nor pad (false for an empty completion). */
  truncated: boolean;
  /** The env instance that played this episode (reward functions read its state). */
  env: ToolEnv;
  toolCalls: number;
  toolFailures: number;
  /** Why this rollout cannot be scored (env refused, dropped or timed out); its reward must be NaN. */
  error?: string;
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

/** Seed of turn `turn` of a batch seeded `seed` (distinct per turn, stable across runs). */
function turnSeed(seed: number, turn: number): number {
  return (Math.imul(seed >>> 0, 0x9e3779b1) + Math.imul(turn + 1, 0x85ebca6b)) >>> 0;
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
  const b = renderChat(ctx.template, [...dummy, ...toolMessages], { ...common, addGenerationPrompt: true });
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

/** Per-rollout working state; becomes a Rollout at the end. */
interface Episode {
  rollout: Rollout;
  tools: Tool[];
  /** Engine sequence, once the first turn was scheduled. */
  seq?: ReturnType<RolloutEngine['newSequence']>;
  /** Tool calls of the last parsed turn (empty: the episode is over). */
  pendingCalls: NonNullable<Extract<ChatMessage, { role: 'assistant' }>['tool_calls']>;
}

interface TurnRequest {
  episode: Episode;
  /** The prompt on the first turn, the tool suffix afterwards. */
  append: number[];
  first: boolean;
  maxNewTokens: number;
}

export async function runRollouts(opts: RunRolloutsOptions): Promise<Rollout[]> {
  const { engine, tokenizer, rows, config } = opts;
  if (!(config.max_completion_length >= 1)) throw new Error(`max_completion_length must be ≥ 1, got ${config.max_completion_length}`);
  const maxIterations = config.max_tool_calling_iterations ?? Infinity;
  const maxModelLen = engine.config.maxPositionEmbeddings;
  const kwargs = config.chat_template_kwargs ?? null;
  const stopIds = [tokenizer.eosTokenId];
  const envs = poolFor(opts.envFactory).take(rows.length);

  const templates = new Map<boolean, string>();
  const templateFor = (hasTools: boolean): string => {
    if (opts.template !== undefined) return opts.template;
    let t = templates.get(hasTools);
    if (t === undefined) templates.set(hasTools, (t = rolloutChatTemplate(tokenizer, { hasTools })));
    return t;
  };

  rows.forEach((row, i) => {
    if (!Array.isArray(row.prompt) || row.prompt.length === 0) throw new Error(`row ${i}: 'prompt' must be a non-empty list of messages`);
  });
  // 1. Reset every env (one connection per episode) and render its prompt.
  const observations = await Promise.allSettled(rows.map(async (row, i) => envs[i].reset(row)));
  const episodes: Episode[] = rows.map((row, i) => {
    const env = envs[i];
    const tools = envTools(env);
    const observation = observations[i];
    const prompt = promptWithObservation(row, observation.status === 'fulfilled' ? (observation.value ?? null) : null);
    const rollout: Rollout = {
      row, prompt, promptIds: [], completionIds: [], toolMask: [], logprobs: [], completion: [],
      truncated: false, env, toolCalls: 0, toolFailures: 0,
    };
    if (observation.status === 'rejected') rollout.error = `reset failed: ${errorText(observation.reason)}`;
    rollout.promptIds = renderPrompt({ tokenizer, template: templateFor(tools.length > 0), prompt, tools, chatTemplateKwargs: kwargs }).ids;
    if (!rollout.error && rollout.promptIds.length >= maxModelLen) {
      rollout.error = `prompt of ${rollout.promptIds.length} tokens does not fit max_position_embeddings ${maxModelLen}`;
    }
    return { rollout, tools, pendingCalls: [] };
  });

  const sampling = { temperature: config.temperature, topP: config.top_p, topK: config.top_k };
  try {
    // 2. First turn for every live episode, in one engine batch.
    let requests: TurnRequest[] = episodes
      .filter((e) => !e.rollout.error)
      .map((episode) => ({
        episode,
        append: episode.rollout.promptIds,
        first: true,
        maxNewTokens: Math.min(config.max_completion_length, maxModelLen - episode.rollout.promptIds.length),
      }));
    let turn = 0;
    let iteration = 0;
    for (;;) {
      await generateTurn(engine, tokenizer, requests, { ...sampling, seed: turnSeed(opts.seed, turn) }, stopIds);
      turn++;
      const withCalls = episodes.filter((e) => e.pendingCalls.length > 0);
      // 3. The iteration cap leaves the last turn's calls unexecuted.
      if (withCalls.length === 0 || iteration >= maxIterations) break;
      requests = [];
      await Promise.all(
        withCalls.map(async (episode) => {
          const request = await runToolTurn(episode, { tokenizer, template: templateFor(true), chatTemplateKwargs: kwargs }, config, maxModelLen);
          if (request) requests.push(request);
        }),
      );
      iteration++;
      if (requests.length === 0) break;
      // Keep the batch in rollout order whatever order the env calls finished in.
      requests.sort((x, y) => episodes.indexOf(x.episode) - episodes.indexOf(y.episode));
    }
  } finally {
    for (const e of episodes) if (e.seq) engine.releaseSequence(e.seq);
    await Promise.allSettled(episodes.map(async (e) => e.rollout.env.close?.()));
  }

  const endIds = new Set([tokenizer.eosTokenId, ...(tokenizer.padTokenId === null ? [] : [tokenizer.padTokenId])]);
  for (const { rollout } of episodes) {
    const last = rollout.completionIds[rollout.completionIds.length - 1];
    rollout.truncated = rollout.completionIds.length > 0 && !endIds.has(last);
  }
  return episodes.map((e) => e.rollout);
}

/**
 * Executes an episode's pending calls and, budget permitting, returns the next turn's request (suffix
 * appended, budget left). Over budget, the iteration's tool messages are rolled back and the episode ends
 * with its unexecuted `…</tool_call><|im_end|>` (§7).
 */
async function runToolTurn(episode: Episode, ctx: SuffixContext, config: RolloutConfig, maxModelLen: number): Promise<TurnRequest | null> {
  const { rollout } = episode;
  const calls = episode.pendingCalls;
  episode.pendingCalls = [];
  const result = await executeToolCalls(episode.tools, calls);
  rollout.toolCalls += result.calls;
  rollout.toolFailures += result.failures;
  const suffix = toolSuffixIds(ctx, result.messages);
  const used = rollout.completionIds.length + suffix.length;
  if (used > config.max_completion_length || rollout.promptIds.length + used >= maxModelLen) return null;
  rollout.completion.push(...result.messages);
  return {
    episode,
    append: suffix,
    first: false,
    maxNewTokens: Math.min(config.max_completion_length - used, maxModelLen - rollout.promptIds.length - used),
  };
}

/** Samples one turn for every request in a single engine batch and folds the results into the rollouts. */
async function generateTurn(
  engine: RolloutEngine,
  tokenizer: TextTokenizer,
  requests: TurnRequest[],
  sampling: { temperature: number; topP: number; topK: number; seed: number },
  stopIds: number[],
): Promise<void> {
  // With the budget already spent, the suffix still joins the completion but nothing is sampled.
  const sampled = requests.filter((r) => r.maxNewTokens > 0);
  for (const r of sampled) r.episode.seq ??= engine.newSequence();
  const outputs = sampled.length === 0 ? [] : await engine.generate({
    items: sampled.map((r) => ({ seq: r.episode.seq!, append: r.append, maxNewTokens: r.maxNewTokens })),
    sampling,
    stopIds,
  });
  if (outputs.length !== sampled.length) throw new Error(`engine returned ${outputs.length} outputs for ${sampled.length} items`);
  for (const request of requests) {
    const { rollout } = request.episode;
    const index = sampled.indexOf(request);
    const out = index >= 0 ? outputs[index] : { tokens: [], logprobs: [] };
    const stopAt = out.tokens.findIndex((t) => stopIds.includes(t));
    if (stopAt >= 0 && stopAt < out.tokens.length - 1) throw new Error('engine generated past a stop token');
    if (out.tokens.length > request.maxNewTokens) throw new Error(`engine generated ${out.tokens.length} tokens, over maxNewTokens ${request.maxNewTokens}`);
    if (out.logprobs.length !== out.tokens.length) throw new Error('engine returned logprobs and tokens of different lengths');
    const suffix = request.first ? [] : request.append;
    rollout.completionIds.push(...suffix, ...out.tokens);
    rollout.toolMask.push(...suffix.map(() => 0), ...out.tokens.map(() => 1));
    rollout.logprobs.push(...suffix.map(() => 0), ...out.logprobs);
    if (out.tokens.length === 0) continue;
    const message = parseResponse(tokenizer, out.tokens);
    rollout.completion.push(message);
    request.episode.pendingCalls = message.tool_calls ?? [];
  }
}
