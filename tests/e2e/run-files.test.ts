// The files a run leaves for the run store, from the trainer worker's API in Node (Dawn/SwiftShader):
// a fully fine-tuned tiny model exported in Hugging Face layout that our own loader opens again with
// the trained weights in it, and a run's trainer checkpoint packed as files and kept in another
// browser's storage, from where the run can resume.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import type { WorkerEvents } from '../../src/app/worker-api.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { TINY_MODEL_OPTIONS } from '../../workers/load-model.ts';
import { memoryRunCheckpoints } from '../../workers/run-checkpoints.ts';
import { CHECKPOINT_META_FILE, unpackCheckpoint } from '../../workers/run-files.ts';
import { TrainerService } from '../../workers/trainer-service.ts';
import { E2E_RUN_CONFIG } from './run-config.ts';

const quiet: WorkerEvents = { onProgress: () => undefined, onStep: () => undefined, onStatus: () => undefined };

describe('files kept with a run', { timeout: 300_000 }, () => {
  let server: EnvServer;
  const service = new TrainerService({ checkpoints: memoryRunCheckpoints() });

  beforeAll(async () => {
    server = await createEnvServer({});
    await service.loadModel({ kind: 'tiny' }, { onProgress: () => undefined });
    await service.train(
      { runId: 'full-1', config: { ...E2E_RUN_CONFIG, sft_steps: 1, max_steps: 1, train_mode: 'full' }, envUrl: `${server.url}/envs/catch`, envName: 'catch', sftSteps: 1, resume: false },
      quiet,
    );
  }, 300_000); // one SFT and one GRPO step of the tiny model on SwiftShader
  afterAll(async () => {
    await server?.close();
  });

  it('exports the fully fine-tuned model in Hugging Face layout, which loads again with the trained weights', async () => {
    const files = new Map((await service.exportModel()).map((f) => [f.name, f.bytes]));
    expect([...files.keys()]).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']));
    const exported = await openCheckpoint(files);
    const base = await openCheckpoint(await makeTinyCheckpointFiles(TINY_MODEL_OPTIONS));
    expect([...exported.tensors.keys()].sort()).toEqual([...base.tensors.keys()].sort());
    let changed = 0;
    for (const name of base.tensors.keys()) {
      const [a, b] = [await base.readTensor(name), await exported.readTensor(name)];
      expect(b.length, name).toBe(a.length);
      if (Buffer.compare(Buffer.from(a), Buffer.from(b)) !== 0) changed++;
    }
    // An SFT step (a GRPO step of equal rewards has no gradient) moves most weights; none went missing.
    expect(changed).toBeGreaterThan(base.tensors.size / 2);
  });

  it('packs the run checkpoint as files another browser keeps and resumes from', async () => {
    const packed = await service.exportCheckpoint('full-1');
    expect(packed).not.toBeNull();
    expect(packed!.map((f) => f.name)).toContain(CHECKPOINT_META_FILE);
    expect(await service.exportCheckpoint('no-such-run')).toBeNull();
    const elsewhere = new TrainerService({ checkpoints: memoryRunCheckpoints() });
    expect(await elsewhere.checkpointStep('full-1')).toBeNull();
    expect(await elsewhere.importCheckpoint('full-1', packed!)).toBe(2);
    expect(await elsewhere.checkpointStep('full-1')).toBe(2);
    expect(() => unpackCheckpoint(packed!.filter((f) => f.name !== CHECKPOINT_META_FILE))).toThrow(/run-checkpoint.json is missing/);
  });
});
