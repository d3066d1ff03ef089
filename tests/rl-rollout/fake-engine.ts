// A scripted stand-in for the engine's generate API: a "policy" maps the full token context of a
// sequence to the text of its next turn. It checks the KV-cache contract the rollout relies on
// (prompt first, then only suffixes appended to what was generated) and records every batch.

import type { DecodeSession, DecodeSessionOptions, GenerateOutput, GenerateRequest, SequenceHandle } from '../../src/engine/types.ts';
import { decodeOverGenerate } from './decode-over-generate.ts';
import type { TextTokenizer } from '../../src/model/tokenizer.ts';
import type { RolloutEngine } from '../../src/rl/rollout/rollout.ts';

export type ScriptedPolicy = (context: string) => string;

export class FakeEngine implements RolloutEngine {
  readonly config: { maxPositionEmbeddings: number };
  /** Tokens of each live sequence (prompt + generated + appended). */
  readonly sequences = new Map<number, number[]>();
  readonly released: number[] = [];
  /** Per generate call: the sequence ids of its items and their maxNewTokens. */
  readonly batches: { seq: number; maxNewTokens: number }[][] = [];
  readonly seeds: number[] = [];
  private nextId = 1;

  constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly policy: ScriptedPolicy,
    maxPositionEmbeddings = 40960,
  ) {
    this.config = { maxPositionEmbeddings };
  }

  newSequence(): SequenceHandle {
    const id = this.nextId++;
    const tokens: number[] = [];
    this.sequences.set(id, tokens);
    return {
      id,
      get length() {
        return tokens.length;
      },
    };
  }

  releaseSequence(seq: SequenceHandle): void {
    if (!this.sequences.delete(seq.id)) throw new Error(`sequence ${seq.id} released twice or never created`);
    this.released.push(seq.id);
  }

  openDecode(opts: DecodeSessionOptions): DecodeSession {
    return decodeOverGenerate((req) => this.generate(req), opts);
  }

  async generate(req: GenerateRequest): Promise<GenerateOutput[]> {
    this.batches.push(req.items.map((item) => ({ seq: item.seq.id, maxNewTokens: item.maxNewTokens })));
    this.seeds.push(req.sampling.seed);
    return req.items.map((item) => {
      const tokens = this.sequences.get(item.seq.id);
      if (!tokens) throw new Error(`generate on unknown sequence ${item.seq.id}`);
      if (item.maxNewTokens < 1) throw new Error('maxNewTokens must be ≥ 1');
      tokens.push(...item.append);
      const full = this.tokenizer.encode(this.policy(this.tokenizer.decode(tokens)));
      let out = full.slice(0, item.maxNewTokens);
      const stop = out.findIndex((t) => req.stopIds.includes(t));
      if (stop >= 0) out = out.slice(0, stop + 1);
      tokens.push(...out);
      return {
        tokens: out,
        logprobs: out.map((_, i) => -(i + 1) / 100),
        finishReason: stop >= 0 ? ('stop' as const) : ('length' as const),
      };
    });
  }
}

export function callText(name: string, args: Record<string, unknown>): string {
  return `<tool_call>\n${JSON.stringify({ name, arguments: args }).replace(/":/g, '": ').replace(/,"/g, ', "')}\n</tool_call>`;
}
