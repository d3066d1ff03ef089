import { defineConfig } from 'vitest/config';
import TimingsSequencer from './tests/timings-sequencer.ts';

// Node-side tests, grouped by cost as vitest projects (`npx vitest run --project NAME` runs one group):
//  - unit: everything not named below — no WebGPU device, no Chromium training; seconds a file.
//  - gpu-swiftshader, gpu-lavapipe: the engine against the float64 reference, once per CPU adapter.
//  - learning: Node runs of the real engine that train (the CLI, the worker's service, the demo
//    presets' learning), on lavapipe, the faster CPU adapter (~3.4× SwiftShader on the same work).
//  - browser: Chromium drives the app or the engine in a page (WebGPU on Chromium's SwiftShader).
//  - serial: tests whose numbers depend on the whole machine being theirs (renderer memory and CPU
//    deadlines, sandboxed Chromium as another user, the default ports 8000–8019) or that load it on
//    purpose (CPU hogs); they run one at a time after the rest (maxWorkers 1: vitest puts such a
//    project in its own, last group). Tests that read only what they own (a server process they
//    spawned: its RSS and fds, on a port of its own) stay where their cost puts them.
// GPU tests use Dawn (`webgpu` package) on a CPU Vulkan driver, which is slow and native: files run in
// forked processes (not threads). Tests fail fast (30 s); the GPU projects allow 600 s, and the
// browser and training files that need longer set their own timeouts at their top (vi.setConfig).
// WEBGPU_ADAPTER pins src/engine/gpu.ts to a driver and makes a missing one an error, never a skip
// (.ci/run installs both). Every run merges per-file times into tests/timings.json
// (tests/timings-reporter.ts); the slowest files start first (tests/timings-sequencer.ts).
const GPU_TESTS = [
  'tests/engine/forward-variants.test.ts',
  'tests/engine/generate.test.ts',
  'tests/engine/score-parity.test.ts',
  'tests/engine/train-chunked-f16.test.ts',
  'tests/engine/train-entropy.test.ts',
  'tests/engine/train-grad-parity.test.ts',
  'tests/engine/train-optimizer.test.ts',
  'tests/engine/train-stop.test.ts',
  'tests/engine/linear-attention-kernels.test.ts',
  'tests/engine/qwen3_5-score*.test.ts', // qwen3_5-score, qwen3_5-score-tokenizer
  'tests/engine/qwen3_5-generate.test.ts',
  'tests/engine/qwen3_5-train.test.ts',
  'tests/engine/qwen3_5-vision.test.ts',
  'tests/engine/qwen3_5-vision-train.test.ts',
  'tests/engine/qwen3_5-vision-full.test.ts',
  'tests/engine/gpu-*.test.ts', // gpu-f16, gpu-memory, gpu-bench-counts, …
  'tests/unit/gpu.test.ts',
];

const LEARNING_TESTS = [
  'tests/rl-learn/demo-learns-*.test.ts', // the demo presets learn: the README's numbers
  'tests/rl-learn/learning.test.ts',
  'tests/rl-learn/train-cli.test.ts',
  'tests/rl-learn/train-cli-qwen3_5.test.ts',
  'tests/rl-learn/train-full-model.test.ts',
  'tests/rl-learn/train-mcp-cli.test.ts',
  'tests/rl-learn/train-signal.test.ts',
  'tests/rl-learn/train-stop-mid-step.test.ts',
  'tests/rl-vision/train-vlm.test.ts',
  'tests/e2e/cli-worker-parity.test.ts',
  'tests/e2e/trainer-*.test.ts', // trainer-service, trainer-load, trainer-fresh-start
  'tests/e2e/run-files.test.ts',
  'tests/rl-learn/train-silent-steps.test.ts',
  'tests/rl-learn/eval-*.test.ts', // webgrpo eval and the trainer's eval loop on the demo model
];

const BROWSER_TESTS = [
  'tests/browser/*.test.ts',
  'tests/e2e/app*.test.ts',
  'tests/e2e/demo-learns-*.test.ts',
  'tests/model/browser-hub.test.ts',
  'tests/openenv/browser-client.test.ts',
  'tests/export/transformers-js.test.ts',
  'tests/export/deploy-page.test.ts',
];

const SERIAL_TESTS = [
  'tests/hostile/browsergym-bounds.test.ts', // renderer memory limits, 1 s action and 6 s step deadlines
  'tests/hostile/browsergym-sandbox.test.ts', // Chromium sandboxed as `nobody`: user namespaces, seccomp
  'tests/server/start-port.test.ts', // `webgrpo start` on the default ports 8000–8019
  'tests/server/start-first-screen.test.ts', // builds the app (vite) while it reads the first screen
  'tests/hostile/run-store-load.test.ts', // /health within 2 s under an import and three big reads
  'tests/hostile/model-files.test.ts', // render fails within 60 s, train stops within 15 s of SIGTERM
  'tests/hostile/upstream-replies.test.ts', // the server's RSS under hostile upstream frames
  'tests/hostile/browsergym-tabs.test.ts', // Chromium's memory after 200 middle clicks
  'tests/envs/browsergym-load.test.ts', // 8 CPU hogs of its own (they would slow every file beside it); /health within 1.5 s
];

const gpuProject = (adapter: 'swiftshader' | 'lavapipe') => ({
  extends: true as const,
  test: {
    name: `gpu-${adapter}`,
    include: GPU_TESTS,
    env: { WEBGPU_ADAPTER: adapter },
    testTimeout: 600_000,
    hookTimeout: 600_000,
  },
});

export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default', './tests/timings-reporter.ts'],
    sequence: { sequencer: TimingsSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['tests/**/*.test.ts'],
          exclude: [...GPU_TESTS, ...LEARNING_TESTS, ...BROWSER_TESTS, ...SERIAL_TESTS, '**/node_modules/**'],
        },
      },
      gpuProject('swiftshader'),
      gpuProject('lavapipe'),
      { extends: true, test: { name: 'learning', include: LEARNING_TESTS, env: { WEBGPU_ADAPTER: 'lavapipe' } } },
      // The app is built once for the whole project (tests/e2e/app-build.global.ts), not once per file.
      // Chromium launched by the files themselves runs Dawn without bounds clamping (~1.6× faster
      // training on SwiftShader); the engine harness keeps it (bench/browser/harness.ts launchChromium).
      {
        extends: true,
        test: { name: 'browser', include: BROWSER_TESTS, globalSetup: ['tests/e2e/app-build.global.ts'], env: { CHROMIUM_DAWN_FEATURES: 'disable_robustness' } },
      },
      // One file at a time, and only after every other project (groupOrder 1): they measure the machine.
      { extends: true, test: { name: 'serial', include: SERIAL_TESTS, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
