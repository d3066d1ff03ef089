// `webgrpo train` refuses a config the adapter (or the model) cannot hold before any weight is
// uploaded, naming the field to lower: the setup page's check (src/rl/run-limits.ts).
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/train.ts';

// The CLI opens a WebGPU adapter (Dawn): longer than the suite's 30 s default on a loaded machine.
vi.setConfig({ testTimeout: 120_000 });

const DEMO = fileURLToPath(new URL('../../models/demo', import.meta.url));

describe('webgrpo train: run limits', () => {
  it('refuses max_completion_length 100000 on the demo model, naming the field and the value that fits', async () => {
    await expect(run(['--model', DEMO, '--env', 'catch', '--max_completion_length', '100000'])).rejects.toThrow(
      /^this config does not fit the GPU adapter: max_completion_length: .*beyond the model's max_position_embeddings \(40960\): lower max_completion_length to ≤ 39936$/,
    );
  });
});
