import { defineConfig } from 'vitest/config';

// Node-side tests. GPU tests use Dawn (`webgpu` package) on a CPU Vulkan driver, which is slow and
// native: run files in forked processes (not threads). Tests fail fast (30 s); the GPU projects allow
// 600 s, and the browser and CLI files that need longer set their own timeouts at their top
// (vi.setConfig).
//
// The engine's GPU tests run once per adapter, as two projects: SwiftShader (no shader-f16,
// subgroups of 4, 1 GiB bindings) and Mesa's lavapipe (shader-f16, subgroups of 8, 128 MiB
// bindings, like many real GPUs). WEBGPU_ADAPTER pins src/engine/gpu.ts to that driver and makes a
// missing one an error, never a skip (.ci/run installs both). Every other file runs once, in `unit`.
const GPU_TESTS = [
  'tests/engine/forward-variants.test.ts',
  'tests/engine/generate.test.ts',
  'tests/engine/score-parity.test.ts',
  'tests/engine/train-chunked-f16.test.ts',
  'tests/engine/train-entropy.test.ts',
  'tests/engine/train-grad-parity.test.ts',
  'tests/engine/train-optimizer.test.ts',
  'tests/engine/linear-attention-kernels.test.ts',
  'tests/engine/qwen3_5-score*.test.ts', // qwen3_5-score, qwen3_5-score-tokenizer
  'tests/engine/qwen3_5-generate.test.ts',
  'tests/engine/qwen3_5-train.test.ts',
  'tests/engine/qwen3_5-vision.test.ts',
  'tests/engine/qwen3_5-vision-train.test.ts',
  'tests/engine/qwen3_5-vision-full.test.ts',
  'tests/engine/gpu-*.test.ts', // gpu-f16, gpu-memory, gpu-bench-counts
  'tests/unit/gpu.test.ts',
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
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['tests/**/*.test.ts'],
          exclude: [...GPU_TESTS, '**/node_modules/**'],
        },
      },
      gpuProject('swiftshader'),
      gpuProject('lavapipe'),
    ],
  },
});
