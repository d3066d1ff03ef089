// Batched generation with a KV cache. A sequence's tokens are either in the cache or "pending":
// the last known token (the final prompt token, or the last sampled one) is never cached until the
// next step feeds it, which is what produces the logits to sample from. So appending tool results
// to a finished sequence costs only the new tokens, never a re-prefill of its prefix.
//
// A decode session (CachedDecodeSession) is one decode run that its caller feeds: each step takes the sequences to decode
// now (they join and leave between steps; a joining one brings appended tokens) and
//   1. prefills, for every item with appended tokens, pending + appended tokens except the last one
//      into the cache (packed across items, in passes of at most PREFILL_TOKENS_PER_PASS tokens);
//   2. decodes: feeds each item's last token, computes logits for those rows only, samples on the
//      GPU and reads back just (id, logprob) per row: one submit and one awaited map per step.
// The session validates the sampling once, sizes its buffers for its most rows once, and holds one
// error scope for the whole run (checked when it closes or a step fails), so a step costs the host
// one round trip to the GPU. generate() is one session fed until its items are done.
//
// Qwen3.5 (linear-attention layers): every sequence also owns a state slot (linear-state.ts) that
// prefill and decode read and update. A chain of steps feeds a row's tokens past its stop; since
// that state cannot be truncated, the session snapshots the rows' states before a chain and a row
// that stopped early gets its snapshot back, its tokens since then becoming uncached again (the next
// step's prefill re-feeds them).

import type { ImageSplice, Qwen3Forward, PackedToken } from './forward.ts';
import type { Recorder } from './recorder.ts';
import type { KvCache } from './kv-cache.ts';
import type { LinearStatePool } from './linear-state.ts';
import { DECODE_CHAIN_MAX, type DecodeImage, type DecodeItem, type DecodeSession, type DecodeSessionOptions, type GenerateOutput, type GenerateRequest, type SampledToken, type SamplingParams, type SequenceHandle } from './types.ts';
import { f32, type ParamValue } from './recorder.ts';

const PREFILL_TOKENS_PER_PASS = 512;

type Rope3 = readonly [number, number, number];

/** An image appended to a sequence, not yet prefilled. */
interface PendingImage {
  /** Index in the sequence of its first placeholder token. */
  start: number;
  length: number;
  pixelValues: Float32Array;
  grid: [number, number, number];
}

/** Engine-side state of one sequence. */
export class SequenceState implements SequenceHandle {
  /** Every token of the sequence, cached or not. */
  readonly tokens: number[] = [];
  /** How many leading tokens have k/v in the cache. */
  cached = 0;
  released = false;
  /**
   * Set once the sequence has had an image: its tokens then rotate by M-RoPE positions, those of
   * `rope` (uncached tokens of an append with images), else index + ropeShift (transformers' rope delta).
   */
  vision = false;
  ropeShift = 0;
  readonly rope = new Map<number, Rope3>();
  pendingImages: PendingImage[] = [];

  constructor(readonly id: number) {}

  get length(): number {
    return this.tokens.length;
  }

  /** The M-RoPE positions of token p; undefined on a sequence without images (plain rope by index). */
  ropeOf(p: number): Rope3 | undefined {
    if (!this.vision) return undefined;
    const q = p + this.ropeShift;
    return this.rope.get(p) ?? [q, q, q];
  }
}

/**
 * Records an append's images on its sequence (tokens already pushed, from index `from`): get_rope_index
 * over the appended tokens, continuing from the sequence's rope delta. Every image must end before the
 * append's last token (that one is fed by the decode step, not the prefill).
 */
