// The fake engines' decode session: each call is one generate() call sampling `steps` tokens per item
// (fewer after a stop id), so a fake written against generate() serves the continuous scheduler.
import type { DecodeSession, DecodeSessionOptions, GenerateRequest, GenerateOutput } from '../../src/engine/types.ts';

export function decodeOverGenerate(generate: (req: GenerateRequest) => Promise<GenerateOutput[]>, opts: DecodeSessionOptions): DecodeSession {
  return {
    step: async (items, steps = 1) => {
      const outputs = await generate({ items: items.map((item) => ({ ...item, maxNewTokens: steps })), sampling: opts.sampling, stopIds: opts.stopIds });
      return outputs.map((o) => o.tokens.map((token, i) => ({ token, logprob: o.logprobs[i]! })));
    },
    close: async () => undefined,
  };
}
