// An engine whose generation can be cut short: once `stopped()` says so, a generate call in flight
// throws an AbortError at its next decode step, as does a decode session's next step (and a new one throws at once), so stopping a run takes
// one decode step, not the rest of a generation batch. Everything else reaches the engine unchanged.
// The trainer treats an aborted generation as never played (src/rl/grpo/trainer.ts collectGeneration):
// nothing of it was applied, and the checkpoint is the one after the last finished step.

import type { DecodeSessionOptions, Engine, GenerateRequest } from './types.ts';

function abortError(): Error {
  const err = new Error('stopped');
  err.name = 'AbortError';
  return err;
}

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
  return new Proxy(engine, {
    get(target, prop) {
      if (prop === 'generate') return generate;
      if (prop === 'openDecode') return openDecode;
      const value: unknown = Reflect.get(target, prop, target);
      // Methods run on the engine itself (its private fields are not the proxy's).
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
