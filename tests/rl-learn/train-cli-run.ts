// Runs the `train` CLI in-process and collects its stdout JSON lines (one per step, plus load/done).
import { vi } from 'vitest';
import { run } from '../../src/cli/train.ts';

export async function runTrainCli(argv: string[]): Promise<{ code: number; lines: Record<string, unknown>[] }> {
  const out: string[] = [];
  const spy = vi.spyOn(console, 'log').mockImplementation((line: unknown) => void out.push(String(line)));
  try {
    const code = await run(argv);
    return { code, lines: out.map((l) => JSON.parse(l) as Record<string, unknown>) };
  } finally {
    spy.mockRestore();
  }
}
