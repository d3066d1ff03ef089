// The server under attack, as users run it: `webgrpo start` (or `env-server`) in its own process,
// under Node's `--unhandled-rejections=strict`, so any throw or rejection nobody handles kills it
// and the test sees the exit. Also what the hostile tests measure from outside: descriptors
// (/proc/<pid>/fd), RSS (/proc/<pid>/status) and the session counts of GET /envs.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'webgrpo.js');

export interface ServerProcess {
  url: string;
  port: number;
  pid: number;
  proc: ChildProcess;
  /** Everything the server wrote on stderr (its log). */
  stderr(): string;
  /** Null while it runs; the exit code or signal once it died. */
  exited(): string | null;
  /** Open descriptors of the server process. */
  fdCount(): number;
  /** Descriptors that point at files under `dir`. */
  fdsUnder(dir: string): string[];
  /** Resident memory, MiB. */
  rssMiB(): number;
  stop(): Promise<void>;
}

/** A temporary folder, removed by `cleanup()`. */
export function tempDir(prefix: string): { dir: string; cleanup(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Resolves with the URL a server process prints as its first JSON line on stdout; rejects if it exits first or takes over 60 s. */
export function listeningUrl(proc: ChildProcess, what: string, stderr: () => string): Promise<string> {
  let out = '';
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start within 60 s: ${stderr()}`)), 60_000);
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line && out.includes('\n')) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url.replace(/\/$/, ''));
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before listening: ${stderr()}`));
    });
  });
}

/**
 * Starts `webgrpo <command> --port 0 …args` and resolves once it printed its URL. `ulimitFds`
 * runs it under `ulimit -n` (descriptor exhaustion without exhausting the test machine).
 */
export async function startServerProcess(command: 'start' | 'env-server', args: string[], opts: { ulimitFds?: number } = {}): Promise<ServerProcess> {
  const node = [process.execPath, '--unhandled-rejections=strict', BIN, command, '--port', '0', ...args];
  const proc = opts.ulimitFds
    ? spawn('bash', ['-c', `ulimit -n ${opts.ulimitFds} && exec "$@"`, 'bash', ...node], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(node[0], node.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  let exit: string | null = null;
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString('utf8')));
  proc.on('exit', (code, signal) => (exit = signal ?? String(code)));
  const url = await listeningUrl(proc, `webgrpo ${command}`, () => err);
  const pid = proc.pid!;
  return {
    url,
    port: Number(new URL(url).port),
    pid,
    proc,
    stderr: () => err,
    exited: () => exit,
    fdCount: () => fs.readdirSync(`/proc/${pid}/fd`).length,
    fdsUnder(dir: string): string[] {
      const found: string[] = [];
      for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
        try {
          const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
          if (target.startsWith(dir + path.sep)) found.push(target);
        } catch {
          // closed between readdir and readlink
        }
      }
      return found;
    },
    rssMiB(): number {
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
    },
    async stop(): Promise<void> {
      if (exit !== null) return;
      const gone = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGTERM');
      const killer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await gone;
      clearTimeout(killer);
    },
  };
}

/** Sends raw bytes on a fresh TCP connection; resolves with what came back before the close (or `waitMs`). */
export function rawExchange(port: number, data: string | Buffer, waitMs = 2000): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let got = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(got);
    };
    const timer = setTimeout(done, waitMs);
    socket.on('data', (d) => (got += d.toString('latin1')));
    socket.on('error', done);
    socket.on('close', done);
    socket.write(data);
  });
}

export function upgradeRequest(target: string): string {
  return `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;
}

/** One complete, ordinary echo episode over `/ws`: reset, a step, state, close frame. Throws on anything else. */
export async function normalEchoSession(url: string): Promise<void> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/envs/echo/ws`);
  const frames: string[] = [];
  const waiters: Array<() => void> = [];
  ws.on('message', (d) => {
    frames.push(d.toString());
    waiters.splice(0).forEach((w) => w());
  });
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => {
    resolve(code);
    waiters.splice(0).forEach((w) => w());
  }));
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = async (): Promise<any> => {
    const deadline = Date.now() + 10_000;
    while (frames.length === 0) {
      if (ws.readyState === WebSocket.CLOSED) throw new Error('closed before a reply');
      if (Date.now() > deadline) throw new Error('no reply within 10 s');
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 100);
      });
    }
    return JSON.parse(frames.shift()!);
  };
  ws.send('{"type":"reset","data":{}}');
  const reset = await next();
  if (reset.type !== 'observation') throw new Error(`reset answered ${JSON.stringify(reset)}`);
  ws.send('{"type":"step","data":{"message":"abc"}}');
  const step = await next();
  if (step.data?.reward !== 0.30000000000000004) throw new Error(`step answered ${JSON.stringify(step)}`);
  ws.send('{"type":"state"}');
  const state = await next();
  if (state.data?.step_count !== 1) throw new Error(`state answered ${JSON.stringify(state)}`);
  ws.send('{"type":"close"}');
  const code = await closed;
  if (code !== 1000) throw new Error(`closed with ${code}`);
}

/** Sum of active and queued sessions over every env, from GET /envs. */
export async function sessionCounts(url: string): Promise<{ active: number; queued: number }> {
  const listing = (await (await fetch(`${url}/envs`)).json()) as { envs: { active: number; queued: number }[] };
  return listing.envs.reduce((acc, e) => ({ active: acc.active + e.active, queued: acc.queued + e.queued }), { active: 0, queued: 0 });
}

/** Polls `check` every 50 ms until it holds or `ms` passes; returns whether it held. */
export async function settles(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A dist/ folder the static handler serves: index.html plus `assets` files of `sizeKiB` each. */
export function fakeDist(dir: string, assets: number, sizeKiB: number): string[] {
  fs.mkdirSync(path.join(dir, 'assets'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>webgrpo</title>');
  const names: string[] = [];
  const body = Buffer.alloc(sizeKiB * 1024, 'x');
  for (let i = 0; i < assets; i++) {
    const name = `assets/chunk-${i}.js`;
    fs.writeFileSync(path.join(dir, name), body);
    names.push(name);
  }
  return names;
}
