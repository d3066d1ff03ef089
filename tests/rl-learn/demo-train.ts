// A demo run in Node, as a user types it: `webgrpo train --model models/demo --env <preset>` (the app's
// preset for the tiny tier, untouched; the CLI and the app's worker run the same steps,
// tests/e2e/cli-worker-parity.test.ts). The `learning` vitest project pins it to lavapipe.
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { runTrainCli } from './train-cli-run.ts';

const DEMO_MODEL = fileURLToPath(new URL('../../models/demo', import.meta.url));

/** Minutes on a CPU adapter: far past the suite's 30 s default. */
export const DEMO_TRAIN_TIMEOUT_MS = 1_500_000;

/** `metric` at each GRPO step of the preset's run. */
export async function trainDemo(preset: 'catch' | 'echo', metric: string): Promise<number[]> {
  const { code, lines } = await runTrainCli(['--model', DEMO_MODEL, '--env', preset]);
  expect(code).toBe(0);
  return lines.filter((l) => l.phase === 'grpo').map((l) => l[metric] as number);
}
