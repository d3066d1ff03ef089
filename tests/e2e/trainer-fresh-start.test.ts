// Every run starts from the weights its model names, whatever the tab trained before (issue 25): one
// TrainerService trains echo (full fine-tuning, which changes every base weight in place), then catch
// (LoRA), then catch again (full); each catch run's first step must equal, bit for bit, the same run
// in a freshly loaded service. The demo model (it plays both tasks partly right, so echo's step moves the weights), no warm-up, one GRPO step each.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import type { RunOptions, UiStepEvent } from '../../workers/api.ts';
import { memoryRunStates } from '../../workers/run-states.ts';
import { TrainerService } from '../../workers/trainer-service.ts';
import { E2E_RUN_CONFIG } from './run-config.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

/** What differs between two identical runs: wall-clock and the memory meter. */
const MEASURED = new Set(['step_time', 'tokens_per_second', 'gpu_memory_mib']);

function reproducible(e: UiStepEvent): unknown {
  return { ...e, metrics: Object.fromEntries(Object.entries(e.metrics).filter(([k]) => !MEASURED.has(k))) };
}

describe('a run starts from its model, not from the previous run of the tab', () => {
  let server: EnvServer;
  const run = (runId: string, env: 'echo' | 'catch', train_mode: 'lora' | 'full', extra: Partial<RunOptions> = {}): RunOptions => ({
    runId,
    config: { ...E2E_RUN_CONFIG, train_mode, sft_steps: 0, max_steps: 1 },
    envUrl: `${server.url}/envs/${env}`,
    task: env,
    resume: false,
    ...extra,
  });
  const service = async (): Promise<TrainerService> => {
    const s = new TrainerService({ checkpoints: memoryRunStates() });
    await s.loadModel({ kind: 'demo' }, { onProgress: () => undefined });
    return s;
  };
  const firstStep = async (s: TrainerService, opts: RunOptions, onStep?: () => void): Promise<unknown> => {
    const steps: UiStepEvent[] = [];
    await s.train(opts, { onProgress: () => undefined, onStep: (e) => (steps.push(e), onStep?.()), onStatus: () => undefined });
    expect(steps.length).toBeGreaterThan(0);
    return reproducible(steps[0]!);
  };

  beforeAll(async () => {
    server = await createEnvServer({});
  });
  afterAll(async () => {
    await server?.close();
  });

  it('catch after echo (full) in one service equals catch in a fresh one, LoRA and full', async () => {
    const used = await service();
    const echo = (await firstStep(used, run('echo-full', 'echo', 'full'))) as UiStepEvent;
    // The echo step must move the weights, or the catch runs after it would prove nothing.
    expect(echo.metrics.grad_norm).toBeGreaterThan(0);
    const loraAfter = await firstStep(used, run('catch-lora', 'catch', 'lora'));
    const fullAfter = await firstStep(used, run('catch-full', 'catch', 'full'));
    const clean = { lora: await firstStep(await service(), run('catch-lora', 'catch', 'lora')), full: await firstStep(await service(), run('catch-full', 'catch', 'full')) };
    expect({ lora: loraAfter, full: fullAfter }).toEqual(clean);
  });

  it('a resume after echo (full) in one service continues exactly as the run would have without the stop', async () => {
    // A LoRA run of two steps, stopped after its first: its checkpoint holds the adapter after step 1.
    const twoSteps = { ...E2E_RUN_CONFIG, train_mode: 'lora', sft_steps: 0, max_steps: 2 };
    const first = await service();
    await firstStep(first, run('resumed', 'catch', 'lora', { config: twoSteps }), () => first.stop());
    expect(await first.checkpointStep('resumed')).toBe(1);

    const used = await service();
    await firstStep(used, run('echo-full', 'echo', 'full'));
    await used.importCheckpoint('resumed', (await first.exportCheckpoint('resumed'))!);
    const resumed = await firstStep(used, run('resumed', 'catch', 'lora', { config: twoSteps, resume: true }));

    const whole: UiStepEvent[] = [];
    await (await service()).train(run('whole', 'catch', 'lora', { config: twoSteps }), { onProgress: () => undefined, onStep: (e) => whole.push(e), onStatus: () => undefined });
    expect(resumed).toMatchObject({ step: 1 });
    expect(resumed).toEqual(reproducible(whole[1]!));
  });
});
