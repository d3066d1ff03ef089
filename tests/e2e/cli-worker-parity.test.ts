// The CLI path (src/rl/run-example.ts, what `webgrpo train` runs) and the app's worker path
// (workers/trainer-service.ts) train the same run — same model, seed, config, env and scripted SFT
// data — and must report the same metrics, step for step (wall-clock metrics aside).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import type { StepEvent } from '../../src/app/worker-api.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import type { Engine } from '../../src/engine/types.ts';
import { COMPACT_CATCH_TASK } from '../../src/rl/tasks/compact-catch.ts';
import { configFromObject } from '../../src/rl/config.ts';
import { runExample, type RunEvent } from '../../src/rl/run-example.ts';
import { plannedWorkload } from '../../src/rl/run.ts';
import { compactCatchTranscripts } from '../../src/rl/tasks/solvers.ts';
import { loadModelChoice } from '../../workers/load-model.ts';
import { memoryRunCheckpoints } from '../../workers/run-checkpoints.ts';
import { solverEpisodes } from '../../workers/run-task.ts';
import { TrainerService } from '../../workers/trainer-service.ts';
import { E2E_RUN_CONFIG } from './run-config.ts';

const WALL_CLOCK = new Set(['step_time', 'tokens_per_second', 'gpu_memory_mib']);

function comparable(metrics: Record<string, number | null>): Record<string, number | null> {
  return Object.fromEntries(Object.entries(metrics).filter(([k]) => !WALL_CLOCK.has(k)));
}

describe('one run, two front ends', () => {
  let server: EnvServer;
  let engine: Engine | null = null;
  beforeAll(async () => {
    server = await createEnvServer({});
  });
  afterAll(async () => {
    engine?.destroy();
    await server?.close();
  });

  it('the CLI path and the worker path report the same metrics for the same seed and config', async () => {
    const envUrl = `${server.url}/envs/catch`;
    const runConfig: Record<string, unknown> = { ...E2E_RUN_CONFIG, max_steps: 3 };

    const service = new TrainerService({ checkpoints: memoryRunCheckpoints() });
    await service.loadModel({ kind: 'tiny' }, { onProgress: () => undefined });
    const workerSteps: StepEvent[] = [];
    await service.train(
      { runId: 'parity', config: runConfig, envUrl, envName: 'catch', sftSteps: Number(runConfig.sft_steps), resume: false },
      { onProgress: () => undefined, onStep: (e) => workerSteps.push(e), onStatus: () => undefined },
    );

    const config = configFromObject(runConfig);
    const loaded = await loadModelChoice({ kind: 'tiny' }, () => undefined);
    engine = await loadEngine(loaded.checkpoint);
    const transcripts = await compactCatchTranscripts({ baseUrl: envUrl, episodes: solverEpisodes(config), seed: config.seed });
    const cliEvents: RunEvent[] = [];
    for await (const e of runExample({ engine, tokenizer: loaded.tokenizer, task: COMPACT_CATCH_TASK, envUrls: { catch: envUrl }, config, transcripts, maxBatchSize: plannedWorkload(config).numSequences })) cliEvents.push(e);

    const workerSft = workerSteps.filter((s) => s.phase === 'sft').map((s) => s.metrics.loss);
    const cliSft = cliEvents.flatMap((e) => (e.phase === 'sft' ? [e.loss] : []));
    expect(cliSft).toHaveLength(config.sft_steps);
    expect(workerSft).toEqual(cliSft);
    const workerGrpo = workerSteps.filter((s) => s.phase === 'grpo').map((s) => comparable(s.metrics));
    const cliGrpo = cliEvents.flatMap((e) => (e.phase === 'grpo' ? [comparable(Object.fromEntries(Object.entries(e.metrics).map(([k, v]) => [k, Number.isFinite(v) ? v : null])))] : []));
    expect(cliGrpo).toHaveLength(3);
    expect(workerGrpo).toEqual(cliGrpo);
  }, 300_000);
});
