import { defineConfig } from 'vitest/config';

// Node-side tests. GPU tests use Dawn (`webgpu` package) on SwiftShader, which is slow and
// native: run files in forked processes (not threads). Tests fail fast (30 s); the GPU, browser and
// CLI files that need longer set their own timeouts at their top (vi.setConfig).
export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default'],
  },
});
