// Run store under load, against `webgrpo start` in its own process: one client imports a run of
// STEPS empty steps while READERS clients keep reading a step of ROLLOUTS rollouts (its rollouts, the
// exported page, the export) and a live run keeps writing a step every 200 ms. Measures what a user
// of the server feels: /health latency, the live run's write latency and failures, how long another
// connection waits for the database's write lock (the longest the import held it), the import's
// wall time and the server's peak RSS.
//
//   npx tsx bench/env-server/run-store-load.ts [--steps 300000] [--rollouts 200000] [--readers 3]

import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { RunStore } from '../../env-server/runs.ts';

const { values } = parseArgs({ options: { steps: { type: 'string' }, rollouts: { type: 'string' }, readers: { type: 'string' } } });
const STEPS = Number(values.steps ?? 300_000);
const ROLLOUTS = Number(values.rollouts ?? 200_000);
const READERS = Number(values.readers ?? 3);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-store-load-'));
const dbFile = path.join(dir, 'data', 'runs.db');
fs.mkdirSync(path.join(dir, 'dist'));
fs.writeFileSync(path.join(dir, 'dist', 'index.html'), '<!doctype html>');

// The big step is written straight into the file, as a store from before any cap would hold it.
const seed = new RunStore(dbFile);
const big = seed.create({ name: 'big step', config: {}, model: {}, env: {} });
const live = seed.create({ name: 'live', config: {}, model: {}, env: {} });
seed.close();
const raw = new Database(dbFile);
const ins = raw.prepare('INSERT INTO rollouts (run_id, step, idx, data) VALUES (?, 0, ?, ?)');
raw.transaction(() => {
  raw.prepare("INSERT INTO steps (run_id, step, metrics) VALUES (?, 0, '{}')").run(big.id);
  for (let i = 0; i < ROLLOUTS; i++) ins.run(big.id, i, '{"reward":1,"turns":[{"role":"assistant","text":"x"}]}');
})();
raw.close();

const importBody = JSON.stringify({
  format: 'webgrpo-run',
  version: 1,
  run: { name: 'imported', config: {}, model: {}, env: {} },
  steps: Array.from({ length: STEPS }, (_, step) => ({ step, metrics: {} })),
  rollouts: [],
});

const bin = fileURLToPath(new URL('../../bin/webgrpo.js', import.meta.url));
const server = spawn(process.execPath, [bin, 'start', '--port', '0', '--data', path.dirname(dbFile), '--dist', path.join(dir, 'dist'), '--max-rollouts-per-step', String(ROLLOUTS), '--max-rollouts-per-run', String(ROLLOUTS)], { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise<string>((resolve, reject) => {
  let out = '';
  server.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    const line = out.split('\n').find((l) => l.startsWith('{'));
    if (line) resolve((JSON.parse(line) as { url: string }).url.replace(/\/$/, ''));
  });
  server.once('exit', (code) => reject(new Error(`server exited (${code})`)));
});

let peakRssMiB = 0;
const rssTimer = setInterval(() => {
  try {
    const kb = Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${server.pid}/status`, 'utf8'))![1]);
    peakRssMiB = Math.max(peakRssMiB, kb / 1024);
  } catch {
    // gone
  }
}, 50);

let done = false;
const failures: string[] = [];
/** Milliseconds `f` took; a failure (a reset connection) counts, with its time. */
const timed = async (f: () => Promise<unknown>): Promise<number> => {
  const t = performance.now();
  try {
    await f();
  } catch (err) {
    failures.push(String((err as Error).cause ?? err));
  }
  return performance.now() - t;
};

// Another connection's wait for the write lock: what every run store write of the server pays.
const lockWaits: number[] = [];
const locker = new Database(dbFile);
locker.pragma('busy_timeout = 60000');
const lockProbe = (async () => {
  while (!done) {
    const t = performance.now();
    try {
      locker.exec('BEGIN IMMEDIATE; COMMIT');
    } catch (err) {
      failures.push(`write lock: ${(err as Error).message}`);
    }
    lockWaits.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
})();

const healthMs: number[] = [];
const health = (async () => {
  while (!done) {
    healthMs.push(await timed(() => fetch(`${url}/health`).then((r) => r.text())));
    await new Promise((r) => setTimeout(r, 100));
  }
})();

const writeMs: number[] = [];
let writeFailures = 0;
const writer = (async () => {
  for (let step = 0; !done; step++) {
    writeMs.push(await timed(async () => {
      const r = await fetch(`${url}/api/runs/${live.id}/steps`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-webgrpo-write-token': live.writeToken }, body: JSON.stringify({ step, metrics: { reward: 1 } }) });
      if (r.status !== 200) writeFailures++;
      await r.text();
    }));
    await new Promise((r) => setTimeout(r, 200));
  }
})();

let reads = 0;
const readMaxMs: Record<string, number> = {};
const readers = Array.from({ length: READERS }, async (_, i) => {
  const routes = [`/rollouts?step=0&share=${big.shareToken}`, `/page?share=${big.shareToken}`, `/export?share=${big.shareToken}`];
  while (!done) {
    const route = routes[(reads + i) % routes.length];
    const ms = await timed(async () => (await fetch(`${url}/api/runs/${big.id}${route}`)).arrayBuffer());
    const name = route.split('?')[0].slice(1);
    readMaxMs[name] = Math.max(readMaxMs[name] ?? 0, Math.round(ms));
    reads++;
  }
});

const importStart = performance.now();
const imported = await fetch(`${url}/api/runs/import`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: importBody });
const importStatus = imported.status;
await imported.text();
const importS = (performance.now() - importStart) / 1000;
// A little longer under the readers alone.
await new Promise((r) => setTimeout(r, 2000));
done = true;
await Promise.all([health, writer, lockProbe, ...readers]);
clearInterval(rssTimer);
locker.close();
server.kill('SIGTERM');
await new Promise((r) => server.once('exit', r));
fs.rmSync(dir, { recursive: true, force: true });

const max = (xs: number[]) => Math.round(Math.max(0, ...xs));
console.log(JSON.stringify({
  bench: 'run-store-load',
  import_steps: STEPS,
  import_body_mib: Number((Buffer.byteLength(importBody) / 2 ** 20).toFixed(1)),
  import_status: importStatus,
  import_s: Number(importS.toFixed(2)),
  step_rollouts: ROLLOUTS,
  readers: READERS,
  reads,
  read_max_ms: readMaxMs,
  health_max_ms: max(healthMs),
  live_write_max_ms: max(writeMs),
  live_write_failures: writeFailures,
  write_lock_wait_max_ms: max(lockWaits),
  peak_rss_mib: Math.round(peakRssMiB),
  request_failures: failures.slice(0, 5),
}));
