// browsergym env-server benchmark: N sessions through the OpenEnv client, `cap` at a time (the
// env's own cap: each of `cap` clients runs its share of sessions back to back), each resetting a MiniWoB-style task and playing `steps` actions
// (fill + click on enter-text, which wins at the end). Reports resets/s and steps/s at the cap,
// reset/step latency percentiles, Chromium's memory per open session (sum of the browser processes'
// RSS with `cap` contexts open, minus the RSS with none, over `cap`), and the browser contexts still
// open after every session ended (must be 0).
//
//   webgrpo bench browsergym [--sessions 64] [--cap 8] [--steps 4]

import { readFileSync, readdirSync } from 'node:fs';
import { createBrowserGymEnv } from '../../env-server/envs/browsergym/index.ts';
import { createEnvServer } from '../../env-server/server.ts';
import { connect } from '../../src/openenv/index.ts';

export interface BenchBrowserGymResult {
  bench: 'env-server-browsergym';
  sessions: number;
  cap: number;
  steps_per_session: number;
  failed_sessions: number;
  failures: string[];
  wall_s: number;
  resets_per_s: number;
  steps_per_s: number;
  reset_latency_ms: { p50: number; p99: number };
  step_latency_ms: { p50: number; p99: number };
  won_episodes: number;
  /** Chromium RSS per open session (MiB); null where /proc is not available. */
  rss_mib_per_session: number | null;
  rss_mib_browser_idle: number | null;
  leaked_contexts: number;
}

const round = (x: number, digits = 1) => Number(x.toFixed(digits));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Sum of VmRSS (MiB) over this process's descendants (the Chromium processes); null without /proc. */
function childrenRssMib(): number | null {
  try {
    const parent = new Map<number, number>();
    const rss = new Map<number, number>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const status = readFileSync(`/proc/${entry}/status`, 'utf8');
        parent.set(Number(entry), Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? 0));
        rss.set(Number(entry), Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0));
      } catch {
        // the process ended while we looked
      }
    }
    const isDescendant = (pid: number): boolean => {
      for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === process.pid) return true;
      return false;
    };
    let kib = 0;
    for (const [pid, value] of rss) if (isDescendant(pid)) kib += value;
    return kib / 1024;
  } catch {
    return null;
  }
}

function bidOf(tree: string, role: string, name: string): string {
  const m = new RegExp(`\\[(\\w+)\\] ${role} '${name}'`).exec(tree);
  if (!m) throw new Error(`no ${role} '${name}' in the tree`);
  return m[1]!;
}

export async function benchBrowserGym(opts: { sessions?: number; cap?: number; steps?: number } = {}): Promise<BenchBrowserGymResult> {
  const sessions = opts.sessions ?? 64;
  const cap = opts.cap ?? 8;
  const steps = Math.max(2, opts.steps ?? 4);
  const def = createBrowserGymEnv({ maxConcurrentEnvs: cap, actionTimeoutMs: 5000 });
  const server = await createEnvServer({ port: 0, envs: { browsergym: def }, queue: true, queueTimeoutMs: 600_000 });
  const url = `${server.url}/envs/browsergym`;
  const resetMs: number[] = [];
  const stepMs: number[] = [];
  const failures: string[] = [];
  let won = 0;
  let rssIdle: number | null = null;
  let rssFull: number | null = null;
  try {
    // Warm-up: launch Chromium, then measure its idle RSS with no session open.
    {
      const c = await connect(url, { timeoutMs: 60_000 });
      await c.reset({ task_name: 'click-test', seed: 0 });
      await c.close();
      for (let i = 0; i < 100 && def.browser.contexts > 0; i++) await new Promise((r) => setTimeout(r, 20));
      rssIdle = childrenRssMib();
    }
    let open = 0;
    const started = performance.now();
    const one = async (i: number) => {
      const client = await connect(url, { timeoutMs: 120_000 });
      try {
        let t = performance.now();
        const first = await client.reset({ task_name: 'enter-text', seed: i });
        resetMs.push(performance.now() - t);
        open++;
        if (open === cap && rssFull === null) rssFull = childrenRssMib();
        const obs = first.observation as { goal: string; axtree_txt: string };
        const text = /"(.+)"/.exec(obs.goal)![1]!;
        const textbox = bidOf(obs.axtree_txt, 'textbox', '');
        const submit = bidOf(obs.axtree_txt, 'button', 'Submit');
        // steps − 1 fills (the last one with the right text), then Submit.
        const actions = [...Array.from({ length: steps - 2 }, (_, k) => `fill('${textbox}', 'draft ${k}')`), `fill('${textbox}', ${JSON.stringify(text)})`, `click('${submit}')`];
        let reward = 0;
        for (const action_str of actions) {
          t = performance.now();
          const result = await client.step({ action_str });
          stepMs.push(performance.now() - t);
          reward = Number(result.reward ?? 0);
        }
        if (reward === 1) won++;
        open--;
      } finally {
        await client.close();
      }
    };
    let next = 0;
    const results: PromiseSettledResult<void>[] = [];
    await Promise.all(
      Array.from({ length: cap }, async () => {
        while (next < sessions) {
          const i = next++;
          results.push(...(await Promise.allSettled([one(i)])));
        }
      }),
    );
    const wall = (performance.now() - started) / 1000;
    for (const r of results) if (r.status === 'rejected' && failures.length < 5) failures.push(String(r.reason));
    for (let i = 0; i < 250 && def.browser.contexts > 0; i++) await new Promise((r) => setTimeout(r, 20));
    const leaked = def.browser.contexts;
    return {
      bench: 'env-server-browsergym',
      sessions,
      cap,
      steps_per_session: steps,
      failed_sessions: results.filter((r) => r.status === 'rejected').length,
      failures,
      wall_s: round(wall, 2),
      resets_per_s: round(resetMs.length / wall, 2),
      steps_per_s: round(stepMs.length / wall, 2),
      reset_latency_ms: { p50: round(percentile(resetMs, 50)), p99: round(percentile(resetMs, 99)) },
      step_latency_ms: { p50: round(percentile(stepMs, 50)), p99: round(percentile(stepMs, 99)) },
      won_episodes: won,
      rss_mib_per_session: rssIdle !== null && rssFull !== null ? round((rssFull - rssIdle) / cap) : null,
      rss_mib_browser_idle: rssIdle === null ? null : round(rssIdle),
      leaked_contexts: leaked,
    };
  } finally {
    await server.close();
  }
}

/** The options as `webgrpo bench browsergym` split them (bench/main.ts: flag → text). */
export function parseBenchBrowserGymOptions(opts: Readonly<Record<string, string>>): { sessions?: number; cap?: number; steps?: number } {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(opts)) {
    if (!['sessions', 'cap', 'steps'].includes(key)) throw new Error(`bench browsergym: unknown option --${key}`);
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new Error(`bench browsergym: --${key} needs a positive integer, got '${value}'`);
    out[key] = n;
  }
  return out;
}
