// The fake engines' decode session: each step is one generate() call sampling one token per item, so
// a fake written against generate() serves the continuous scheduler with the same semantics.
import type { DecodeSession, DecodeSessionOptions, GenerateRequest, GenerateOutput } from '../../src/engine/types.ts';

export function decodeOverGenerate(generate: (req: GenerateRequest) => Promise<GenerateOutput[]>, opts: DecodeSessionOptions): DecodeSession {
  return {
    step: async (items) => {
      const outputs = await generate({ items: items.map((item) => ({ ...item, maxNewTokens: 1 })), sampling: opts.sampling, stopIds: [] });
      return outputs.map((o) => ({ token: o.tokens[0]!, logprob: o.logprobs[0]! }));
    },
    close: async () => undefined,
  };
}
