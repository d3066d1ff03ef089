// env-server load benchmark: N concurrent sessions × M steps over loopback WebSockets through the
// OpenEnv client, against `webgrpo env-server` in its own process (so client and server do not
// share an event loop). Reports steps/s, step round-trip latency percentiles, and leaked sessions.
//
//   webgrpo bench env-server [--sessions 256] [--steps 50] [--cap 64] [--no-queue] [--env echo]

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { connect } from '../../src/openenv/index.ts';

export interface BenchEnvServerOptions {
  /** Concurrent client sessions (default 256). */
  sessions?: number;
  /** Steps per session after the reset (default 50). */
  steps?: number;
  /** Server's --max-concurrent-envs (default 64). */
  cap?: number;
  /** Server's --queue (default true): sessions over the cap wait instead of being refused. */
  queue?: boolean;
  /** Built-in env to drive; only echo's action is generated (default 'echo'). */
  env?: 'echo';
}

export interface BenchEnvServerResult {
  bench: 'env-server';
  env: string;
  sessions: number;
  steps_per_session: number;
  max_concurrent_envs: number;
  queue: boolean;
  completed_sessions: number;
  failed_sessions: number;
  /** First few failure messages, if any. */
  failures: string[];
  total_steps: number;
  wall_s: number;
  steps_per_s: number;
  step_latency_ms: { p50: number; p90: number; p99: number; max: number };
  /** Most sessions the server reported active at once (sampled); must not exceed the cap. */
  peak_active: number;
  /** Active + queued sessions the server still reports after every client closed. Must be 0. */
  sessions_leaked: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const round = (x: number, digits = 3) => Number(x.toFixed(digits));

/** Starts `webgrpo env-server` on a free port; resolves its URL and a stop function. */
async function startServerProcess(cap: number, queue: boolean): Promise<{ url: string; stop(): Promise<void> }> {
  const bin = fileURLToPath(new URL('../../bin/webgrpo.js', import.meta.url));
  const args = [bin, 'env-server', '--port', '0', '--max-concurrent-envs', String(cap), '--queue-timeout', '600'];
  if (queue) args.push('--queue');
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const firstLine = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => {
      lines.close();
      resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`webgrpo env-server exited (${code}) before printing its URL`)));
  });
  const { url } = JSON.parse(firstLine) as { url: string };
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function activeAndQueued(url: string, env: string): Promise<{ active: number; queued: number }> {
  const listing = (await (await fetch(`${url}/envs`)).json()) as { envs: Array<{ name: string; active: number; queued: number }> };
  const entry = listing.envs.find((e) => e.name === env);
  if (!entry) throw new Error(`env-server does not list env '${env}'`);
  return { active: entry.active, queued: entry.queued };
}

export async function benchEnvServer(options: BenchEnvServerOptions = {}): Promise<BenchEnvServerResult> {
  const sessions = options.sessions ?? 256;
  const steps = options.steps ?? 50;
  const cap = options.cap ?? 64;
  const queue = options.queue ?? true;
  const env = options.env ?? 'echo';
  for (const [name, v] of Object.entries({ sessions, steps, cap })) {
    if (!(Number.isInteger(v) && v >= 1)) throw new Error(`benchEnvServer: ${name} must be an integer ≥ 1, got ${v}`);
  }
  if (env !== 'echo') throw new Error(`benchEnvServer: only the echo env is supported, got '${env}'`);

  const server = await startServerProcess(cap, queue);
  const base = `${server.url}/envs/${env}`;
  const latencies: number[] = [];
  const failures: string[] = [];
  let failed = 0;
  let peakActive = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakActive = Math.max(peakActive, (await activeAndQueued(server.url, env)).active);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();

  const episode = async (i: number) => {
    const session = await connect(base, { timeoutMs: 600_000 });
    try {
      await session.reset();
      for (let s = 0; s < steps; s++) {
        const t0 = performance.now();
        await session.step({ message: `session ${i} step ${s}` });
        latencies.push(performance.now() - t0);
      }
    } finally {
      await session.close();
    }
  };

  const started = performance.now();
  const outcomes = await Promise.allSettled(Array.from({ length: sessions }, (_, i) => episode(i)));
  const wallS = (performance.now() - started) / 1000;
  sampling = false;
  await sampler;
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected') {
      failed++;
      if (failures.length < 5) failures.push(String(outcome.reason instanceof Error ? outcome.reason.message : outcome.reason));
    }
  }

  // Give the server a moment to process the last closes, then count what it still holds.
  let left = await activeAndQueued(server.url, env);
  for (let tries = 0; tries < 100 && left.active + left.queued > 0; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    left = await activeAndQueued(server.url, env);
  }
  await server.stop();

  latencies.sort((a, b) => a - b);
  return {
    bench: 'env-server',
    env,
    sessions,
    steps_per_session: steps,
    max_concurrent_envs: cap,
    queue,
    completed_sessions: sessions - failed,
    failed_sessions: failed,
    failures,
    total_steps: latencies.length,
    wall_s: round(wallS),
    steps_per_s: round(latencies.length / wallS, 1),
    step_latency_ms: {
      p50: round(percentile(latencies, 50)),
      p90: round(percentile(latencies, 90)),
      p99: round(percentile(latencies, 99)),
      max: round(latencies[latencies.length - 1] ?? NaN),
    },
    peak_active: peakActive,
    sessions_leaked: left.active + left.queued,
  };
}

/** `--sessions N --steps M --cap C --no-queue --env echo` → options (for `webgrpo bench`). */
/** The options as `webgrpo bench env-server` split them (bench/main.ts: flag → text, a bare flag → 'true'). */
export function parseBenchEnvServerOptions(opts: Readonly<Record<string, string>>): BenchEnvServerOptions {
  const options: BenchEnvServerOptions = {};
  const int = (key: string, value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${key}: expected an integer ≥ 1, got '${value}'`);
    return n;
  };
  for (const [key, value] of Object.entries(opts)) {
    if (key === 'sessions' || key === 'steps' || key === 'cap') options[key] = int(key, value);
    else if (key === 'queue') options.queue = true;
    else if (key === 'no-queue') options.queue = false;
    else if (key === 'env') {
      if (value !== 'echo') throw new Error(`--env: only 'echo' is supported, got '${value}'`);
      options.env = value;
    } else throw new Error(`bench env-server: unknown option '--${key}'`);
  }
  return options;
}
