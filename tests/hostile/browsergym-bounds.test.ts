// What one browsergym session can cost, tried as a hostile model or page would: a page that spins in
// JS, a client that leaves mid-step, huge actions, a page that allocates 1 GB, blob downloads, and
// WebRTC/WebSockets to local ports. The hostile pages are served like task pages (a task map of this
// file's own, never reachable on a real server), so the real router, context and renderer run them.
// Renderers are counted from /proc (Chromium's processes under this one), not from our own counters.

import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBrowserGymEnv, MINIWOB_TASKS, type BrowserGymEnvDefinition } from '../../env-server/envs/browsergym/index.ts';
import type { MiniwobTask } from '../../env-server/envs/browsergym/tasks/index.ts';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { bidOf, Session } from '../envs/browsergym-session.ts';

// Long enough that a reset on a busy CI machine never meets it: only the hostile steps do.
const DEADLINE_MS = 6000;
const MAX_EPISODE_STEPS = 4;

/** A task page whose button (bid 13, as click-test's) runs `onClick`. */
function hostileTask(name: string, onClick: string): MiniwobTask {
  return {
    name,
    description: 'test only',
    generate: () => ({ title: name, goal: 'Click the button.', area: '<button id="go">Go</button>', script: `byId('go').addEventListener('click', function () { ${onClick} });` }),
  };
}

let udp: dgram.Socket;
let udpPackets = 0;
let tcp: net.Server;
let tcpConnections = 0;

function hostileTasks(udpPort: number, tcpPort: number): MiniwobTask[] {
  return [
    hostileTask('spin', 'for (;;) {}'),
    // 1.1 GB of JS arrays (1 MiB each).
    hostileTask('alloc', 'window.keep = []; for (var i = 0; i < 1100; i++) window.keep.push(new Array(1 << 17).fill(i + 0.5)); document.title = "allocated";'),
    // 1 GiB of typed arrays: outside the JS heap, so only the renderer memory watch stops it.
    hostileTask('buffers', 'window.keep = []; for (var i = 0; i < 16; i++) window.keep.push(new Uint8Array(64 << 20).fill(1)); document.title = "allocated";'),
    hostileTask('download', 'var a = document.createElement("a"); a.href = URL.createObjectURL(new Blob([new Uint8Array(50 << 20)])); a.download = "big.bin"; document.body.appendChild(a); a.click();'),
    hostileTask(
      'webrtc',
      `var pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:127.0.0.1:${udpPort}' }, { urls: 'turn:127.0.0.1:${tcpPort}?transport=tcp', username: 'u', credential: 'p' }] });
       pc.createDataChannel('x');
       pc.createOffer().then(function (offer) { return pc.setLocalDescription(offer); });
       try { new WebSocket('ws://127.0.0.1:${tcpPort}/'); } catch (e) {}`,
    ),
  ];
}

/** Chromium renderer processes descended from this process. */
function renderers(): number[] {
  const parent = new Map<number, number>();
  const isRenderer = new Set<number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('--type=renderer')) isRenderer.add(Number(entry));
    } catch {
      // Gone while we looked.
    }
  }
  const descends = (pid: number): boolean => {
    for (let p = parent.get(pid), hops = 0; p !== undefined && p > 1 && hops < 20; p = parent.get(p), hops++) if (p === process.pid) return true;
    return false;
  };
  return [...isRenderer].filter(descends);
}

