// browsergym under load (issue 19; `webgrpo bench browsergym-load`): `sessions` sessions at once,
// `rounds` times, each reset click-test and click the bid its tree gives the button, while the machine
// is busy — next to a running `webgrpo train` (the default load: a tiny model training on the
// browsergym task, its own env-server and Chromium in its own process), next to N busy-looping
// processes, or with nothing added. A round ends with one wrong-bid probe, so the error text a model
// reads under load is measured too: it must be one line without ANSI codes or a call log.
//
//   npx webgrpo bench browsergym-load [--sessions 8] [--rounds 3] [--miniwob DIR|URL] [--load train|hogs:N|none]

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createBrowserGymEnv } from '../../env-server/envs/browsergym/index.ts';
import { miniwobSource } from '../../env-server/envs/browsergym/miniwob-source.ts';
import { createEnvServer } from '../../env-server/server.ts';
import { connect } from '../../src/openenv/index.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';

export type LoadSpec = { kind: 'train' } | { kind: 'hogs'; count: number } | { kind: 'none' };

export interface BenchBrowserGymLoadOptions {
  sessions?: number;
  rounds?: number;
  miniwob?: string;
  load?: LoadSpec;
}

export interface BenchBrowserGymLoadResult {
  bench: 'env-server-browsergym-load';
  source: string;
  sessions: number;
  rounds: number;
  load: string;
  /** 1-minute load average when the rounds started and the highest seen between rounds. */
  loadavg_1m: { start: number; max: number };
  /** GRPO/SFT step lines the training job printed while the rounds ran (it was really training). */
  train_lines_during: number | null;
  wins: number;
  attempts: number;
  wins_per_round: number[];
  reset_ms: { p50: number; p99: number };
  click_ms: { p50: number; p99: number };
  /** Error texts of the correct clicks that did not win (first 5). */
  failures: string[];
  probe: { errors: string[]; ms_p50: number; clean: boolean };
  leaked_contexts: number;
}

const bin = new URL('../../bin/webgrpo.js', import.meta.url).pathname;
const round1 = (x: number) => Number(x.toFixed(1));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One line, no escape sequences, no Playwright call log: what the issue saw reach the model otherwise. */
export function isCleanError(text: string): boolean {
  return !text.includes('\x1b') && !text.includes('\n') && !/call log/i.test(text);
}

/** The button's bid in a tree (`[13] button 'Click Me!'`). */
function buttonBid(tree: string): string {
  const m = /\[(\w+)\] button 'Click Me!'/.exec(tree);
  if (!m) throw new Error(`no click-test button in the tree:\n${tree}`);
  return m[1]!;
}

interface RunningLoad {
  describe: string;
  /** Lines the job printed so far (train only). */
  lines(): number | null;
  stop(): Promise<void>;
}

/** A tiny model training on the browsergym task in its own process; resolves once its engine is up. */
async function startTraining(miniwob: string | undefined): Promise<RunningLoad> {
  const dir = await mkdtemp(join(tmpdir(), 'webgrpo-bench-load-'));
  for (const [name, bytes] of await makeTinyCheckpointFiles({ seed: 1, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 })) {
    await writeFile(join(dir, name), bytes);
  }
  const args = [bin, 'train', '--model', dir, '--env', 'browsergym:click-test,enter-text', '--sft_steps', '0', '--max_steps', '100000', '--num_generations', '2', '--per_device_train_batch_size', '2', '--max_completion_length', '256'];
  if (miniwob !== undefined) args.push('--miniwob', miniwob);
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  let lines = 0;
  const loaded = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.startsWith('{"phase":"load"')) resolve();
      else if (line.startsWith('{"phase":')) lines++;
    });
    child.once('exit', (code) => reject(new Error(`the training job exited (code ${code}) before it started`)));
  });
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    await rm(dir, { recursive: true, force: true });
  };
  await loaded.catch(async (err: unknown) => {
    await stop();
    throw err;
  });
  // Its first rollouts (Chromium's launch, decoding) are under way once the engine is up.
  await new Promise((resolve) => setTimeout(resolve, 5000));
  return { describe: `webgrpo train --env browsergym:click-test,enter-text (tiny model)${miniwob ? ' --miniwob' : ''}`, lines: () => lines, stop };
}

/** Busy-looping processes; each also exits by itself after 10 minutes, whatever happens to this one. */
function startHogs(count: number): RunningLoad {
  const hogs = Array.from({ length: count }, () => spawn(process.execPath, ['-e', 'const end = Date.now() + 600000; while (Date.now() < end) {}'], { stdio: 'ignore' }));
  return {
    describe: `${count} busy-looping processes`,
    lines: () => null,
    async stop() {
      for (const hog of hogs) hog.kill('SIGKILL');
    },
  };
}

