// Supervised warm-up on message transcripts: the assistant turns are trained, everything else
// (prompt, tool results, template glue) is only attended. Small models need it before GRPO to emit
// well-formed tool calls at all. The loss is the mean NLL per trained token, which reaches the engine
// as dL/dlogp = −mask/N — the same backward call GRPO uses (DESIGN.md).

import { cutByStop } from '../../engine/stoppable.ts';
import type { Engine, OptimizerConfig } from '../../engine/types.ts';
import { renderChat, type ChatMessage } from '../../model/chat-template.ts';
import type { TextTokenizer } from '../../model/tokenizer.ts';
import { hashInts, permutation, Purpose } from '../seeds.ts';
import type { ToolSchema } from '../rollout/schema.ts';
import { templateSpecialTokens } from '../rollout/templates/select.ts';

/** One transcript line: the conversation and the tool schemas its system prompt was rendered with. */
export interface Transcript {
  messages: ChatMessage[];
  tools?: ToolSchema[] | null;
}

/** A tokenized transcript: the whole sequence and a 0/1 mask of the tokens the model is trained to produce. */
export interface SftExample {
  ids: number[];
  trainMask: number[];
}

export interface TranscriptContext {
  tokenizer: TextTokenizer;
  template: string;
  /** Used when a transcript carries no tools of its own. */
  tools?: readonly ToolSchema[] | null;
  chatTemplateKwargs?: Record<string, unknown> | null;
}

/**
 * Tokenizes a transcript exactly as a rollout would have produced it: the prompt rendered with the
 * generation prompt and tokenized whole; each assistant turn (content, tool calls, `<|im_end|>`)
 * tokenized on its own and trained; the text between turns (tool results + the next generation
 * prompt) tokenized on its own, as the rollout's suffix ids are (§7).
 */
export function tokenizeTranscript(t: Transcript, ctx: TranscriptContext): SftExample {
  const { tokenizer, template } = ctx;
  const tools = t.tools ?? ctx.tools ?? null;
  const opts = { tools: tools && tools.length > 0 ? tools : null, chatTemplateKwargs: ctx.chatTemplateKwargs, specialTokens: templateSpecialTokens(tokenizer) };
  const eos = tokenizer.eosToken;
  const ids: number[] = [];
  const trainMask: number[] = [];
  let consumed = '';
  const push = (text: string, trained: number) => {
    const piece = tokenizer.encode(text);
    ids.push(...piece);
    trainMask.push(...piece.map(() => trained));
  };
  t.messages.forEach((m, i) => {
    if (m.role !== 'assistant') return;
    if (i === 0) throw new Error('transcript: the first message cannot be an assistant turn (there is no prompt)');
    const before = renderChat(template, t.messages.slice(0, i), { ...opts, addGenerationPrompt: true });
    const after = renderChat(template, t.messages.slice(0, i + 1), { ...opts, addGenerationPrompt: false });
    if (!before.startsWith(consumed) || !after.startsWith(before)) {
      throw new Error(`transcript: the chat template is not prefix-preserving at message ${i}; cannot tell the assistant tokens apart`);
    }
    const turn = after.slice(before.length);
    const end = turn.lastIndexOf(eos);
    if (end < 0) throw new Error(`transcript: assistant message ${i} rendered without ${eos}`);
    push(before.slice(consumed.length), 0);
    push(turn.slice(0, end + eos.length), 1);
    consumed = before + turn.slice(0, end + eos.length);
  });
  if (!trainMask.includes(1)) throw new Error('transcript: no assistant message to train on');
  return { ids, trainMask };
}

/** Parses a JSONL file of transcripts: each line a message list, or `{"messages": [...], "tools": [...]}`. */
export function parseTranscripts(text: string, file = 'transcripts'): Transcript[] {
  const out: Transcript[] = [];
  text.split('\n').forEach((line, n) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new Error(`${file}:${n + 1}: not valid JSON (${(err as Error).message})`);
    }
    const t: Transcript = Array.isArray(value) ? { messages: value as ChatMessage[] } : (value as Transcript);
    if (!t || !Array.isArray(t.messages) || t.messages.length === 0) throw new Error(`${file}:${n + 1}: expected a list of messages or {"messages": [...]}`);
    t.messages.forEach((m, k) => {
      if (!m || typeof m.role !== 'string') throw new Error(`${file}:${n + 1}: message ${k} has no role`);
    });
    out.push(t);
  });
  if (out.length === 0) throw new Error(`${file}: no transcripts`);
  return out;
}

export function transcriptsToJsonl(ts: readonly Transcript[]): string {
  return ts.map((t) => JSON.stringify(t)).join('\n') + '\n';
}

export interface SftOptions {
  engine: Engine;
  examples: SftExample[];
  steps: number;
  batchSize: number;
  learningRate: number;
  seed: number;
  /** AdamW settings other than the learning rate (constant during the warm-up). */
  optimizer: Omit<OptimizerConfig, 'learningRate'>;
  signal?: AbortSignal;
}

export interface SftEvent {
  phase: 'sft';
  step: number;
  totalSteps: number;
  /** Mean NLL per trained token of this step's batch (before the update). */
  loss: number;
  tokens: number;
  grad_norm: number;
  learning_rate: number;
}

/** Batches of examples in a seeded order, reshuffled every pass over the data. */
function sftBatch(n: number, batchSize: number, seed: number, step: number): number[] {
  const out: number[] = [];
  for (let k = step * batchSize; out.length < batchSize; k++) {
    const epoch = Math.floor(k / n);
    out.push(permutation(n, hashInts(seed, Purpose.sftOrder, epoch))[k % n]!);
  }
  return out;
}

export async function* trainSft(opts: SftOptions): AsyncGenerator<SftEvent, void> {
  const { engine, examples } = opts;
  if (examples.length === 0) throw new Error('SFT: no examples');
  for (let step = 0; step < opts.steps; step++) {
    if (opts.signal?.aborted) return;
    const batch = sftBatch(examples.length, opts.batchSize, opts.seed, step).map((i) => examples[i]!);
    const sequences = batch.map((e) => ({ ids: e.ids, scoreFrom: 1 }));
    // Token t of a sequence is predicted from positions < t; position 0 is never scored.
    const masks = batch.map((e) => e.trainMask.slice(1));
    const tokens = masks.reduce((n, m) => n + m.reduce((a, b) => a + b, 0), 0);
    engine.zeroGrad();
    let loss: number;
    try {
      const scored = await engine.score({ sequences, temperature: 1 });
      let nll = 0;
      scored.logprobs.forEach((lp, j) => lp.forEach((x, t) => (nll -= x * masks[j]![t]!)));
      loss = nll / Math.max(tokens, 1);
      if (!Number.isFinite(loss)) throw new Error(`SFT step ${step + 1}: the loss is ${loss}; stopped before the update`);
      await engine.backward({ sequences, temperature: 1, dLdLogp: masks.map((m) => Float32Array.from(m, (x) => -x / Math.max(tokens, 1))) });
    } catch (err) {
      // A stoppable engine (src/engine/stoppable.ts) cut the step's forward or backward short: the step
      // is not taken (its partial gradients are zeroed by the next step's zeroGrad, never stepped on).
      if (cutByStop(err, opts.signal)) return;
      throw err;
    }
    const res = await engine.step({ ...opts.optimizer, learningRate: opts.learningRate });
    yield { phase: 'sft', step: step + 1, totalSteps: opts.steps, loss, tokens, grad_norm: res.gradNorm, learning_rate: opts.learningRate };
  }
}
