// `webgrpo eval` end to end on the demo model (lavapipe), a few held-out catch episodes: the summary's
// fields as the last stdout line, the adapter named on the first stderr line, one trajectory per
// episode with its turns; --compare on the same model (greedy: the same play) gives a zero paired
// difference. And `train --eval_strategy steps` logs TRL's eval_* lines beside the steps.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { run as evalCli } from '../../src/cli/eval.ts';
import { captureCliLines } from '../cli-capture.ts';
import { runTrainCli } from './train-cli-run.ts';

const DEMO_MODEL = fileURLToPath(new URL('../../models/demo', import.meta.url));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-eval-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function evalRun(argv: string[]): Promise<{ code: number; summary: Record<string, any>; stderr: string[] }> {
  const stderr: string[] = [];
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => (stderr.push(String(chunk)), true));
  try {
    const { code, lines } = await captureCliLines(() => evalCli(argv));
    return { code, summary: JSON.parse(lines.at(-1)!), stderr };
  } finally {
    spy.mockRestore();
  }
}

describe('webgrpo eval', () => {
  it('plays held-out catch episodes: summary, adapter line, trajectories', async () => {
    const file = join(dir, 'traj.jsonl');
    const { code, summary, stderr } = await evalRun(['--model', DEMO_MODEL, '--env', 'catch', '--episodes', '6', '--trajectories', file]);
    expect(code).toBe(0);
    expect(stderr.join('').split('\n').find((l) => l.startsWith('webgrpo'))).toMatch(/^webgrpo eval: 6 held-out episodes of catch, on WebGPU adapter lavapipe/);
    expect(summary).toMatchObject({ task: 'catch-compact', split: 'eval', temperature: 0, episodes: 6 });
    for (const k of ['success_rate', 'success_ci95', 'mean_reward', 'tool_calls_per_episode', 'invalid_calls_per_episode', 'failure_reasons']) expect(summary).toHaveProperty(k);
    const wins = Math.round(summary.success_rate * 6);
    const [lo, hi] = summary.success_ci95;
    expect(lo).toBeLessThanOrEqual(summary.success_rate);
    expect(hi).toBeGreaterThanOrEqual(summary.success_rate);
    expect(Object.values(summary.failure_reasons as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(6);
    const trajectories = (await readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    expect(trajectories).toHaveLength(6);
    expect(trajectories.filter((t) => t.success)).toHaveLength(wins);
    trajectories.forEach((t, i) => {
      expect(t).toMatchObject({ task: 'catch-compact', seed: 2 ** 32 + i });
      for (const k of ['turns', 'reward', 'done', 'failure_reason', 'tool_calls', 'invalid_calls']) expect(t).toHaveProperty(k);
      expect(t.turns[0]).toHaveProperty('model_text');
      expect(t.turns[0]).toHaveProperty('call');
      expect(t.turns[0]).toHaveProperty('observations');
    });
  }, 600_000);

  it('--compare: the same episodes for both; the same model greedy → paired difference 0', async () => {
    const { code, summary } = await evalRun(['--model', DEMO_MODEL, '--env', 'catch', '--episodes', '4', '--compare', DEMO_MODEL]);
    expect(code).toBe(0);
    expect(summary.compare.success_rate).toBe(summary.success_rate);
    expect(summary.compare.paired_difference.success).toEqual({ episodes: 4, difference: 0, ci95: [0, 0] });
  }, 600_000);

  it('--env-class FILE.mjs: the class plays the held-out episodes through the launcher (examples/catch.mjs)', async () => {
    const { code, summary } = await evalRun(['--model', DEMO_MODEL, '--env-class', fileURLToPath(new URL('../../examples/catch.mjs', import.meta.url)), '--episodes', '2']);
    expect(code).toBe(0);
    expect(summary).toMatchObject({ task: 'CatchEnv', split: 'eval', episodes: 2 });
    expect(Object.values(summary.failure_reasons as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(2);
  }, 600_000);

  it('--split must be eval or train', async () => {
    await expect(evalCli(['--model', DEMO_MODEL, '--env', 'catch', '--split', 'test'])).rejects.toThrow(/--split/);
  });
});

describe('train --eval_strategy steps', () => {
  it('logs eval_* lines on the eval steps (and at the start with --eval_on_start)', async () => {
    const { code, lines } = await runTrainCli([
      '--model', DEMO_MODEL, '--env', 'echo', '--max_steps', '2', '--eval_strategy', 'steps', '--eval_steps', '1', '--eval_on_start',
      '--num_generations_eval', '2',
    ]);
    expect(code).toBe(0);
    const evals = lines.filter((l) => l.phase === 'eval');
    expect(evals.map((l) => l.step)).toEqual([0, 1, 2]);
    for (const e of evals) {
      expect(Number.isFinite(e.eval_reward)).toBe(true);
      expect(e).toHaveProperty('eval_rewards/reward_func/mean');
      expect(e.eval_episodes).toBe(20); // echo's 10 held-out prompts × num_generations_eval 2
      expect(Object.keys(e).filter((k) => k !== 'phase' && k !== 'step' && !k.startsWith('eval_'))).toEqual([]);
    }
    expect(lines.filter((l) => l.phase === 'grpo').map((l) => l.step)).toEqual([1, 2]);
  }, 900_000);
});
