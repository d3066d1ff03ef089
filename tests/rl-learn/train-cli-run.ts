// Runs the `train` CLI in-process and collects its stdout JSON lines (one per step, plus load/done).
import { run } from '../../src/cli/train.ts';
import { captureCliLines } from '../cli-capture.ts';

export async function runTrainCli(argv: string[]): Promise<{ code: number; lines: Record<string, unknown>[] }> {
  const { code, lines } = await captureCliLines(() => run(argv));
  return { code, lines: lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}
