// A stand-in for the engine that models what the scheduler equivalence rests on: like the GPU sampler,
// the token at position p is a function of (seed, stream, p, the sequence's own tokens) only — here, a
// turn's text is drawn from the policy's candidates by a hash of (seed, stream, turn start, context), then
// emitted one token per decode step. It decodes step by step (calling onStep like the engine), may yield
// to the event loop between steps (GPU time), and records every step's batch.

import type { DecodeSession, DecodeSessionOptions, GenerateOutput, GenerateRequest, SequenceHandle } from '../../src/engine/types.ts';
import { decodeOverGenerate } from './decode-over-generate.ts';
import type { TextTokenizer } from '../../src/model/tokenizer.ts';
import type { RolloutEngine } from '../../src/rl/rollout/rollout.ts';
import { hashInts } from '../../src/rl/seeds.ts';

/** The texts the policy may answer with in this context (one is drawn per turn). */
export type CandidatePolicy = (context: string) => string[];

interface Seq {
  tokens: number[];
  /** Tokens of the turn being sampled and where it started. */
  turn: number[];
  turnStart: number;
}

function hashTokens(tokens: readonly number[]): number {
  let h = 0;
  for (const t of tokens) h = hashInts(h, t);
  return h;
}

export class SamplingFakeEngine implements RolloutEngine {
  readonly config: { maxPositionEmbeddings: number };
  private readonly seqs = new Map<number, Seq>();
  private nextId = 1;
  /** Per decode step: the sequences it fed and whether each joined with appended tokens. */
  readonly steps: { seq: number; joined: boolean }[][] = [];
  /** Called at every decode step (tests read env state there). */
  onDecodeStep: () => void = () => undefined;

  constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly policy: CandidatePolicy,
    /** maxBatch: the memory plan's sequence count; a generate call over it, or a sequence past it, throws. */
    private readonly opts: { stepDelayMs?: number; maxPositionEmbeddings?: number; maxBatch?: number } = {},
  ) {
    this.config = { maxPositionEmbeddings: opts.maxPositionEmbeddings ?? 40960 };
  }

  newSequence(): SequenceHandle {
    if (this.opts.maxBatch !== undefined && this.seqs.size >= this.opts.maxBatch) throw new Error(`a sequence past the cap: ${this.seqs.size} live, cap ${this.opts.maxBatch}`);
    const id = this.nextId++;
    const s: Seq = { tokens: [], turn: [], turnStart: 0 };
    this.seqs.set(id, s);
    return { id, get length() { return s.tokens.length; } };
  }

  releaseSequence(seq: SequenceHandle): void {
    if (!this.seqs.delete(seq.id)) throw new Error(`sequence ${seq.id} released twice or never created`);
  }

  get liveSequences(): number {
    return this.seqs.size;
  }

  openDecode(opts: DecodeSessionOptions): DecodeSession {
    return decodeOverGenerate((req) => this.generate(req), opts);
  }

  async generate(req: GenerateRequest): Promise<GenerateOutput[]> {
    if (this.opts.maxBatch !== undefined && req.items.length > this.opts.maxBatch) throw new Error(`an engine batch of ${req.items.length} sequences, over the cap ${this.opts.maxBatch}`);
    const { seed } = req.sampling;
    const items = req.items.map((item, i) => {
      const s = this.seqs.get(item.seq.id);
      if (!s) throw new Error(`generate on unknown sequence ${item.seq.id}`);
      if (item.maxNewTokens < 1) throw new Error('maxNewTokens must be ≥ 1');
      const stream = item.stream ?? i;
      if (item.append.length > 0) {
        // A new turn: the sampled text is a pure function of (seed, stream, position, context).
        s.tokens.push(...item.append);
        s.turnStart = s.tokens.length;
        const candidates = this.policy(this.tokenizer.decode(s.tokens));
        const pick = hashInts(seed, stream, s.turnStart, hashTokens(s.tokens)) % candidates.length;
        s.turn = this.tokenizer.encode(candidates[pick]!);
      }
      return { s, stream, joined: item.append.length > 0, out: { tokens: [] as number[], logprobs: [] as number[], finishReason: 'length' as 'stop' | 'length' }, max: item.maxNewTokens };
    });
    let live = items.filter(() => true);
    let step = 0;
    while (live.length > 0) {
      this.steps.push(live.map((x) => ({ seq: [...this.seqs].find(([, v]) => v === x.s)![0], joined: x.joined && x.out.tokens.length === 0 })));
      this.onDecodeStep();
      if (this.opts.stepDelayMs !== undefined) await new Promise((r) => setTimeout(r, this.opts.stepDelayMs));
      live = live.filter((x) => {
        const p = x.s.tokens.length;
        const k = p - x.s.turnStart;
        const id = k < x.s.turn.length ? x.s.turn[k]! : this.tokenizer.eosTokenId;
        x.s.tokens.push(id);
        x.out.tokens.push(id);
        x.out.logprobs.push(-(hashInts(seed, x.stream, p) % 1000) / 1000);
        if (req.stopIds.includes(id)) {
          x.out.finishReason = 'stop';
          return false;
        }
        return x.out.tokens.length < x.max;
      });
      req.onStep?.({ step: ++step, live: live.length });
    }
    return items.map((x) => x.out);
  }
}
