// An engine whose long calls can be cut short: once `stopped()` says so, a generate call in flight
// throws an AbortError at its next decode step, as does a decode session's next step (and a new one
// throws at once); a score or backward call in flight throws one at its next layer boundary, once the
// GPU finished the layer before it (ScoreRequest.stopped). So stopping a run takes one decode step or
// one layer, not the rest of a generation batch or of a pass over thousands of tokens. Everything else
// reaches the engine unchanged: an optimizer step, a state save or load is never cut.
// The trainer treats a call cut short as a step never taken (src/rl/grpo/trainer.ts): nothing of it was
// applied (a cut backward's partial gradients are never stepped on), and the checkpoint is the one after
// the last finished step.

import { abortError } from './recorder.ts';
import type { BackwardRequest, DecodeSessionOptions, Engine, GenerateRequest, ScoreRequest } from './types.ts';

export function stoppableEngine(engine: Engine, stopped: () => boolean): Engine {
  const generate = (req: GenerateRequest) => {
    if (stopped()) return Promise.reject(abortError());
    return engine.generate({
      ...req,
      onStep: (info) => {
        req.onStep?.(info);
        if (stopped()) throw abortError();
      },
    });
  };
  const openDecode = (opts: DecodeSessionOptions) => {
    const session = engine.openDecode(opts);
    return {
      step: (...args: Parameters<typeof session.step>) => (stopped() ? Promise.reject(abortError()) : session.step(...args)),
      close: () => session.close(),
    };
  };
  // The request's own check, if it has one, still counts.
  const check = (req: ScoreRequest) => (req.stopped ? () => stopped() || req.stopped!() : stopped);
  const score = (req: ScoreRequest) => engine.score({ ...req, stopped: check(req) });
  const backward = (req: BackwardRequest) => engine.backward({ ...req, stopped: check(req) });
  return new Proxy(engine, {
    get(target, prop) {
      if (prop === 'generate') return generate;
      if (prop === 'openDecode') return openDecode;
      if (prop === 'score') return score;
      if (prop === 'backward') return backward;
      const value: unknown = Reflect.get(target, prop, target);
      // Methods run on the engine itself (its private fields are not the proxy's).
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * An engine call cut short by a stop (this engine rejects with an AbortError), rather than one that
 * failed: the run's segment signal is aborted too, as a stop aborts it.
 */
export function cutByStop(err: unknown, signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && err instanceof Error && err.name === 'AbortError';
}
