import { defineConfig } from 'vitest/config';

// Node-side tests. GPU tests use Dawn (`webgpu` package) on SwiftShader, which is slow and
// native: run files in forked processes (not threads) and allow long timeouts.
export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 600_000,
    hookTimeout: 600_000,
    reporters: ['default'],
  },
});