async function until(what: string, ok: () => boolean, withinMs: number): Promise<number> {
  const start = Date.now();
  while (!ok()) {
    if (Date.now() - start > withinMs) throw new Error(`${what}: not within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return Date.now() - start;
}

/** Bytes of the regular files under `dir`. */
function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    try {
      total += fs.statSync(path.join(entry.parentPath, entry.name)).size;
    } catch {
      // Removed while we counted.
    }
  }
  return total;
}

let def: BrowserGymEnvDefinition;
/** What the browser warned about (renderer kills). */
const warnings: string[] = [];
let server: EnvServer;
let tmp: string;
const savedTmpdir = process.env.TMPDIR;

beforeAll(async () => {
  // Chromium and Playwright put downloads under the temp folder: a private one shows what was written.
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bg-bounds-'));
  process.env.TMPDIR = tmp;
  udp = dgram.createSocket('udp4');
  udp.on('message', () => udpPackets++);
  await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
  tcp = net.createServer((socket) => {
    tcpConnections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  const tasks = new Map([...MINIWOB_TASKS, ...hostileTasks(udp.address().port, (tcp.address() as net.AddressInfo).port).map((t) => [t.name, t] as const)]);
  def = createBrowserGymEnv({ tasks, actionTimeoutMs: 1000, stepTimeoutMs: DEADLINE_MS, maxEpisodeSteps: MAX_EPISODE_STEPS, warn: (line) => warnings.push(line) }, {});
  server = await createEnvServer({ port: 0, envs: { browsergym: def } });
});

afterAll(async () => {
  await server?.close();
  await def?.dispose?.();
  udp?.close();
  tcp?.close();
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** No context, no renderer, no slot left (what /envs says agrees with the processes). */
async function nothingLeft(withinMs: number): Promise<number> {
  return until(
    'context, renderer and slot gone',
    () => def.browser.contexts === 0 && renderers().length === 0 && server.stats().activeSessions === 0,
    withinMs,
  );
}

/** What GET /envs says of browsergym's active sessions. */
async function envsActive(): Promise<number> {
  const listing = (await (await fetch(`${server.url}/envs`)).json()) as { envs: { name: string; active: number }[] };
  return listing.envs.find((e) => e.name === 'browsergym')!.active;
}

describe('a page that spins', () => {
  it('the step answers a deadline error in bounded time; context and renderer are gone; a reset plays again', async () => {
    const s = await Session.open(server);
    try {
      await s.reset({ task_name: 'spin' });
      expect(renderers().length).toBeGreaterThan(0);
      const start = Date.now();
      const hung = await s.step("click('13')");
      const took = Date.now() - start;
      expect(took).toBeGreaterThanOrEqual(DEADLINE_MS - 100);
      expect(took).toBeLessThan(DEADLINE_MS + 3000);
      expect([hung.type, hung.data.done, hung.data.observation.last_action_error]).toEqual(['observation', true, true]);
      expect(hung.data.observation.error).toMatch(/^The step ran past the server's 6 s deadline \(BROWSERGYM_STEP_TIMEOUT_S\), so this session's browser context was closed/);
      // The session (and its slot) stays; its renderer does not.
      await until('renderer gone after the deadline', () => def.browser.contexts === 0 && renderers().length === 0, 3000);
      const next = await s.step("click('13')");
      expect(next.data.observation.error).toMatch(/context was closed: the step ran past .*; reset to start a new episode\.$/);
      const tree = (await s.reset({ task_name: 'click-test', seed: 1 })).data.observation.axtree_txt;
      expect((await s.step(`click('${bidOf(tree, 'button', 'Click Me!')}')`)).data.reward).toBe(1);
    } finally {
      await s.close();
    }
    await nothingLeft(3000);
  }, 40_000);

  it('the client leaves mid-step: context, renderer and slot are gone within seconds, before any deadline', async () => {
    const s = await Session.open(server);
    await s.reset({ task_name: 'spin' });
    s.ws.send(JSON.stringify({ type: 'step', data: { action_str: "click('13')", metadata: {} } }));
    await new Promise((r) => setTimeout(r, 300));
    expect(renderers().length).toBeGreaterThan(0);
    const left = Date.now();
    s.ws.terminate();
    const gone = await nothingLeft(DEADLINE_MS - 1000);
    expect(await envsActive()).toBe(0);
    console.log(`client left mid-step on a spinning page: context and renderer gone in ${Date.now() - left} ms (polled ${gone} ms)`);
  }, 30_000);
});

describe('huge actions', () => {
  it('a 20 000-character send_keys, too many calls, a data: URL or a fifth tab are refused at once; 9 000 keystrokes meet the deadline', async () => {
    const s = await Session.open(server);
    try {
      await s.reset({ task_name: 'click-test', seed: 1 });
      const start = Date.now();
      const big = await s.step(`send_keys('${'a'.repeat(20_000)}')`);
      expect(big.data.observation.error).toBe('ValueError: the action is 20013 characters; this server takes at most 10000');
      const long = await s.step(`fill('13', '${'a'.repeat(1001)}')`);
      expect(long.data.observation.error).toBe('ValueError: fill(): value is 1001 characters; this server takes at most 1000');
      const many = await s.step(Array.from({ length: 11 }, () => 'noop(0)').join('\n'));
      expect(many.data.observation.error).toBe('ValueError: the action has 11 calls; this server runs at most 10 per step');
      // Refused before anything runs: far inside the step deadline, however busy the machine.
      expect(Date.now() - start).toBeLessThan(DEADLINE_MS);

      await s.reset({ task_name: 'click-test', seed: 1 });
      const page = await s.step(`goto('data:text/html,<script>for(;;){}</script>')`);
      expect(page.data.observation.error).toMatch(/^ValueError: goto: only http\(s\) URLs may be opened on this server/);
      const tabs = await s.step('new_tab()\nnew_tab()\nnew_tab()\nnew_tab()');
      expect(tabs.data.observation.error).toBe('ValueError: new_tab: this server allows at most 4 tabs per session');

      // Within every cap, still more typing than a step may take: the deadline ends it.
      await s.reset({ task_name: 'click-test', seed: 1 });
      const typing = Date.now();
      const slow = await s.step(Array.from({ length: 9 }, () => `send_keys('${'a'.repeat(1000)}')`).join('\n'));
      expect(Date.now() - typing).toBeLessThan(DEADLINE_MS + 3000);
      expect([slow.data.done, slow.data.observation.error]).toEqual([true, expect.stringMatching(/deadline/)]);
      await until('context gone after the deadline', () => def.browser.contexts === 0 && renderers().length === 0, 3000);
    } finally {
      await s.close();
    }
    await nothingLeft(3000);
  }, 40_000);

  it(`an episode takes at most ${MAX_EPISODE_STEPS} steps; a reset starts a new count`, async () => {
    const s = await Session.open(server);
    try {
      await s.reset({ task_name: 'click-test', seed: 1 });
      for (let i = 0; i < MAX_EPISODE_STEPS; i++) expect((await s.step('noop(0)')).data.observation.error).toBe('');
      const over = await s.step('noop(0)');
      expect([over.data.done, over.data.observation.error]).toEqual([true, `This episode reached the server's limit of ${MAX_EPISODE_STEPS} steps (BROWSERGYM_MAX_EPISODE_STEPS); reset to start a new one.`]);
      await s.reset({ task_name: 'click-test', seed: 1 });
      expect((await s.step("click('13')")).data.reward).toBe(1);
    } finally {
      await s.close();
    }
  }, 30_000);
});

