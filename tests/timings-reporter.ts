// Per-file test times, kept in the repo (tests/timings.json) so the suite's cost is visible and
// schedulable: every vitest run merges the times of the files it ran into the file (a file run
// alone updates its own entry; files that no longer exist drop out), .ci/run prints the slowest,
// and tests/timings-sequencer.ts starts the slowest files first.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Reporter, TestModule } from 'vitest/node';

export const TIMINGS_FILE = fileURLToPath(new URL('timings.json', import.meta.url));

/** One test file in one vitest project (the GPU files run once per adapter). */
export interface FileTiming {
  /** Path from the repository root, e.g. tests/unit/gpu.test.ts. */
  file: string;
  project: string;
  /** Wall time of the file in its worker: import, setup, hooks and tests. */
  seconds: number;
  state: string;
}

export interface Timings {
  /** The last run that wrote this file: when, its wall time and how many files it ran. */
  lastRun: { at: string; wallSeconds: number; files: number };
  /** Slowest first. */
  files: FileTiming[];
}

export const timingKey = (t: { file: string; project: string }) => `${t.project}:${t.file}`;

export function readTimings(file = TIMINGS_FILE): Timings | null {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Timings;
  } catch {
    return null;
  }
}

/** Vitest reporter: merges this run's per-file times into tests/timings.json. */
export default class TimingsReporter implements Reporter {
  private started = Date.now();
  private root = process.cwd();

  onInit(ctx: { config: { root: string } }): void {
    this.root = ctx.config.root;
  }

  onTestRunStart(): void {
    this.started = Date.now();
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const ran: FileTiming[] = modules
      .filter((m) => m.state() !== 'skipped' && m.state() !== 'queued' && m.state() !== 'pending')
      .map((m) => {
        const d = m.diagnostic();
        const ms = d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration;
        return { file: path.relative(this.root, m.moduleId), project: m.project.name, seconds: Math.round(ms / 100) / 10, state: m.state() };
      });
    if (ran.length === 0) return;
    const fresh = new Set(ran.map(timingKey));
    const kept = (readTimings()?.files ?? []).filter((t) => !fresh.has(timingKey(t)) && fs.existsSync(path.join(this.root, t.file)));
    const timings: Timings = {
      lastRun: { at: new Date().toISOString(), wallSeconds: Math.round((Date.now() - this.started) / 1000), files: ran.length },
      files: [...kept, ...ran].sort((a, b) => b.seconds - a.seconds || timingKey(a).localeCompare(timingKey(b))),
    };
    // One line per file: a run's diff shows which files' times moved.
    const lines = timings.files.map((t) => `  ${JSON.stringify(t)}`).join(',\n');
    fs.writeFileSync(TIMINGS_FILE, `{\n "lastRun": ${JSON.stringify(timings.lastRun)},\n "files": [\n${lines}\n ]\n}\n`);
  }
}
