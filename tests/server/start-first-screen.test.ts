// `npm start`'s first screen (issue 33): the app built from scratch prints no build warnings (Vite's
// "externalized for browser compatibility" and INEFFECTIVE_DYNAMIC_IMPORT among them), the URL is the
// last line, and an env session leaves no line unless `--verbose`. A real process whose stdout and
// stderr go to one file, in the order a terminal shows them.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { afterAll, describe, expect, it } from 'vitest';
import { fakeDist, tempDir } from '../hostile/server-process.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'webgrpo.js');
const URL_LINE = /^webgrpo: open (http:\/\/127\.0\.0\.1:\d+)\/ /;

interface Started {
  proc: ChildProcess;
  /** The terminal so far: stdout and stderr interleaved as written. */
  screen(): string[];
  exited: Promise<number | null>;
}

function start(args: string[], screenFile: string): Started {
  const fd = fs.openSync(screenFile, 'w');
  // A user's terminal: no NODE_ENV=test (under it Vite keeps some warnings to itself) nor vitest's variables.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_ENV' && !k.startsWith('VITEST')));
  const proc = spawn(process.execPath, [BIN, 'start', '--port', '0', ...args], { cwd: ROOT, env, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, exited, screen: () => fs.readFileSync(screenFile, 'utf8').split('\n').filter((l) => l !== '') };
}

/** Polls the screen until `done` holds; fails with the screen if the process exits first. */
async function waitFor(s: Started, done: (lines: string[]) => boolean): Promise<string[]> {
  let gone = false;
  void s.exited.then(() => (gone = true));
  for (;;) {
    const lines = s.screen();
    if (done(lines)) return lines;
    if (gone) throw new Error(`webgrpo start exited:\n${lines.join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function stop(s: Started): Promise<void> {
  s.proc.kill('SIGTERM');
  await s.exited;
}

/** One echo episode over the OpenEnv socket, then waits until the server has closed its session. */
async function playEchoSession(url: string): Promise<void> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/envs/echo/ws`);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => ws.send(JSON.stringify({ type: 'reset', data: {} })));
    ws.once('message', () => resolve());
    ws.once('error', reject);
  });
  ws.close();
  for (;;) {
    const { envs } = (await (await fetch(`${url}/envs`)).json()) as { envs: { name: string; active: number }[] };
    if (envs.find((e) => e.name === 'echo')!.active === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('npm start: the first screen', { timeout: 300_000 }, () => {
  const tmp = tempDir('webgrpo-first-screen-');
  afterAll(() => tmp.cleanup());

  it('builds the app without a warning, prints the URL last, and says nothing per session', async () => {
    const screenFile = path.join(tmp.dir, 'screen.txt');
    const s = start(['--rebuild', '--dist', path.join(tmp.dir, 'dist'), '--data', path.join(tmp.dir, 'data')], screenFile);
    try {
      const lines = await waitFor(s, (l) => l.some((line) => URL_LINE.test(line)));
      expect(lines.some((l) => l.includes('building the web app'))).toBe(true);
      // Every line is webgrpo's own (its notes, its JSON): none of Vite's or Rolldown's.
      expect(lines.filter((l) => !/^(webgrpo[: ]|\{)/.test(l) || /warn|externalized|INEFFECTIVE/i.test(l))).toEqual([]);
      expect(lines.at(-1)).toMatch(URL_LINE);
      const url = URL_LINE.exec(lines.at(-1)!)![1]!;
      await playEchoSession(url);
      expect(s.screen()).toEqual(lines);
    } finally {
      await stop(s);
    }
  });

  it('with --verbose, a line as each session opens and closes', async () => {
    const dist = path.join(tmp.dir, 'fake-dist');
    fakeDist(dist, 0, 1);
    const s = start(['--verbose', '--dist', dist, '--data', path.join(tmp.dir, 'data-verbose')], path.join(tmp.dir, 'screen-verbose.txt'));
    try {
      const lines = await waitFor(s, (l) => l.some((line) => URL_LINE.test(line)));
      await playEchoSession(URL_LINE.exec(lines.at(-1)!)![1]!);
      const after = await waitFor(s, (l) => l.some((line) => line.startsWith('session close echo#')));
      expect(after.some((l) => l.startsWith('session open echo#'))).toBe(true);
    } finally {
      await stop(s);
    }
  });
});
