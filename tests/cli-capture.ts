// Runs a CLI entry (score, generate, train, …) in-process with console.log captured. Node-only (it
// spies through vitest), so browser entries must never import it: keep it out of tests/engine/helpers.ts.
import { vi } from 'vitest';

/** The exit code and every stdout line the CLI printed. */
export async function captureCliLines(fn: () => Promise<number>): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void lines.push(a.join(' ')));
  try {
    return { code: await fn(), lines };
  } finally {
    spy.mockRestore();
  }
}

/** The exit code and the CLI's last line parsed as JSON. */
export async function captureCliJson(fn: () => Promise<number>): Promise<{ code: number; json: any }> {
  const { code, lines } = await captureCliLines(fn);
  return { code, json: JSON.parse(lines.at(-1)!) };
}