export async function benchBrowserGymLoad(opts: BenchBrowserGymLoadOptions = {}): Promise<BenchBrowserGymLoadResult> {
  const sessions = opts.sessions ?? 8;
  const rounds = opts.rounds ?? 3;
  const load = opts.load ?? { kind: 'train' };
  const source = opts.miniwob === undefined ? undefined : await miniwobSource(opts.miniwob);
  if (source && !source.names.includes('click-test')) throw new Error(`bench browsergym-load: ${source.origin} has no click-test`);
  // The server's defaults, as `webgrpo env-server` runs them (no env vars).
  // Room for a round's sessions while the last round's are still being released.
  const def = createBrowserGymEnv({ miniwob: source, maxConcurrentEnvs: 2 * sessions }, {});
  const server = await createEnvServer({ port: 0, envs: { browsergym: def } });
  const url = `${server.url}/envs/browsergym`;
  const resetMs: number[] = [];
  const clickMs: number[] = [];
  const probeMs: number[] = [];
  const failures: string[] = [];
  const probeErrors: string[] = [];
  const winsPerRound: number[] = [];
  let running: RunningLoad | null = null;
  try {
    // Chromium's launch is not part of a round.
    const warm = await connect(url, { timeoutMs: 120_000 });
    await warm.reset({ task_name: 'click-test', seed: 0 });
    await warm.close();
    running = load.kind === 'train' ? await startTraining(opts.miniwob) : load.kind === 'hogs' ? startHogs(load.count) : null;
    const linesBefore = running?.lines() ?? null;
    const loadStart = loadavg()[0]!;
    let loadMax = loadStart;
    for (let r = 0; r < rounds; r++) {
      const clients = await Promise.all(Array.from({ length: sessions }, () => connect(url, { timeoutMs: 120_000 })));
      try {
        const won = await Promise.all(
          clients.map(async (client, i) => {
            let t = performance.now();
            const obs = (await client.reset({ task_name: 'click-test', seed: r * sessions + i })).observation as { axtree_txt: string };
            resetMs.push(performance.now() - t);
            t = performance.now();
            // The first action, at once: the one the issue saw time out under load.
            const result = await client.step({ action_str: `click('${buttonBid(obs.axtree_txt)}')` });
            clickMs.push(performance.now() - t);
            const error = String((result.observation as { error: string }).error);
            if (result.reward === 1 && result.done) return true;
            if (failures.length < 5) failures.push(error || `reward ${result.reward}, done ${result.done}`);
            return false;
          }),
        );
        winsPerRound.push(won.filter(Boolean).length);
        // A bid that is not on the page: the action waits its whole timeout under the same load.
        const probe = clients[0]!;
        await probe.reset({ task_name: 'click-test', seed: r });
        const t = performance.now();
        const failed = await probe.step({ action_str: "click('999')" });
        probeMs.push(performance.now() - t);
        probeErrors.push(String((failed.observation as { error: string }).error));
      } finally {
        await Promise.all(clients.map((c) => c.close()));
      }
      loadMax = Math.max(loadMax, loadavg()[0]!);
    }
    const linesDuring = running && linesBefore !== null ? running.lines()! - linesBefore : null;
    await running?.stop();
    running = null;
    for (let i = 0; i < 250 && def.browser.contexts > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    return {
      bench: 'env-server-browsergym-load',
      source: source ? source.origin : 'built-in',
      sessions,
      rounds,
      load: load.kind === 'train' ? 'webgrpo train (tiny model, browsergym task)' : load.kind === 'hogs' ? `${load.count} busy-looping processes` : 'none added',
      loadavg_1m: { start: round1(loadStart), max: round1(loadMax) },
      train_lines_during: linesDuring,
      wins: winsPerRound.reduce((a, b) => a + b, 0),
      attempts: sessions * rounds,
      wins_per_round: winsPerRound,
      reset_ms: { p50: round1(percentile(resetMs, 50)), p99: round1(percentile(resetMs, 99)) },
      click_ms: { p50: round1(percentile(clickMs, 50)), p99: round1(percentile(clickMs, 99)) },
      failures,
      probe: { errors: [...new Set(probeErrors)], ms_p50: round1(percentile(probeMs, 50)), clean: probeErrors.every((e) => e !== '' && isCleanError(e)) && failures.every(isCleanError) },
      leaked_contexts: def.browser.contexts,
    };
  } finally {
    await running?.stop();
    await server.close();
  }
}

/** `train`, `hogs:N` or `none`. */
export function parseLoadSpec(value: string): LoadSpec {
  if (value === 'train' || value === 'none') return { kind: value };
  const m = /^hogs:(\d+)$/.exec(value);
  if (m && Number(m[1]) >= 1 && Number(m[1]) <= 64) return { kind: 'hogs', count: Number(m[1]) };
  throw new Error(`bench browsergym-load: --load takes train, hogs:N (1–64) or none, got '${value}'`);
}

/** `--sessions N`, `--rounds N`, `--miniwob DIR|URL`, `--load …` (the CLI's parsed strings). */
export function parseBenchBrowserGymLoadArgs(opts: Record<string, string>): BenchBrowserGymLoadOptions {
  const out: BenchBrowserGymLoadOptions = {};
  for (const [key, value] of Object.entries(opts)) {
    if (key === 'sessions' || key === 'rounds') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error(`bench browsergym-load: --${key} needs an integer from 1 to 64, got '${value}'`);
      out[key] = n;
    } else if (key === 'miniwob') out.miniwob = value;
    else if (key === 'load') out.load = parseLoadSpec(value);
    else throw new Error(`bench browsergym-load: unknown option --${key} (it takes --sessions, --rounds, --miniwob, --load)`);
  }
  return out;
}
