// The two front ends of one launcher (src/rl/launch.ts) and one Run (src/rl/run.ts): `webgrpo train`
// (src/cli/train.ts, in-process, stdout captured) and the app's worker API (workers/trainer-service.ts) train the built-in tiny model
// with the same seed, config and env — the task resolved by the one resolver (tiny tier: catch plays
// as compact catch in both), the warm-up on the scripted solver's games — and emit the same steps with
// the same numbers: the same SFT losses and GRPO metrics, step for step (wall-clock metrics aside).

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import type { UiStepEvent } from '../../workers/api.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { configFromObject } from '../../src/rl/config.ts';
import { solverEpisodes } from '../../src/rl/tasks/resolve-task.ts';
import { TINY_MODEL_OPTIONS } from '../../workers/load-model.ts';
import { memoryRunStates } from '../../workers/run-states.ts';
import { TrainerService } from '../../workers/trainer-service.ts';
import { runTrainCli } from '../rl-learn/train-cli-run.ts';
import { E2E_RUN_CONFIG } from './run-config.ts';

const WALL_CLOCK = new Set(['step_time', 'tokens_per_second', 'gpu_memory_mib']);

function comparable(metrics: Record<string, unknown>): Record<string, unknown> {
  // JSON on both sides: a non-finite metric is null in the worker's events and on the CLI's lines.
  return JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(metrics).filter(([k]) => !WALL_CLOCK.has(k)))));
}

describe('one Run, two front ends', () => {
  let server: EnvServer;
  let dir = '';
  beforeAll(async () => {
    server = await createEnvServer({});
    dir = await mkdtemp(join(tmpdir(), 'webgrpo-parity-'));
  });
  afterAll(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the CLI and the worker emit the same steps and metrics for the same seed and config', async () => {
    // Every key spelled out: the CLI's task preset layer then has nothing left to set.
    const config = configFromObject(E2E_RUN_CONFIG);
    const service = new TrainerService({ checkpoints: memoryRunStates() });
    const info = await service.loadModel({ kind: 'tiny' }, { onProgress: () => undefined });
    const worker: UiStepEvent[] = [];
    await service.train(
      { runId: 'parity', config: { ...config }, envUrl: `${server.url}/envs/catch`, task: 'catch', resume: false },
      { onProgress: () => undefined, onStep: (e) => worker.push(e), onStatus: () => undefined },
    );

    const modelDir = join(dir, 'model');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(modelDir);
    for (const [name, bytes] of await makeTinyCheckpointFiles(TINY_MODEL_OPTIONS)) await writeFile(join(modelDir, name), bytes);
    await writeFile(join(dir, 'run.json'), JSON.stringify(config));
    const cli = await runTrainCli([
      '--model', modelDir, '--env', `${server.url}/envs/catch`, '--config', join(dir, 'run.json'), '--weight-dtype', info.weightDtype,
      '--sft-solver', 'catch-compact', '--sft-episodes', String(solverEpisodes(config)),
    ]);
    expect(cli.code).toBe(0);
    const cliSteps = cli.lines.filter((l) => l.phase === 'sft' || l.phase === 'grpo');

    const sft = config.sft_steps;
    const total = sft + config.max_steps;
    // One numbering: the CLI's 1-based run steps are the run store's rows 0… in the worker.
    expect(cliSteps.map((l) => [l.phase, l.step, l.total_steps])).toEqual(worker.map((e) => [e.phase, e.step + 1, e.totalSteps]));
    expect(worker.map((e) => e.step)).toEqual([...Array(total).keys()]);
    expect(cliSteps.filter((l) => l.phase === 'sft').map((l) => l.loss)).toEqual(worker.filter((e) => e.phase === 'sft').map((e) => e.metrics.loss));
    const cliGrpo = cliSteps.filter((l) => l.phase === 'grpo').map(({ phase: _p, step: _s, total_steps: _t, logs: _l, completions: _c, checkpoint: _k, unscorable: _u, ...metrics }) => comparable(metrics));
    const workerGrpo = worker.filter((e) => e.phase === 'grpo').map((e) => comparable(e.metrics));
    expect(cliGrpo).toHaveLength(config.max_steps);
    expect(cliGrpo).toEqual(workerGrpo);
  }, 400_000);
});
