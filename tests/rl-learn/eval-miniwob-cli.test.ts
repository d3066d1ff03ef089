// `webgrpo eval --env browsergym:… --miniwob DIR --split eval` over a MiniWoB++ folder picks the held-out
// tasks by itself: the folder's held-out tasks (every 5th by name) first, then the tasks --env names at
// held-out seeds ([2^31, 2^32)) — never the folder's other training tasks, which the run did not train
// on and which are not held out either. The folder: the fixture's two task pages plus three copies of
// click-test under other names, so that one task (enter-text, the 5th by name) is held out.
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { run as evalCli } from '../../src/cli/eval.ts';
import { miniwobTaskSplit } from '../../src/rl/eval/task-split.ts';
import { captureCliLines } from '../cli-capture.ts';

const DEMO_MODEL = fileURLToPath(new URL('../../models/demo', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../fixtures/miniwob/html', import.meta.url));
const HALF = 2 ** 31;

let dir: string;
let folder: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-eval-miniwob-'));
  await cp(FIXTURE, join(dir, 'html'), { recursive: true });
  folder = join(dir, 'html', 'miniwob');
  for (const copy of ['click-test-a', 'click-test-b', 'click-test-c']) await cp(join(folder, 'click-test.html'), join(folder, `${copy}.html`));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs the CLI with stderr kept quiet; the summary and each episode's task and seed. */
async function evalRun(argv: string[]): Promise<{ summary: Record<string, any>; played: { task: string; seed: number }[] }> {
  const file = join(dir, 'traj.jsonl');
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    const { code, lines } = await captureCliLines(() => evalCli([...argv, '--model', DEMO_MODEL, '--miniwob', folder, '--trajectories', file]));
    expect(code).toBe(0);
    const played = (await readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { task: string; seed: number });
    return { summary: JSON.parse(lines.at(-1)!), played: played.map(({ task, seed }) => ({ task, seed })) };
  } finally {
    spy.mockRestore();
  }
}

describe('webgrpo eval over a MiniWoB++ folder', () => {
  it('the folder splits as the test assumes: enter-text is its one held-out task', () => {
    expect(miniwobTaskSplit(['click-test', 'click-test-a', 'click-test-b', 'click-test-c', 'enter-text']).eval).toEqual(['enter-text']);
  });

  it('--env browsergym:click-test --split eval: the held-out task, then click-test at held-out seeds, in turn', async () => {
    const { summary, played } = await evalRun(['--env', 'browsergym:click-test', '--split', 'eval', '--episodes', '4']);
    expect(played).toEqual([
      { task: 'enter-text', seed: HALF },
      { task: 'click-test', seed: HALF + 1 },
      { task: 'enter-text', seed: HALF + 2 },
      { task: 'click-test', seed: HALF + 3 },
    ]);
    expect(Object.keys(summary.per_task).sort()).toEqual(['click-test', 'enter-text']);
    expect(summary.per_task['enter-text'].episodes).toBe(2);
  }, 600_000);

  it('--split train: the named task only, at training seeds', async () => {
    const { played } = await evalRun(['--env', 'browsergym:click-test', '--split', 'train', '--episodes', '2']);
    expect(played).toEqual([
      { task: 'click-test', seed: 0 },
      { task: 'click-test', seed: 1 },
    ]);
  }, 600_000);

  it('--env browsergym:mix --split eval: the held-out task first, then every training task of the folder', async () => {
    const { played } = await evalRun(['--env', 'browsergym:mix', '--split', 'eval', '--episodes', '5']);
    expect(played.map((p) => p.task)).toEqual(['enter-text', 'click-test', 'click-test-a', 'click-test-b', 'click-test-c']);
    for (const p of played) expect(p.seed).toBeGreaterThanOrEqual(HALF);
  }, 600_000);
});
