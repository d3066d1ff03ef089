// Actions that hold under load (issue 19): 8 sessions at once on a machine kept busy by CPU hogs
// each win click-test with the right bid at the server's default action timeout, and what a failed
// action tells the model is one clean line (no ANSI colour codes, no Playwright call log).

import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBrowserGymEnv, type BrowserGymEnvDefinition } from '../../env-server/envs/browsergym/index.ts';
import { cleanMessage } from '../../env-server/envs/browsergym/error-text.ts';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { bidOf, Session } from './browsergym-session.ts';

const SESSIONS = 8;
/** Busy-looping processes (8 made every click time out at BrowserGym's 500 ms); each exits by itself after HOG_MS even if the test dies. */
const HOGS = 8;
const HOG_MS = 60_000;

let def: BrowserGymEnvDefinition;
let server: EnvServer;
const hogs: ChildProcess[] = [];

beforeAll(async () => {
  // The server's defaults, as `webgrpo env-server` runs it (no env vars).
  def = createBrowserGymEnv({}, {});
  server = await createEnvServer({ port: 0, envs: { browsergym: def } });
});

afterAll(async () => {
  for (const hog of hogs) hog.kill('SIGKILL');
  await server?.close();
  expect(def.browser.contexts).toBe(0);
});

describe('browsergym under load', () => {
  it(`${SESSIONS} concurrent sessions next to ${HOGS} CPU hogs each win click-test`, async () => {
    for (let i = 0; i < HOGS; i++) {
      hogs.push(spawn(process.execPath, ['-e', `const end = Date.now() + ${HOG_MS}; while (Date.now() < end) {}`], { stdio: 'ignore' }));
    }
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => Session.open(server)));
    try {
      const results = await Promise.all(
        sessions.map(async (s, seed) => {
          const reply = await s.reset({ task_name: 'click-test', seed });
          // Under load a reset that errs says why (an error frame has no observation).
          expect(reply.data?.observation, `session ${seed}'s reset replied ${JSON.stringify(reply).slice(0, 2000)}`).toBeDefined();
          const obs = reply.data.observation;
          // Every session's first action is the one the issue saw fail: the click, at once.
          const won = await s.step(`click('${bidOf(obs.axtree_txt, 'button', 'Click Me!')}')`);
          return [won.data.observation.error, won.data.reward, won.data.done];
        }),
      );
      expect(results).toEqual(Array.from({ length: SESSIONS }, () => ['', 1, true]));
    } finally {
      for (const hog of hogs) hog.kill('SIGKILL');
      await Promise.all(sessions.map((s) => s.close()));
    }
  }, 120_000);

  it("a failed action's error is one line in Python Playwright's wording, without colour codes or call log", async () => {
    const s = await Session.open(server);
    try {
      const obs = (await s.reset({ task_name: 'click-test', seed: 1 })).data.observation;
      // fill on a button: Playwright refuses at once, with a call log in its message.
      const failed = await s.step(`fill('${bidOf(obs.axtree_txt, 'button', 'Click Me!')}', 'x')`);
      const error: string = failed.data.observation.error;
      expect(error).toMatch(/^Error: Locator\.fill: Error: Element is not an <input>, <textarea>/);
      expect(error).not.toContain('\x1b');
      expect(error).not.toContain('\n');
      expect(error).not.toMatch(/call log/i);
    } finally {
      await s.close();
    }
  }, 60_000);

  it('screenshots at the default 1280 × 720 viewport come scaled to 512 px, and /health answers while they are taken', async () => {
    const s = await Session.open(server);
    const healthMs: number[] = [];
    let taking = true;
    const poll = (async () => {
      while (taking) {
        const t0 = Date.now();
        await fetch(`${server.url}/health`);
        healthMs.push(Date.now() - t0);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    try {
      const pixels = (await s.reset({ task_name: 'click-test', seed: 1, screenshot: true })).data.observation.screenshot as number[][][];
      expect([pixels.length, pixels[0]!.length, pixels[0]![0]!.length]).toEqual([288, 512, 3]);
      // The reset's choice holds for its steps.
      const after = (await s.step("click('13')")).data.observation.screenshot as number[][][];
      expect([after.length, after[0]!.length]).toEqual([288, 512]);
      const png = String((await s.reset({ task_name: 'click-test', seed: 1, screenshot: 'png' })).data.observation.screenshot);
      const bytes = Buffer.from(png.replace(/^data:image\/png;base64,/, ''), 'base64');
      // The PNG header's IHDR chunk: width, height.
      expect([bytes.readUInt32BE(16), bytes.readUInt32BE(20)]).toEqual([512, 288]);
    } finally {
      taking = false;
      await poll;
      await s.close();
    }
    expect(Math.max(...healthMs)).toBeLessThan(1500);
  }, 60_000);

  it('cleanMessage keeps the first line of a timeout, uncoloured', () => {
    const node = 'locator.click: Timeout 500ms exceeded.\nCall log:\n\x1b[2m  - waiting for locator(\'[bid="13"]\')\x1b[22m\n';
    expect(cleanMessage(node)).toBe('Locator.click: Timeout 500ms exceeded.');
  });
});
