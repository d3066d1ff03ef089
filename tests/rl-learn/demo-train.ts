// A demo run in Node, as a user types it: `webgrpo train --model models/demo --env <URL of the built-in
// env>` (the app's preset for the tiny tier, untouched; the CLI and the app's worker run the same steps,
// tests/e2e/cli-worker-parity.test.ts). The `learning` vitest project pins it to lavapipe.
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { createEnvServer } from '../../env-server/server.ts';
import { runTrainCli } from './train-cli-run.ts';

const DEMO_MODEL = fileURLToPath(new URL('../../models/demo', import.meta.url));

/** Minutes on a CPU adapter: far past the suite's 30 s default. */
export const DEMO_TRAIN_TIMEOUT_MS = 1_500_000;

/**
 * The env-server's WebSocket heartbeat, far above any step here. In the app the env-server is another
 * process and the browser answers pings off the page's thread; in one Node process, a backward pass
 * that holds the event loop past the default 20 s on a loaded machine would let the server drop the
 * sessions already reset for the next step, and the run would go on with failed tool calls.
 */
const HEARTBEAT_MS = 3_600_000;

/** `metric` at each GRPO step of the preset's run. */
export async function trainDemo(preset: 'catch' | 'echo', metric: string): Promise<number[]> {
  const server = await createEnvServer({ port: 0, heartbeatMs: HEARTBEAT_MS });
  try {
    const { code, lines } = await runTrainCli(['--model', DEMO_MODEL, '--env', `${server.url}/envs/${preset}`]);
    expect(code).toBe(0);
    expect(lines.filter((l) => l.phase === 'grpo').map((l) => l['tools/failure_frequency']), 'a step whose every tool call failed: the env dropped its sessions').not.toContain(1);
    return lines.filter((l) => l.phase === 'grpo').map((l) => l[metric] as number);
  } finally {
    await server.close();
  }
}
