// `webgrpo start` on a busy port (issue 24): without --port it takes the next free one after 8000 and
// prints it; with an explicit --port it fails, naming the port. Real processes, as users run them.
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeDist, listeningUrl, tempDir } from '../hostile/server-process.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'webgrpo.js');

/** Holds `port` on 127.0.0.1, or leaves it when something else holds it already (busy either way). */
async function occupy(port: number): Promise<net.Server | null> {
  const server = net.createServer();
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(null) : reject(err)));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

function start(args: string[], data: string, dist: string) {
  const proc = spawn(process.execPath, [BIN, 'start', '--dist', dist, '--data', data, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, stderr: () => err, exited };
}

describe('webgrpo start on a busy port', { timeout: 120_000 }, () => {
  const tmp = tempDir('webgrpo-port-');
  const dist = path.join(tmp.dir, 'dist');
  let held: net.Server | null = null;

  beforeAll(async () => {
    fakeDist(dist, 0, 1);
    held = await occupy(8000);
  });
  afterAll(() => {
    held?.close();
    tmp.cleanup();
  });

  it('takes the next free port after a busy 8000 and prints it', async () => {
    const s = start([], path.join(tmp.dir, 'a'), dist);
    try {
      const url = await listeningUrl(s.proc, 'webgrpo start', s.stderr);
      const port = Number(new URL(url).port);
      expect(port).toBeGreaterThan(8000);
      expect(port).toBeLessThan(8020);
      expect(s.stderr()).toContain(`port 8000 is in use, using ${port} instead`);
      expect((await fetch(`${url}/health`)).status).toBe(200);
    } finally {
      s.proc.kill('SIGTERM');
      await s.exited;
    }
  });

  it('fails with an explicit --port that is busy, naming it', async () => {
    const s = start(['--port', '8000'], path.join(tmp.dir, 'b'), dist);
    expect(await s.exited).toBe(1);
    expect(s.stderr()).toContain('--port 8000: 127.0.0.1:8000 is already in use');
  });
});
