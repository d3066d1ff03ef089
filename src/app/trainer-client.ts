// The page side of the worker boundary: one trainer worker, wrapped by comlink.
import * as Comlink from 'comlink';
import type { TrainerWorkerApi } from '../../workers/api.ts';

let remote: Comlink.Remote<TrainerWorkerApi> | null = null;

export function trainer(): Comlink.Remote<TrainerWorkerApi> {
  if (!remote) {
    const worker = new Worker(new URL('../../workers/trainer.worker.ts', import.meta.url), { type: 'module', name: 'webgrpo-trainer' });
    remote = Comlink.wrap<TrainerWorkerApi>(worker);
  }
  return remote;
}

export const proxy = Comlink.proxy;
