// Batched generation with a KV cache. A sequence's tokens are either in the cache or "pending":
// the last known token (the final prompt token, or the last sampled one) is never cached until the
// next call feeds it, which is what produces the logits to sample from. So appending tool results
// to a finished sequence costs only the new tokens, never a re-prefill of its prefix.
//
// One generate() call:
//   1. prefill: for every item, pending + appended tokens except the last one go into the cache
//      (packed across items, in passes of at most PREFILL_TOKENS_PER_PASS tokens, no LM head);
//   2. decode: every step feeds each live item's last token, computes logits for those rows only,
//      samples on the GPU and reads back just (id, logprob) per row: one submit per step.

import type { Qwen3Forward, PackedToken } from './forward.ts';
import type { KvCache } from './kv-cache.ts';
import type { GenerateOutput, GenerateRequest, SamplingParams, SequenceHandle } from './types.ts';
import { f32 } from './recorder.ts';

const PREFILL_TOKENS_PER_PASS = 512;

/** Engine-side state of one sequence. */
export class SequenceState implements SequenceHandle {
  /** Every token of the sequence, cached or not. */
  readonly tokens: number[] = [];
  /** How many leading tokens have k/v in the cache. */
  cached = 0;
  released = false;

  constructor(readonly id: number) {}

  get length(): number {
    return this.tokens.length;
  }
}

export function checkSampling(s: SamplingParams): void {
  if (!(Number.isFinite(s.temperature) && s.temperature >= 0)) throw new Error(`sampling.temperature must be a number ≥ 0, got ${s.temperature}`);
  if (!(Number.isFinite(s.topP) && s.topP > 0 && s.topP <= 1)) throw new Error(`sampling.topP must be in (0, 1], got ${s.topP}`);
  if (!(Number.isInteger(s.topK) && s.topK >= 0)) throw new Error(`sampling.topK must be an integer ≥ 0 (0 = off), got ${s.topK}`);
  if (!(Number.isInteger(s.seed) && s.seed >= 0 && s.seed <= 0xffffffff)) throw new Error(`sampling.seed must be an integer in [0, 2^32), got ${s.seed}`);
}

export interface GenerateStats {
  prefillTokens: number;
  decodeSteps: number;
  /** Dispatches recorded by the last decode step. */
  dispatchesPerDecodeStep: number;
}

