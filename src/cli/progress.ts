// Progress of long CLI work on stderr (stdout stays machine-readable): what is happening, how far
// along, and an ETA from the rate so far. On a terminal one status line is redrawn in place; in a log
// (not a TTY) a line is written at most every few seconds, plus the first and the last.

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** ETA of the rest of the work from the average rate so far (null until something is done). */
export function eta(elapsedSeconds: number, done: number, total: number): number | null {
  if (done <= 0 || total <= 0) return null;
  return (elapsedSeconds / done) * Math.max(0, total - done);
}

export interface ProgressTask {
  /** `done` of `total` units; `detail` is appended (e.g. a loss); `total` may grow (a download finding more files). */
  update(done: number, detail?: string, total?: number): void;
  /** Final line of this task. */
  end(detail?: string): void;
}

export class Progress {
  private readonly tty: boolean;
  private statusShown = false;

  constructor(
    private readonly stream: NodeJS.WriteStream = process.stderr,
    /** Least time between two lines when not on a terminal. */
    private readonly logIntervalMs = 5000,
  ) {
    this.tty = stream.isTTY === true;
  }

  /** A one-off message on its own line. */
  line(text: string): void {
    this.clearStatus();
    this.stream.write(`${text}\n`);
  }

  /** A task with a known total; `unit` formats amounts (default: plain numbers). */
  task(label: string, total: number, unit: (n: number) => string = String): ProgressTask {
    const start = performance.now();
    let last = -Infinity;
    const render = (done: number, detail?: string): string => {
      const elapsed = (performance.now() - start) / 1000;
      const left = eta(elapsed, done, total);
      const pct = total > 0 ? ` (${Math.floor((100 * done) / total)}%)` : '';
      const timing = left === null ? `${formatDuration(elapsed)} so far` : `${formatDuration(elapsed)} elapsed, ETA ${formatDuration(left)}`;
      return `${label}: ${unit(done)}/${unit(total)}${pct}, ${timing}${detail ? ` — ${detail}` : ''}`;
    };
    return {
      update: (done, detail, newTotal) => {
        if (newTotal !== undefined) total = newTotal;
        const now = performance.now();
        if (this.tty) return this.status(render(done, detail));
        if (now - last < this.logIntervalMs && done < total) return;
        last = now;
        this.stream.write(`${render(done, detail)}\n`);
      },
      end: (detail) => this.line(`${label}: done in ${formatDuration((performance.now() - start) / 1000)}${detail ? ` — ${detail}` : ''}`),
    };
  }

  private status(text: string): void {
    this.stream.write(`\r${text}\x1b[K`);
    this.statusShown = true;
  }

  private clearStatus(): void {
    if (this.tty && this.statusShown) this.stream.write('\r\x1b[K');
    this.statusShown = false;
  }
}

export function formatBytes(n: number): string {
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(0)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}
