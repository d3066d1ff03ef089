// Chromium's sandbox stays on where the machine allows it. A server that is not root gets sandboxed
// renderers (seccomp filter on, own PID namespace, no --no-sandbox); this test runs one as `nobody`
// when it runs as root itself (CI does). As root, Chromium refuses its sandbox: the server says so on
// stderr, naming why and what still protects the user.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Session } from '../envs/browsergym-session.ts';
import { listeningUrl } from './server-process.ts';
import type { EnvServer } from '../../env-server/server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;

/** `webgrpo env-server` as `uid` (and its HOME/TMPDIR in a folder it owns); resolves once it listens. */
async function envServerAs(uid: number, home: string): Promise<{ proc: ChildProcess; url: string; stderr: () => string }> {
  const proc = spawn(process.execPath, [path.join(ROOT, 'bin', 'webgrpo.js'), 'env-server', '--port', '0'], {
    cwd: ROOT,
    uid,
    gid: uid,
    env: { ...process.env, HOME: home, TMPDIR: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString('utf8')));
  const url = await listeningUrl(proc, 'env-server', () => err);
  return { proc, url, stderr: () => err };
}

/** pid → what the sandbox looks like, for Chromium renderers descended from `root`. */
function renderersUnder(root: number): { cmdline: string; seccomp: string; nspids: number }[] {
  const parent = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone while we looked.
    }
  }
  const found = [];
  for (const pid of parent.keys()) {
    let p = parent.get(pid);
    for (let hops = 0; p !== undefined && p !== root && p > 1 && hops < 20; hops++) p = parent.get(p);
    if (p !== root) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (!cmdline.includes('--type=renderer')) continue;
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      found.push({ cmdline, seccomp: /^Seccomp:\s+(\d)/m.exec(status)![1]!, nspids: /^NSpid:\s+(.*)$/m.exec(status)![1]!.trim().split(/\s+/).length });
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

/** Stops the server the way users do (SIGTERM: it closes its Chromium), then removes its folder. */
async function stop(server: { proc: ChildProcess }, home: string): Promise<void> {
  if (server.proc.exitCode === null) {
    const exited = new Promise((resolve) => server.proc.once('exit', resolve));
    server.proc.kill('SIGTERM');
    await exited;
  }
  fs.rmSync(home, { recursive: true, force: true, maxRetries: 5 });
}

let cleanup: (() => Promise<void>) | null = null;
afterEach(async () => {
  await cleanup?.();
  cleanup = null;
});

describe("Chromium's sandbox", () => {
  it('a server that is not root runs its renderers sandboxed, with no warning', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'bg-sandbox-'));
    const uid = asRoot ? NOBODY : process.getuid!();
    fs.chownSync(home, uid, uid);
    const server = await envServerAs(uid, home);
    cleanup = () => stop(server, home);
    const s = await Session.open({ url: server.url } as EnvServer);
    try {
      const reset = await s.reset({ task_name: 'click-test', seed: 1 });
      expect(reset.data.observation.goal).toBe('Click the button.');
      const found = renderersUnder(server.proc.pid!);
      expect(found.length).toBeGreaterThan(0);
      for (const r of found) {
        expect(r.cmdline).not.toContain('--no-sandbox');
        // Seccomp 2: a filter is on; more than one NSpid entry: the renderer has its own PID namespace.
        expect(r.seccomp).toBe('2');
        expect(r.nspids).toBeGreaterThan(1);
      }
      expect((await s.step("click('13')")).data.reward).toBe(1);
    } finally {
      await s.close();
    }
    expect(server.stderr()).not.toMatch(/WITHOUT its sandbox/);
  }, 60_000);

  it.skipIf(!asRoot)('as root the sandbox cannot be had: the server says why and what protects the user instead', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'bg-sandbox-'));
    const server = await envServerAs(0, home);
    cleanup = () => stop(server, home);
    const s = await Session.open({ url: server.url } as EnvServer);
    try {
      expect((await s.reset({ task_name: 'click-test', seed: 1 })).data.observation.goal).toBe('Click the button.');
    } finally {
      await s.close();
    }
    expect(server.stderr()).toMatch(/browsergym runs Chromium WITHOUT its sandbox: the server runs as root, .* What still protects you: task pages still reach only/);
    expect(renderersUnder(server.proc.pid!).every((r) => r.seccomp !== '2' || r.cmdline.includes('--no-sandbox'))).toBe(true);
  }, 60_000);
});
