// THE learning test (issue 4): the built-in demo model (models/demo: the tiny Qwen3 after a short,
// deliberately imperfect SFT on scripted catch and echo games) on the real WebGPU engine — SwiftShader
// here — trained with GRPO against the built-in catch env with the demo preset's settings, ends with a
// higher catch rate than it started. Fixed seeds throughout. Starting from the shipped model (rather
// than warming up a random one here) keeps this test to GRPO steps only.

import { afterAll, describe, expect, it, vi } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import type { Engine } from '../../src/engine/types.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { demoModelFiles } from '../../src/model/demo-model.ts';
import { loadTokenizer } from '../../src/model/tokenizer.ts';
import { COMPACT_CATCH_TASK } from '../../src/rl/compact-catch.ts';
import { configFromObject } from '../../src/rl/config.ts';
import { runExample, type RunEvent } from '../../src/rl/run-example.ts';
import { presetConfig } from '../../src/rl/presets.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 1_200_000, hookTimeout: 600_000 });

let server: EnvServer | null = null;
let engine: Engine | null = null;
afterAll(async () => {
  engine?.destroy();
  await server?.close();
});

const SEED = 42;

describe('learning', () => {
  it('GRPO on catch raises the catch rate of the built-in demo model', async () => {
    const files = await demoModelFiles();
    const text = (name: string) => new TextDecoder().decode(files.get(name)!);
    const tokenizer = loadTokenizer(text('tokenizer.json'), text('tokenizer_config.json'));
    engine = await loadEngine(await openCheckpoint(files), { weightDtype: 'f32' });
    server = await createEnvServer({ port: 0 });
    const catchUrl = `${server.url}/envs/catch`;
    const config = configFromObject(LEARNING_CONFIG);

    const events: RunEvent[] = [];
    for await (const e of runExample({ engine, tokenizer, task: COMPACT_CATCH_TASK, envUrls: { catch: catchUrl }, config })) events.push(e);

    const grpo = events.flatMap((e) => (e.phase === 'grpo' ? [e.metrics] : []));
    expect(grpo).toHaveLength(config.max_steps);
    const mean = (key: string, from: number, to?: number) => {
      const xs = grpo.slice(from, to).map((m) => m[key]!);
      return xs.reduce((a, b) => a + b, 0) / xs.length;
    };
    const caught = grpo.map((m) => m['rewards/caught/mean']!.toFixed(2)).join(' ');
    // The total reward (caught + progress) and the catch rate alone both end higher than they started.
    expect(mean('reward', -WINDOW), caught).toBeGreaterThan(mean('reward', 0, WINDOW));
    expect(mean('rewards/caught/mean', -WINDOW), caught).toBeGreaterThan(mean('rewards/caught/mean', 0, WINDOW));
  }); // minutes on SwiftShader; the outcome is seeded, only the time varies with load
});

/** Steps averaged at each end of the GRPO run. */
const WINDOW = 3;
const LEARNING_CONFIG = {
  ...presetConfig('catch', 'tiny'),
  seed: SEED,
  max_steps: 10,
  save_steps: 0,
};
