// The worker's Evaluate after full fine-tuning (issue 37): the engine's base weights were trained in
// place, so the base is played from the starting weights uploaded again, on the same held-out games,
// and the trained weights are put back afterwards. Checked against a tab that never trained: its
// "trained" is the base, so the base of the fine-tuned tab must play exactly as it does.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import type { WorkerEvents } from '../../workers/api.ts';
import { parseSafetensors } from '../../src/model/safetensors.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { TINY_MODEL_OPTIONS } from '../../workers/load-model.ts';
import { memoryRunStates } from '../../workers/run-states.ts';
import { TrainerService } from '../../workers/trainer-service.ts';
import { E2E_RUN_CONFIG } from './run-config.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const CONFIG = { ...E2E_RUN_CONFIG, train_mode: 'full', sft_steps: 1, max_steps: 1 };
const events: WorkerEvents = { onProgress: () => undefined, onStep: () => undefined, onStatus: () => undefined };

describe('Evaluate after full fine-tuning (Node)', () => {
  let server: EnvServer;
  beforeAll(async () => {
    server = await createEnvServer({});
  });
  afterAll(async () => {
    await server?.close();
  });

  it('plays the starting weights as the base and keeps the trained weights', async () => {
    const request = { envUrl: `${server.url}/envs/catch`, task: 'catch', episodes: 3, config: CONFIG };
    const fresh = new TrainerService({ checkpoints: memoryRunStates() });
    await fresh.loadModel({ kind: 'tiny' }, events);
    const untrained = await fresh.evaluate(request);

    const tab = new TrainerService({ checkpoints: memoryRunStates() });
    await tab.loadModel({ kind: 'tiny' }, events);
    await tab.train({ runId: 'full', config: CONFIG, envUrl: request.envUrl, task: 'catch', resume: false }, events);
    const before = await tab.exportModel();
    const progress: string[] = [];
    const result = await tab.evaluate(request, { onProgress: (p) => progress.push(`${p.policy} ${p.done}/${p.total}`) });
    // The base here is the untouched model: the same games played the same way as in the tab that never trained.
    expect(result.trajectories.base).toEqual(untrained.trajectories.base);
    expect(result.base).toEqual(untrained.base);
    // Training (an SFT step, which always moves them) changed the weights: the base above was not the engine as trained.
    const tiny = [...(await makeTinyCheckpointFiles(TINY_MODEL_OPTIONS))].map(([name, bytes]) => ({ name, bytes }));
    const tensor = (files: { name: string; bytes: Uint8Array }[], name: string) => {
      const bytes = files.find((f) => f.name === 'model.safetensors')!.bytes;
      const t = parseSafetensors(bytes).tensors.find((x) => x.name === name)!;
      return Buffer.from(bytes.subarray(t.fileOffset, t.fileOffset + t.byteLength));
    };
    const probe = 'model.layers.0.mlp.down_proj.weight';
    expect(tensor(before, probe).equals(tensor(tiny, probe))).toBe(false);
    expect(result.paired.success.episodes).toBe(3);
    expect(progress).toContain('trained 3/3');
    expect(progress).toContain('base 3/3');
    // The trained weights are back: the exported model is byte for byte what it was.
    const after = await tab.exportModel();
    expect(after.map((f) => f.name)).toEqual(before.map((f) => f.name));
    for (let i = 0; i < before.length; i++) expect(Buffer.from(after[i]!.bytes).equals(Buffer.from(before[i]!.bytes)), before[i]!.name).toBe(true);
  });
});