describe('memory and disk per session', () => {
  it('a page allocating 1.1 GB of JS crashes its own renderer at the heap limit: the step says so, the context is gone', async () => {
    const s = await Session.open(server);
    try {
      await s.reset({ task_name: 'alloc' });
      const start = Date.now();
      const hog = await s.step("click('13')");
      console.log(`1.1 GB allocation stopped after ${Date.now() - start} ms: ${hog.data.observation.error}`);
      expect([hog.data.done, hog.data.observation.last_action_error]).toEqual([true, true]);
      expect(hog.data.observation.error).toMatch(/its page crashed \(out of memory, or its renderer was killed\); reset to start a new episode\.$/);
      await until('context gone after the crash', () => def.browser.contexts === 0 && renderers().length === 0, 3000);
    } finally {
      await s.close();
    }
  }, 30_000);

  it('a page filling 1 GiB of typed arrays is killed past the renderer memory limit: its next step says so', async () => {
    const s = await Session.open(server);
    try {
      await s.reset({ task_name: 'buffers' });
      const start = Date.now();
      // The click may return before the watch sees the memory; by the next step the renderer is gone.
      await s.step("click('13')");
      await until('renderer killed', () => def.browser.contexts === 0 && renderers().length === 0, 5000);
      const killed = warnings.map((w) => /killed a renderer using (\d+) MiB \(limit 512 MiB/.exec(w)?.[1]).find((mb) => mb !== undefined);
      expect(Number(killed)).toBeGreaterThan(512);
      console.log(`1 GiB of typed arrays: renderer killed at ${killed} MiB, ${Date.now() - start} ms after the click`);
      const after = await s.step('noop(0)');
      expect(after.data.observation.error).toMatch(/its page crashed \(out of memory, or its renderer was killed\); reset to start a new episode\.$/);
    } finally {
      await s.close();
    }
  }, 30_000);

  it('three clicks on a 50 MB blob download write nothing to disk', async () => {
    const before = bytesUnder(tmp);
    const s = await Session.open(server);
    try {
      await s.reset({ task_name: 'download' });
      for (let i = 0; i < 3; i++) expect((await s.step("click('13')")).data.observation.error).toBe('');
      await new Promise((r) => setTimeout(r, 1000));
      expect(bytesUnder(tmp) - before).toBeLessThan(1 << 20);
    } finally {
      await s.close();
    }
  }, 30_000);
});

describe('WebRTC and sockets from a task page', () => {
  it('STUN over UDP, TURN over TCP and a WebSocket to 127.0.0.1 reach nothing', async () => {
    const s = await Session.open(server);
    try {
      await s.reset({ task_name: 'webrtc' });
      expect((await s.step("click('13')")).data.observation.error).toBe('');
      expect((await s.step('noop(2000)')).data.observation.error).toBe('');
      expect({ udpPackets, tcpConnections }).toEqual({ udpPackets: 0, tcpConnections: 0 });
    } finally {
      await s.close();
    }
  }, 30_000);
});