function placeImages(s: SequenceState, from: number, images: readonly DecodeImage[], cfg: { imageTokenId: number; spatialMergeSize: number }, item: number): void {
  const merge = cfg.spatialMergeSize;
  let p = from;
  let shift = s.ropeShift;
  for (const [k, im] of images.entries()) {
    const start = from + im.offset;
    if (!Number.isInteger(im.offset) || start < p) throw new Error(`generate: item ${item} image ${k} offset ${im.offset} is not an integer at or after the previous image's end`);
    const [t, h, w] = im.grid;
    if (![t, h, w].every((v) => Number.isInteger(v) && v >= 1) || h % merge !== 0 || w % merge !== 0) throw new Error(`generate: item ${item} image ${k} grid ${JSON.stringify(im.grid)} is not positive integers with h, w multiples of merge size ${merge}`);
    const gh = h / merge;
    const gw = w / merge;
    const n = t * gh * gw;
    if (start + n > s.length - 1) throw new Error(`generate: item ${item} image ${k} (${n} tokens from append offset ${im.offset}) must end before the append's last token`);
    for (let j = 0; j < n; j++) {
      if (s.tokens[start + j] !== cfg.imageTokenId) throw new Error(`generate: item ${item} image ${k} needs ${n} image tokens (id ${cfg.imageTokenId}) from append offset ${im.offset}; token ${im.offset + j} is ${s.tokens[start + j]}`);
    }
    for (; p < start; p++) s.rope.set(p, [p + shift, p + shift, p + shift]);
    const cur = start + shift;
    for (let j = 0; j < n; j++) s.rope.set(start + j, [cur + Math.floor(j / (gh * gw)), cur + (Math.floor(j / gw) % gh), cur + (j % gw)]);
    s.pendingImages.push({ start, length: n, pixelValues: im.pixelValues, grid: [t, h, w] });
    p = start + n;
    shift = cur + Math.floor(Math.max(h, w) / merge) - p;
  }
  s.ropeShift = shift;
  s.vision = true;
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

const isStream = (v: number): boolean => Number.isInteger(v) && v >= 0 && v <= 0xffffffff;

/** One row of a decode step: the sequence and its sampling stream. */
interface Row {
  s: SequenceState;
  stream: number;
}

export class CachedDecodeSession implements DecodeSession {
  private readonly adapters: boolean;
  private readonly samplePipe: GPUComputePipeline;
  private readonly sampleParams: ParamValue[];
  private readonly stop: Set<number>;
  /** Buffers are sized for maxRows: done by the first step that feeds that many rows, or ahead of a smaller one. */
  private sized = false;
  private closed = false;

  constructor(
    private readonly fwd: Qwen3Forward,
    private readonly cache: KvCache,
    /** The engine's live sequence of a handle, or null when it is unknown or released. */
    private readonly lookup: (seq: SequenceHandle) => SequenceState | null,
    private readonly opts: DecodeSessionOptions,
    private readonly stats?: GenerateStats,
    /** The linear-attention states (Qwen3.5), null for models without such layers. */
    private readonly state: LinearStatePool | null = null,
  ) {
    checkSampling(opts.sampling);
    if (!(Number.isInteger(opts.maxRows) && opts.maxRows >= 1)) throw new Error(`decode session: maxRows must be an integer ≥ 1, got ${opts.maxRows}`);
    this.adapters = opts.adapters ?? true;
    this.stop = new Set(opts.stopIds);
    const { temperature, topK, topP, seed } = opts.sampling;
    const greedy = temperature === 0;
    const V = fwd.config.vocabSize;
    this.samplePipe = fwd.getPipeline('sample.wgsl', { WORKGROUP: fwd.gpu.software ? 64 : 256 });
    this.sampleParams = [V, V, topK, greedy ? 1 : 0, seed >>> 0, 0, 0, 0, f32(greedy ? 1 : 1 / temperature), f32(topP)];
    // Every state buffer the steps need exists before the first (state slots of a continuing
    // sequence are kept; the pool only grows).
    state?.reserve(opts.maxRows);
    fwd.device.pushErrorScope('validation');
  }

  /** Checks the items of one step and turns them into rows (appended tokens join their sequence). */
  private admit(items: readonly DecodeItem[], prefillOnly: boolean): Row[] {
    if (this.closed) throw new Error('decode session: step after close');
    if (items.length > this.opts.maxRows) throw new Error(`decode session: a step of ${items.length} sequences, over the session's ${this.opts.maxRows} rows`);
    const V = this.fwd.config.vocabSize;
    const seen = new Set<number>();
    const rows = items.map((item, i): Row => {
      const s = this.lookup(item.seq);
      if (!s || s.released) throw new Error(`generate: item ${i} refers to unknown or released sequence ${item.seq.id} (use engine.newSequence())`);
      if (seen.has(s.id)) throw new Error(`generate: sequence ${s.id} appears twice in one request`);
      seen.add(s.id);
      const least = prefillOnly ? 0 : 1;
      if (!Number.isInteger(item.maxNewTokens) || item.maxNewTokens < least) throw new Error(`generate: item ${i} maxNewTokens must be an integer ≥ ${least}, got ${item.maxNewTokens}`);
      if (!isStream(item.stream)) throw new Error(`generate: item ${i} stream must be an integer in [0, 2^32), got ${item.stream}`);
      for (const t of item.append) {
        if (!Number.isInteger(t) || t < 0 || t >= V) throw new Error(`generate: item ${i} appends token ${t}, outside the vocabulary [0, ${V})`);
      }
      if (s.length + item.append.length === 0) throw new Error(`generate: item ${i} has an empty sequence and nothing to append (a prompt needs at least one token)`);
      return { s, stream: item.stream };
    });
    // Tokens join their sequences now; each reserves its whole budget, so later steps never move it.
    items.forEach((item, i) => {
      const s = rows[i]!.s;
      const from = s.length;
      s.tokens.push(...item.append);
      if (item.images?.length) {
        if (!this.fwd.vision) throw new Error(`generate: item ${i} has images but the engine has no vision tower (load it with vision: true from a Qwen3.5 vision-language checkpoint)`);
        placeImages(s, from, item.images, this.fwd.vision.config, i);
      }
      this.cache.reserve(s.id, s.length + item.maxNewTokens, s.cached);
      this.state?.slot(s.id);
    });
    return rows;
  }

  /** Appends tokens and prefills them into the cache without sampling (generate's maxNewTokens 0). */
  async prefill(items: readonly DecodeItem[]): Promise<void> {
    await this.guard(async () => this.encodePrefill(this.admit(items, true)));
  }

  /** `steps` chained decode steps (see DecodeSession.step): per item, in item order, its sampled tokens. */
  async step(items: readonly DecodeItem[], steps = 1): Promise<SampledToken[][]> {
    return this.guard(async () => {
      if (!(Number.isInteger(steps) && steps >= 1 && steps <= DECODE_CHAIN_MAX)) throw new Error(`decode session: steps must be an integer in [1, ${DECODE_CHAIN_MAX}], got ${steps}`);
      items.forEach((item, i) => {
        if (item.maxNewTokens < steps) throw new Error(`decode session: item ${i} may sample ${item.maxNewTokens} more tokens, fewer than the ${steps} steps asked for`);
      });
      const rows = this.admit(items, false);
      await this.encodePrefill(rows);
      if (rows.length === 0) return [];
      if (!this.sized && rows.length < this.opts.maxRows) this.sizeBuffers();
      this.sized = true;
      // Only a chain can feed tokens past a stop: keep the states it starts from.
      const rollback = this.state !== null && steps > 1;
      const ids = rows.map(({ s }) => s.id);
      if (rollback) this.encodeStateCopy((enc) => this.state!.snapshot(enc, ids));
      const startLengths = rows.map(({ s }) => s.length);
      const { rec, read } = this.encodeDecode(rows, steps, this.stateSlots(rows));
      const result = await rec.submit();
      const words = new Uint32Array(result[read]!);
      const floats = new Float32Array(result[read]!);
      const B = rows.length;
      if (this.stats) this.stats.decodeSteps += steps;
      const stoppedEarly: number[] = [];
      const out = rows.map(({ s }, row) => {
        const out: SampledToken[] = [];
        for (let j = 0; j < steps; j++) {
          const token = words[(j * B + row) * 2]!;
          out.push({ token, logprob: floats[(j * B + row) * 2 + 1]! });
          if (this.stop.has(token)) break;
        }
        // Every token fed is in the cache now; the last sampled one is pending. The cache rows a
        // stopped sequence wrote past its stop hold nothing it attends to: its next tokens overwrite them.
        s.tokens.push(...out.map((t) => t.token));
        s.cached = s.length - 1;
        if (rollback && out.length < steps) {
          stoppedEarly.push(row);
          s.cached = startLengths[row]! - 1; // what the snapshot holds
        }
        return out;
      });
      if (stoppedEarly.length > 0) this.encodeStateCopy((enc) => this.state!.restore(enc, ids, stoppedEarly));
      return out;
    });
  }

  /** Per row, its sequence's state slot (0 when the model has no linear-attention layers). */
  private stateSlots(rows: readonly Row[]): number[] {
    return rows.map(({ s }) => this.state?.slot(s.id) ?? 0);
  }

  private encodeStateCopy(record: (enc: GPUCommandEncoder) => void): void {
    const enc = this.fwd.device.createCommandEncoder({ label: 'linear state copy' });
    record(enc);
    this.fwd.device.queue.submit([enc.finish()]);
  }

  /** Ends the run: resolves once the GPU reported no validation error for any of its steps. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const error = await this.fwd.device.popErrorScope();
    if (error) throw new Error(`GPU validation error in a decode session: ${error.message}`);
  }

  /** A failed step ends the session; a validation error it caused is the error reported. */
  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (e) {
      if (this.closed) throw e;
      await this.close();
      throw e;
    }
  }

  private async encodePrefill(rows: readonly Row[]): Promise<void> {
    const fwd = this.fwd;
    // seq: the row's index; a pass's pack numbers its sequences anew (the linear-attention kernels
    // find a token's state slot by its sequence's index in the pack).
    const prefill: PackedToken[] = [];
    // Where an image's placeholders start in `prefill`: a pass never splits an image.
    const imageAt = new Map<number, PendingImage>();
    rows.forEach(({ s }, i) => {
      const base = this.cache.base(s.id);
      const first = prefill.length - s.cached;
      for (const im of s.pendingImages) imageAt.set(first + im.start, im);
      for (let p = s.cached; p < s.length - 1; p++) {
        const mrope = s.ropeOf(p);
        prefill.push({ token: s.tokens[p]!, position: p, kvBase: base, kvSlot: base + p, seq: i, ...(mrope ? { mrope } : {}) });
      }
    });
    const slots = this.stateSlots(rows);
    for (let t0 = 0; t0 < prefill.length;) {
      let t1 = Math.min(prefill.length, t0 + PREFILL_TOKENS_PER_PASS);
      for (const [at, im] of imageAt) {
        if (at < t1 && at + im.length > t1) {
          if (at === t0) throw new Error(`generate: an image of ${im.length} tokens is longer than a prefill pass (${PREFILL_TOKENS_PER_PASS})`);
          t1 = Math.min(t1, at);
        }
      }
      const rowsOfPass: number[] = [];
      const part = prefill.slice(t0, t1).map((t) => {
        if (rowsOfPass[rowsOfPass.length - 1] !== t.seq) rowsOfPass.push(t.seq);
        return { ...t, seq: rowsOfPass.length - 1 };
      });
      const rec = fwd.recorder('prefill', { errorScope: false });
      const batch = fwd.packTokens(part, (role, bytes) => fwd.scratchBuffer(`prefill.${role}`, bytes), rowsOfPass.map((r) => slots[r]!));
      const acts = fwd.scratchLayerActs(part.length, 'prefill');
      const images = this.encodePassImages(rec, [...imageAt].filter(([at]) => at >= t0 && at < t1).map(([at, im]) => ({ at: at - t0, im })));
      fwd.encodeTrunk(rec, batch, acts, { adapters: this.adapters, kv: this.cache, ...(this.state ? { linearState: this.state } : {}) }, images);
      await rec.submit();
      t0 = t1;
    }
    if (this.stats) this.stats.prefillTokens += prefill.length;
    for (const { s } of rows) {
      s.cached = Math.max(s.cached, s.length - 1);
      s.pendingImages = [];
      for (const p of s.rope.keys()) if (p < s.cached) s.rope.delete(p);
    }
  }

  /** Records the vision tower over a prefill pass's images; their rows go to the placeholders at `at` (pass-local). */
  private encodePassImages(rec: Recorder, images: { at: number; im: PendingImage }[]): ImageSplice | undefined {
    if (images.length === 0) return undefined;
    const pixels = new Float32Array(images.reduce((n, { im }) => n + im.pixelValues.length, 0));
    let off = 0;
    for (const { im } of images) {
      pixels.set(im.pixelValues, off);
      off += im.pixelValues.length;
    }
    const { embeds, rows } = this.fwd.vision!.encode(rec, pixels, images.map(({ im }) => im.grid), this.adapters);
    const at = images.flatMap(({ at, im }) => Array.from({ length: im.length }, (_, j) => at + j));
    if (rows !== at.length) throw new Error(`generate: the vision tower gave ${rows} embeddings for ${at.length} image tokens`);
    const rowBuf = this.fwd.scratchBuffer('prefill.imageRows', at.length * 4);
    this.fwd.device.queue.writeBuffer(rowBuf, 0, Uint32Array.from(at));
    return { embeds, rows: rowBuf, count: at.length };
  }

  /**
   * Records `steps` chained decode steps over `rows` (row r of each step = rows[r]): step j feeds
   * position length − 1 + j, its input token being what step j − 1 sampled (the sampler writes it
   * straight into step j's token buffer). The read-back holds (id, logprob bits) per step and row.
   */
  private encodeDecode(rows: readonly Row[], steps: number, stateSlots: readonly number[]) {
    const fwd = this.fwd;
    const B = rows.length;
    const V = fwd.config.vocabSize;
    const rec = fwd.recorder('decode', { errorScope: false });
    const bases = rows.map(({ s }) => (s.length > 0 ? this.cache.base(s.id) : 0));
    const batches = Array.from({ length: steps }, (_, j) => {
      const tokens = rows.map(({ s }, row): PackedToken => {
        const p = Math.max(0, s.length - 1) + j;
        const mrope = s.ropeOf(p);
        return { token: j === 0 ? (s.tokens[p] ?? 0) : 0, position: p, kvBase: bases[row]!, kvSlot: bases[row]! + p, seq: row, ...(mrope ? { mrope } : {}) };
      });
      return fwd.packTokens(tokens, (role, bytes) => fwd.scratchBuffer(`decode.${j}.${role}`, bytes), [...stateSlots]);
    });
    const acts = fwd.scratchLayerActs(B, 'decode');
    // rows 0..B-1 are exactly the fed tokens
    const rowIndex = fwd.scratchBuffer('decode.rowIndex', B * 4);
    fwd.device.queue.writeBuffer(rowIndex, 0, Uint32Array.from(rows, (_, r) => r));
    const logits = fwd.scratchBuffer('decode.logits', B * V * 4); // (B, V)
    const sampled = fwd.scratchBuffer('decode.sampled', B * 8); // (B, 2): id, logprob bits
    const all = fwd.scratchBuffer('decode.sampledSteps', steps * B * 8); // (steps, B, 2)
    batches.forEach((batch, j) => {
      const hidden = fwd.encodeTrunk(rec, batch, acts, { adapters: this.adapters, kv: this.cache, ...(this.state ? { linearState: this.state } : {}) });
      // RNG stream = the item's own; counter = the position the sampled token takes.
      const rowInfo = fwd.scratchBuffer(`decode.${j}.rowInfo`, B * 8);
      fwd.device.queue.writeBuffer(rowInfo, 0, Uint32Array.from({ length: B * 2 }, (_, k) => (k % 2 === 0 ? rows[k >> 1]!.stream : batch.positions[k >> 1]! + 1)));
      const h = fwd.encodeFinalHidden(rec, hidden, rowIndex, B);
      fwd.encodeLogits(rec, h, B, logits);
      const next = j + 1 < steps ? batches[j + 1]!.tokens : fwd.scratchBuffer('decode.nextTokens', B * 4);
      rec.dispatch(this.samplePipe, [logits, rowInfo, sampled, next], this.sampleParams, [B, 1, 1], 'sample');
      rec.copy(sampled, 0, all, j * B * 8, B * 8);
    });
    const read = rec.read(all, 0, steps * B * 8);
    if (this.stats) this.stats.dispatchesPerDecodeStep = rec.dispatchCount / steps;
    return { rec, read };
  }

  /**
   * Sizes every buffer a decode step uses for maxRows rows, by recording (not submitting) the longest
   * chain of that many rows: the buffers are exactly those a real step asks for, so a session whose
   * batch grows later creates none. The read-back buffer is reserved the same way.
   */
  private sizeBuffers(): void {
    const n = this.opts.maxRows;
    // Recorded, never submitted: the stand-in rows may name any state slot.
    this.encodeDecode(Array.from({ length: n }, (_, id) => ({ s: new SequenceState(-1 - id), stream: 0 })), DECODE_CHAIN_MAX, Array.from({ length: n }, () => 0));
    this.fwd.reserveReadback(DECODE_CHAIN_MAX * n * 8);
  }
}

