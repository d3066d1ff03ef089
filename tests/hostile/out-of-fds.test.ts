// Out of file descriptors (`ulimit -n`), `webgrpo start` answers what it can: a static file it cannot
// open is a 500 (and a log line), a connection it cannot accept is dropped, and once descriptors are
// free again it serves as before. The old server died of the unhandled stream error.
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeDist, normalEchoSession, settles, startServerProcess, tempDir, type ServerProcess } from './server-process.ts';

let work: ReturnType<typeof tempDir>;
let server: ServerProcess;

beforeAll(async () => {
  work = tempDir('webgrpo-fds-');
  fakeDist(path.join(work.dir, 'dist'), 1, 64);
  server = await startServerProcess('start', ['--data', path.join(work.dir, 'data'), '--dist', path.join(work.dir, 'dist')], { ulimitFds: 96 });
}, 90_000);

afterAll(async () => {
  await server?.stop();
  work?.cleanup();
});

/** A keep-alive connection that has had one request answered (so the server holds its descriptor). */
function heldConnection(port: number): Promise<{ socket: net.Socket; ask(request: string): Promise<string> } | null> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let buffered = '';
    let waiter: ((text: string) => void) | null = null;
    socket.on('data', (d) => {
      buffered += d.toString('latin1');
      if (waiter && /\r\n\r\n/.test(buffered)) {
        const w = waiter;
        waiter = null;
        setTimeout(() => w(buffered), 20);
      }
    });
    socket.on('error', () => {});
    const ask = (request: string) =>
      new Promise<string>((r) => {
        buffered = '';
        waiter = r;
        socket.write(request);
        setTimeout(() => r(buffered), 1500);
      });
    socket.on('connect', async () => {
      const reply = await ask('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      resolve(reply.startsWith('HTTP/1.1 200') ? { socket, ask } : (socket.destroy(), null));
    });
    socket.on('close', () => resolve(null));
  });
}

describe('out of descriptors', () => {
  it('answers 500 for a static file it cannot open, drops what it cannot accept, and recovers', async () => {
    const held: NonNullable<Awaited<ReturnType<typeof heldConnection>>>[] = [];
    for (;;) {
      const c = await heldConnection(server.port);
      if (!c) break;
      held.push(c);
      expect(held.length).toBeLessThan(200);
    }
    // Every descriptor is in use: the next file open fails.
    const reply = await held[0].ask('GET /assets/chunk-0.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    expect(reply).toMatch(/^HTTP\/1\.1 500 /);
    expect(server.stderr()).toMatch(/static \/assets\/chunk-0\.js: cannot open: EMFILE/);
    for (const c of held) c.socket.destroy();
    expect(server.exited()).toBeNull();
    expect(await settles(async () => (await fetch(`${server.url}/assets/chunk-0.js`)).status === 200)).toBe(true);
    await normalEchoSession(server.url);
  }, 60_000);
});
