// The app's worker fine-tunes every weight on the adapter it gets: on an adapter with shader-f16
// (lavapipe, most GPUs) it may hold f16 weights (asked for, or a 16-bit checkpoint), and full
// fine-tuning must train f32 master weights rather than refuse them (issue 11). The same worker API
// the browser tab drives, in Node.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import type { UiStepEvent } from '../../workers/api.ts';
import { memoryRunStates } from '../../workers/run-states.ts';
import { TrainerService } from '../../workers/trainer-service.ts';
import { E2E_RUN_CONFIG } from '../e2e/run-config.ts';
import { ADAPTER, onAdapter } from './helpers.ts';

describe(onAdapter('trainer worker: full fine-tuning'), () => {
  let server: EnvServer;
  beforeAll(async () => { server = await createEnvServer({}); });
  afterAll(async () => { await server?.close(); });

  it('trains a GRPO step of full fine-tuning on the weights the adapter loads (f16 where it has shader-f16 and they are asked for)', async () => {
    const service = new TrainerService({ checkpoints: memoryRunStates() });
    const probe = await service.probe();
    // The built-in model is f32, which `auto` keeps: f16 is asked for where the adapter has shader-f16.
    const info = await service.loadModel({ kind: 'tiny', weightDtype: probe.f16 ? 'f16' : 'auto' }, { onProgress: () => undefined });
    expect(info.weightDtype).toBe(probe.f16 ? 'f16' : 'f32');
    if (ADAPTER === 'lavapipe') expect(info.weightDtype).toBe('f16');
    const steps: UiStepEvent[] = [];
    const statuses: string[] = [];
    await service.train({
      runId: 'full-ft',
      config: { ...E2E_RUN_CONFIG, train_mode: 'full', sft_steps: 0, max_steps: 1, learning_rate: 1e-4 },
      envUrl: `${server.url}/envs/catch`,
      task: 'catch',
      resume: false,
    }, { onProgress: () => undefined, onStep: (e) => steps.push(e), onStatus: (s) => statuses.push(s.status) });
    expect(statuses).toEqual(['running', 'finished']);
    expect(steps).toHaveLength(1);
    expect(Number.isFinite(steps[0]!.metrics.grad_norm)).toBe(true);
  });
});
