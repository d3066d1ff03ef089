// What `train --train_mode full --output OUT` leaves besides its trainer checkpoints: OUT/model/, the
// trained model as a Hugging Face folder (src/export/full-model.ts, the app's export), written at
// every checkpoint save and once more at the end (or on Ctrl-C) when steps ran after the last save.
// Written beside and renamed into place, so a crash mid-write never leaves half a model there.

import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Engine } from '../engine/types.ts';
import { fullModelFiles } from '../export/full-model.ts';
import type { OpenedCheckpoint } from '../model/checkpoint.ts';
import type { TrainedChat } from '../export/trained-chat.ts';
import type { RunStateStore } from '../rl/run-state.ts';
import type { RunEvent } from '../rl/run.ts';

export const MODEL_FOLDER = 'model';

export interface FullModelFolder {
  /** `inner`, also writing OUT/model at every save (the engine holds the saved weights then). */
  saving(inner: RunStateStore): RunStateStore;
  /** Told every run event: a step with no checkpoint leaves OUT/model behind the engine. */
  observe(e: RunEvent): void;
  /** Writes OUT/model unless the last save already holds the engine's weights; returns its path. */
  finish(): Promise<string>;
}

export function fullModelFolder(engine: Pick<Engine, 'saveState'>, checkpoint: OpenedCheckpoint, output: string, chat: TrainedChat): FullModelFolder {
  const target = join(output, MODEL_FOLDER);
  let current = false;
  const write = async (): Promise<void> => {
    const files = await fullModelFiles(engine, checkpoint, chat);
    const partial = `${target}.partial`;
    await rm(partial, { recursive: true, force: true });
    await mkdir(partial, { recursive: true });
    for (const f of files) await writeFile(join(partial, f.name), f.bytes);
    await rm(target, { recursive: true, force: true });
    await rename(partial, target);
    current = true;
  };
  return {
    saving: (inner) => ({
      async save(ckpt) {
        const where = await inner.save(ckpt);
        await write();
        return where;
      },
    }),
    observe(e) {
      if (e.phase === 'status') return;
      // Any step moves the weights past OUT/model, unless its own checkpoint (saved before the event) rewrote it.
      current = e.phase === 'grpo' && e.checkpoint !== undefined;
    },
    async finish() {
      if (!current) await write();
      return target;
    },
  };
}