export async function generateBatch(fwd: Qwen3Forward, cache: KvCache, states: SequenceState[], req: GenerateRequest, stats?: GenerateStats): Promise<GenerateOutput[]> {
  checkSampling(req.sampling);
  const adapters = req.adapters ?? true;
  const V = fwd.config.vocabSize;
  const seen = new Set<number>();
  states.forEach((s, i) => {
    const item = req.items[i]!;
    if (s.released) throw new Error(`generate: item ${i} uses released sequence ${s.id}`);
    if (seen.has(s.id)) throw new Error(`generate: sequence ${s.id} appears twice in one request`);
    seen.add(s.id);
    if (!Number.isInteger(item.maxNewTokens) || item.maxNewTokens < 0) throw new Error(`generate: item ${i} maxNewTokens must be an integer ≥ 0, got ${item.maxNewTokens}`);
    if (item.stream !== undefined && !(Number.isInteger(item.stream) && item.stream >= 0 && item.stream <= 0xffffffff)) {
      throw new Error(`generate: item ${i} stream must be an integer in [0, 2^32), got ${item.stream}`);
    }
    for (const t of item.append) {
      if (!Number.isInteger(t) || t < 0 || t >= V) throw new Error(`generate: item ${i} appends token ${t}, outside the vocabulary [0, ${V})`);
    }
    if (s.length + item.append.length === 0) throw new Error(`generate: item ${i} has an empty sequence and nothing to append (a prompt needs at least one token)`);
  });

  // Tokens join the sequence now; everything but the last one is prefilled into the cache.
  for (let i = 0; i < states.length; i++) {
    const s = states[i]!;
    const item = req.items[i]!;
    s.tokens.push(...item.append);
    cache.reserve(s.id, s.length + item.maxNewTokens, s.cached);
  }
  const prefill: PackedToken[] = [];
  states.forEach((s, i) => {
    const base = cache.base(s.id);
    for (let p = s.cached; p < s.length - 1; p++) prefill.push({ token: s.tokens[p]!, position: p, kvBase: base, kvSlot: base + p, seq: i });
  });
  for (let t0 = 0; t0 < prefill.length; t0 += PREFILL_TOKENS_PER_PASS) {
    const part = prefill.slice(t0, t0 + PREFILL_TOKENS_PER_PASS);
    const rec = fwd.recorder('prefill');
    const batch = fwd.packTokens(part, (role, bytes) => fwd.scratchBuffer(`prefill.${role}`, bytes));
    const acts = fwd.scratchLayerActs(part.length, 'prefill');
    fwd.encodeTrunk(rec, batch, acts, { adapters, kv: cache });
    await rec.submit();
  }
  if (stats) stats.prefillTokens += prefill.length;
  states.forEach((s) => (s.cached = Math.max(s.cached, s.length - 1)));

  const outputs: GenerateOutput[] = states.map(() => ({ tokens: [], logprobs: [], finishReason: 'length' }));
  const live = states.map((_, i) => i).filter((i) => req.items[i]!.maxNewTokens > 0);
  const stop = new Set(req.stopIds);
  const { temperature, topK, topP, seed } = req.sampling;
  const greedy = temperature === 0;
  const wg = fwd.gpu.software ? 64 : 256;
  const samplePipe = fwd.getPipeline('sample.wgsl', { WORKGROUP: wg });
  let step = 0;
  while (live.length > 0) {
    const B = live.length;
    const tokens: PackedToken[] = live.map((i, row) => {
      const s = states[i]!;
      const base = cache.base(s.id);
      const p = s.length - 1;
      return { token: s.tokens[p]!, position: p, kvBase: base, kvSlot: base + p, seq: row };
    });
    const rec = fwd.recorder('decode');
    const batch = fwd.packTokens(tokens, (role, bytes) => fwd.scratchBuffer(`decode.${role}`, bytes));
    const acts = fwd.scratchLayerActs(B, 'decode');
    const hidden = fwd.encodeTrunk(rec, batch, acts, { adapters, kv: cache });
    // rows 0..B-1 are exactly the live sequences' last tokens
    const rowIndex = fwd.scratchBuffer('decode.rowIndex', B * 4);
    const rowInfo = fwd.scratchBuffer('decode.rowInfo', B * 8);
    fwd.device.queue.writeBuffer(rowIndex, 0, Uint32Array.from(live.map((_, r) => r)));
    // RNG stream = the item's own stream (default: its index in the request); counter = the position the sampled token takes.
    fwd.device.queue.writeBuffer(rowInfo, 0, Uint32Array.from(live.flatMap((i) => [req.items[i]!.stream ?? i, states[i]!.length])));
    const h = fwd.encodeFinalHidden(rec, hidden, rowIndex, B);
    const logits = fwd.scratchBuffer('decode.logits', B * V * 4); // (B, V)
    fwd.encodeLogits(rec, h, B, logits);
    const sampled = fwd.scratchBuffer('decode.sampled', B * 8); // (B, 2): id, logprob bits
    rec.dispatch(samplePipe, [logits, rowInfo, sampled],
      [V, V, topK, greedy ? 1 : 0, seed >>> 0, 0, 0, 0, f32(greedy ? 1 : 1 / temperature), f32(topP)], [B, 1, 1], 'sample');
    const readIdx = rec.read(sampled, 0, B * 8);
    if (stats) stats.dispatchesPerDecodeStep = rec.dispatchCount;
    const result = await rec.submit();
    const words = new Uint32Array(result[readIdx]!);
    const floats = new Float32Array(result[readIdx]!);
    const still: number[] = [];
    live.forEach((i, row) => {
      const s = states[i]!;
      s.cached = s.length; // the fed token is in the cache now
      const id = words[row * 2]!;
      s.tokens.push(id);
      const out = outputs[i]!;
      out.tokens.push(id);
      out.logprobs.push(floats[row * 2 + 1]!);
      if (stop.has(id)) out.finishReason = 'stop';
      else if (out.tokens.length < req.items[i]!.maxNewTokens) still.push(i);
    });
    live.splice(0, live.length, ...still);
    step++;
    req.onStep?.({ step, live: live.length });
  }
  if (stats) stats.decodeSteps += step;
  return outputs;
}