/** generate(): one session, fed every live item until it stops or reaches its maxNewTokens. */
export async function generateBatch(
  fwd: Qwen3Forward, cache: KvCache, lookup: (seq: SequenceHandle) => SequenceState | null, req: GenerateRequest, stats?: GenerateStats,
  state: LinearStatePool | null = null,
): Promise<GenerateOutput[]> {
  req.items.forEach((item, i) => {
    if (item.stream !== undefined && !isStream(item.stream)) throw new Error(`generate: item ${i} stream must be an integer in [0, 2^32), got ${item.stream}`);
  });
  // Stream default: the item's index in the request.
  const items: DecodeItem[] = req.items.map((item, i) => ({ seq: item.seq, append: item.append, maxNewTokens: item.maxNewTokens, stream: item.stream ?? i, ...(item.images ? { images: item.images } : {}) }));
  const session = new CachedDecodeSession(fwd, cache, lookup, { sampling: req.sampling, stopIds: req.stopIds, adapters: req.adapters, maxRows: Math.max(1, items.length) }, stats, state);
  const outputs: GenerateOutput[] = items.map(() => ({ tokens: [], logprobs: [], finishReason: 'length' }));
  try {
    await decodeAll(session, items, outputs, req);
  } catch (e) {
    // The step's own error says more than the validation errors of a run cut short.
    await session.close().catch(() => undefined);
    throw e;
  }
  await session.close();
  return outputs;
}

