// browsergym per task (`webgrpo bench browsergym --per-task`): for every task (the built-in ones, or a
// MiniWoB++ folder's with --miniwob), 1 and 8 sessions at once, each playing `rounds` × (reset with a
// seed, one `noop(0)` step): reset and step latency p50/p99 and the reply frame's bytes (p50, max).
// Frames are read raw off the WebSocket, so the bytes are what a client receives.
//
//   npx webgrpo bench browsergym --per-task [--tasks click-test,enter-text] [--miniwob DIR|URL] [--rounds 2]

import WebSocket from 'ws';
import { createBrowserGymEnv } from '../../env-server/envs/browsergym/index.ts';
import { miniwobSource } from '../../env-server/envs/browsergym/miniwob-source.ts';
import { createEnvServer } from '../../env-server/server.ts';

export interface TaskLoad {
  reset_ms: { p50: number; p99: number };
  step_ms: { p50: number; p99: number };
  reset_bytes: { p50: number; max: number };
  step_bytes: { p50: number; max: number };
  errors: number;
}

export interface BenchBrowserGymTasksResult {
  bench: 'env-server-browsergym-tasks';
  source: string;
  rounds: number;
  tasks: { task: string; sessions: Record<string, TaskLoad> }[];
}

export interface BenchBrowserGymTasksOptions {
  tasks?: string[];
  miniwob?: string;
  rounds?: number;
  sessionCounts?: number[];
}

const round = (x: number) => Number(x.toFixed(1));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One socket on /envs/browsergym: each request waits for its one reply frame (its text and size). */
async function openSocket(url: string): Promise<{ request(frame: unknown): Promise<{ ms: number; bytes: number; text: string }>; close(): void }> {
  const ws = new WebSocket(url, { maxPayload: 256 * 1024 * 1024 });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return {
    request(frame) {
      const t0 = performance.now();
      return new Promise((resolve, reject) => {
        ws.once('message', (data: Buffer) => resolve({ ms: performance.now() - t0, bytes: data.length, text: data.toString('utf8') }));
        ws.once('close', () => reject(new Error('socket closed')));
        ws.send(JSON.stringify(frame));
      });
    },
    close: () => ws.close(),
  };
}

export async function benchBrowserGymTasks(opts: BenchBrowserGymTasksOptions = {}): Promise<BenchBrowserGymTasksResult> {
  const rounds = opts.rounds ?? 2;
  const sessionCounts = opts.sessionCounts ?? [1, 8];
  const source = opts.miniwob === undefined ? undefined : await miniwobSource(opts.miniwob);
  const def = createBrowserGymEnv({ miniwob: source, maxConcurrentEnvs: Math.max(...sessionCounts) }, {});
  const server = await createEnvServer({ port: 0, envs: { browsergym: def } });
  const url = `${server.url.replace(/^http/, 'ws')}/envs/browsergym/ws`;
  const names = source ? source.names : [...(await import('../../env-server/envs/browsergym/tasks/index.ts')).MINIWOB_TASKS.keys()];
  const tasks = opts.tasks ?? names;
  for (const task of tasks) if (!names.includes(task)) throw new Error(`bench browsergym: unknown task '${task}' (have ${names.join(', ')})`);
  const out: BenchBrowserGymTasksResult['tasks'] = [];
  try {
    // Warm-up: Chromium's launch is not a task's reset.
    const warm = await openSocket(url);
    await warm.request({ type: 'reset', data: { task_name: tasks[0], seed: 0 } });
    warm.close();
    for (const task of tasks) {
      const sessions: Record<string, TaskLoad> = {};
      for (const n of sessionCounts) {
        const resetMs: number[] = [];
        const stepMs: number[] = [];
        const resetBytes: number[] = [];
        const stepBytes: number[] = [];
        let errors = 0;
        await Promise.all(
          Array.from({ length: n }, async (_, s) => {
            const socket = await openSocket(url);
            try {
              for (let r = 0; r < rounds; r++) {
                const reset = await socket.request({ type: 'reset', data: { task_name: task, seed: s * rounds + r } });
                resetMs.push(reset.ms);
                resetBytes.push(reset.bytes);
                const step = await socket.request({ type: 'step', data: { action_str: 'noop(0)', metadata: {} } });
                stepMs.push(step.ms);
                stepBytes.push(step.bytes);
                if (!reset.text.startsWith('{"type":"observation"') || !step.text.startsWith('{"type":"observation"')) errors++;
              }
            } finally {
              socket.close();
            }
          }),
        );
        sessions[String(n)] = {
          reset_ms: { p50: round(percentile(resetMs, 50)), p99: round(percentile(resetMs, 99)) },
          step_ms: { p50: round(percentile(stepMs, 50)), p99: round(percentile(stepMs, 99)) },
          reset_bytes: { p50: percentile(resetBytes, 50), max: Math.max(...resetBytes) },
          step_bytes: { p50: percentile(stepBytes, 50), max: Math.max(...stepBytes) },
          errors,
        };
      }
      out.push({ task, sessions });
    }
  } finally {
    await server.close();
  }
  return { bench: 'env-server-browsergym-tasks', source: source ? source.origin : 'built-in', rounds, tasks: out };
}

/** `--tasks a,b`, `--miniwob DIR|URL`, `--rounds N` (the CLI's parsed strings). */
export function parseBenchBrowserGymTasksArgs(opts: Record<string, string>): BenchBrowserGymTasksOptions {
  const out: BenchBrowserGymTasksOptions = {};
  for (const [key, value] of Object.entries(opts)) {
    if (key === 'tasks') out.tasks = value.split(',').map((t) => t.trim()).filter((t) => t !== '');
    else if (key === 'miniwob') out.miniwob = value;
    else if (key === 'rounds') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new Error(`bench browsergym: --rounds needs a positive integer, got '${value}'`);
      out.rounds = n;
    } else throw new Error(`bench browsergym --per-task: unknown option --${key} (it takes --tasks, --miniwob, --rounds)`);
  }
  return out;
}
