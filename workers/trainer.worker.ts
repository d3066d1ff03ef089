// The trainer Web Worker: the engine, the model and the training loop live here so the page never
// blocks. The page talks to it through comlink (src/app/trainer-client.ts) with the TrainerWorkerApi
// contract; checkpoints go to IndexedDB so a reloaded tab can resume its run.
import * as Comlink from 'comlink';
import type { TrainerWorkerApi } from './api.ts';
import { indexedDbRunStates } from './run-states.ts';
import { TrainerService } from './trainer-service.ts';

const api: TrainerWorkerApi = new TrainerService({ checkpoints: indexedDbRunStates() });
Comlink.expose(api);