async function decodeAll(session: CachedDecodeSession, items: DecodeItem[], outputs: GenerateOutput[], req: GenerateRequest): Promise<void> {
  await session.prefill(items);
  let live = items.map((_, i) => i).filter((i) => items[i]!.maxNewTokens > 0);
  const left = (i: number): number => items[i]!.maxNewTokens - outputs[i]!.tokens.length;
  let step = 0;
  while (live.length > 0) {
    // Chain as many steps as every live item may still take (a stop just ends an item's tokens early).
    const steps = Math.min(DECODE_CHAIN_MAX, ...live.map(left));
    const sampled = await session.step(live.map((i) => ({ seq: items[i]!.seq, stream: items[i]!.stream, append: [], maxNewTokens: left(i) })), steps);
    // Per chained step: which items are still sampling after it (for onStep's live count).
    const liveAfter = Array.from({ length: steps }, () => 0);
    const still: number[] = [];
    live.forEach((i, row) => {
      const out = outputs[i]!;
      for (const { token, logprob } of sampled[row]!) {
        out.tokens.push(token);
        out.logprobs.push(logprob);
        if (req.stopIds.includes(token)) out.finishReason = 'stop';
      }
      const going = out.finishReason !== 'stop' && out.tokens.length < items[i]!.maxNewTokens;
      if (going) still.push(i);
      for (let j = 0; j < steps; j++) if (going || j + 1 < sampled[row]!.length) liveAfter[j]!++;
    });
    live = still;
    for (const n of liveAfter) req.onStep?.({ step: ++step, live: n });
  }
}
