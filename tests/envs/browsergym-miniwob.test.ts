// A real MiniWoB++ task folder (issue 19), driven through our own pages written to MiniWoB++'s
// contract (tests/fixtures/miniwob/html: a core.js of ours and two task pages with the real pages'
// DOM): tasks by file name, the page seeded with BrowserGym's page seed before the episode starts, the
// goal read from core.getUtterance() with the human display hidden, reward and done from the WOB_*
// globals — and trees byte-equal to what OpenEnv's real server sent for the same DOM
// (shared/specs/browsergym-real-frames.json, recorded with the same Chromium build).

import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBrowserGymEnv, type BrowserGymEnvDefinition } from '../../env-server/envs/browsergym/index.ts';
import { FOLDER_BASE_URL, miniwobFolder, miniwobUrl } from '../../env-server/envs/browsergym/miniwob-source.ts';
import { pageSeed } from '../../env-server/envs/browsergym/seed.ts';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { Session } from './browsergym-session.ts';
import { browsergymTask, parseBrowserGymMix } from '../../src/rl/tasks/browsergym-task.ts';
import { resolveTask } from '../../src/rl/tasks/resolve-task.ts';
import { run as train, warmUpSolver } from '../../src/cli/train.ts';
import { SOLVERS } from '../../src/rl/tasks/solvers.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { runTrainCli } from '../rl-learn/train-cli-run.ts';

const FOLDER = new URL('../fixtures/miniwob/html/miniwob', import.meta.url).pathname;
const FRAMES = JSON.parse(readFileSync(new URL('./browsergym-vectors/real-frames.json', import.meta.url), 'utf8')) as {
  source: string;
  episodes: { task: string; seed: number; goal: string; axtree_txt: string; actions: string[] }[];
};

/** The real server's tree for `task`, as recorded (its page URLs included: a folder's pages appear at OpenEnv's MINIWOB_URL). */
function realTree(task: string): string {
  return FRAMES.episodes.find((e) => e.task === task)!.axtree_txt;
}

let def: BrowserGymEnvDefinition;
let server: EnvServer;

beforeAll(async () => {
  def = createBrowserGymEnv({ miniwob: await miniwobFolder(FOLDER) }, {});
  server = await createEnvServer({ port: 0, envs: { browsergym: def } });
});

afterAll(async () => {
  await server?.close();
  expect(def.browser.contexts).toBe(0);
});

describe('browsergym over a MiniWoB++ folder', () => {
  it('click-test: the real server\'s goal and tree, byte for byte; its scripted action wins', async () => {
    const s = await Session.open(server);
    try {
      const obs = (await s.reset({ task_name: 'click-test', seed: 0 })).data.observation;
      expect(obs.goal).toBe('Click the button.');
      expect(obs.axtree_txt).toBe(realTree('click-test'));
      expect(obs.text).toBe(obs.axtree_txt);
      expect(obs.url).toBe('http://127.0.0.1:8888/miniwob/click-test.html');
      // The human display is gone from the page the agent sees.
      expect(obs.pruned_html).not.toMatch(/reward-display|sync-task-cover|click-canvas/);
      const won = await s.step("click('13')");
      expect([won.data.observation.error, won.data.reward, won.data.done]).toEqual(['', 1, true]);
      // The reset kwarg `axtree` picks the compact form for one session.
      const classic = (await s.reset({ task_name: 'click-test', seed: 0, axtree: 'classic' })).data.observation;
      expect(classic.axtree_txt).toBe("RootWebArea 'Click Test Task', focused\n\t[13] button 'Click Me!'");
    } finally {
      await s.close();
    }
  }, 60_000);

  it('enter-text: seeded before the episode with BrowserGym\'s page seed; same seed, same instance; fill + Submit wins', async () => {
    const s = await Session.open(server);
    try {
      const first = (await s.reset({ task_name: 'enter-text', seed: 0 })).data.observation;
      expect(first.goal).toMatch(new RegExp(`^Enter "\\w+" into the text field and press Submit\\. \\(seed ${pageSeed(0)}\\)$`));
      expect(first.axtree_txt).toBe(realTree('enter-text'));
      const again = (await s.reset({ task_name: 'enter-text', seed: 0 })).data.observation;
      expect(again.goal).toBe(first.goal);
      const word = /"(\w+)"/.exec(first.goal)![1]!;
      const filled = await s.step(`fill('14', '${word}')`);
      expect([filled.data.observation.error, filled.data.reward, filled.data.done]).toEqual(['', 0, false]);
      const won = await s.step("click('15')");
      expect([won.data.reward, won.data.done]).toEqual([1, true]);

      // A wrong word: the page's raw reward is −1, so BrowserGym's reward is 0 and the episode is done.
      await s.reset({ task_name: 'enter-text', seed: 1 });
      await s.step("fill('14', 'nobody')");
      const lost = await s.step("click('15')");
      expect([lost.data.reward, lost.data.done]).toEqual([0, true]);
    } finally {
      await s.close();
    }
  }, 60_000);

  it('names the folder\'s tasks when reset asks for another', async () => {
    const s = await Session.open(server);
    try {
      const reply = await s.reset({ task_name: 'book-flight' });
      expect(reply.type).toBe('error');
      expect(JSON.stringify(reply.data)).toContain('Unknown task_name \\"book-flight\\": this server has click-test, enter-text');
    } finally {
      await s.close();
    }
  }, 30_000);
});

describe('the browsergym task over a folder (train --env browsergym:click-test,enter-text --miniwob DIR)', () => {
  it("takes the folder's task names, and its episodes are the folder's pages in BrowserGym's tree form", async () => {
    const folder = await miniwobFolder(FOLDER);
    const { task } = await resolveTask({ env: 'browsergym:click-test,enter-text', miniwobNames: folder.names });
    expect(task.dataset(3).map((row) => row.task_name)).toEqual(['click-test', 'enter-text', 'click-test']);
    expect((await browsergymTask(parseBrowserGymMix('mix', folder.names))).dataset(2).map((row) => row.task_name)).toEqual(['click-test', 'enter-text']);
    const env = task.envFactory({ browsergym: `${server.url}/envs/browsergym` })();
    try {
      const observation = await env.reset(task.dataset(2)[1]!);
      expect(observation).toContain(`Page structure:\n${realTree('enter-text')}`);
    } finally {
      await env.close?.();
    }
    // The CLI names the folder's tasks when --env asks for another (before any weight is loaded).
    await expect(train(['--model', 'models/demo', '--env', 'browsergym:book-flight', '--miniwob', FOLDER])).rejects.toThrow(
      "browsergym: unknown task 'book-flight' (have click-test, enter-text, or mix)",
    );
  }, 60_000);

  it('trains one GRPO step from the folder', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'webgrpo-miniwob-train-'));
    try {
      const model = join(dir, 'model');
      await mkdir(model);
      for (const [name, bytes] of await makeTinyCheckpointFiles({ seed: 3, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 })) await writeFile(join(model, name), bytes);
      // The warm-up (an SFT step on a ~2,500-token page transcript) is left out: it would triple the cost.
      const { code, lines } = await runTrainCli([
        '--model', model, '--env', 'browsergym:click-test,enter-text', '--miniwob', FOLDER, '--sft_steps', '0',
        '--num_generations', '2', '--per_device_train_batch_size', '2', '--max_completion_length', '32', '--max_steps', '1',
      ]);
      expect(code).toBe(0);
      expect(lines.map((l) => [l.phase, l.step]).slice(0, 2)).toEqual([['load', undefined], ['grpo', 1]]);
      expect(lines[1]).toHaveProperty(['rewards/reward_completion/mean']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it("the preset's warm-up needs no flag: the task's scripted solver plays the run's own tasks", async () => {
    // browsergym's preset asks for sft_steps; with no --sft the solver makes the transcripts (as in the app).
    expect(warmUpSolver('browsergym', { sft: null, sftSolver: null, resume: null }, 10)).toBe('browsergym');
    expect(warmUpSolver('browsergym', { sft: 'mine.jsonl', sftSolver: null, resume: null }, 10)).toBeNull();
    expect(warmUpSolver('browsergym', { sft: null, sftSolver: null, resume: null }, 0)).toBeNull();
    expect(warmUpSolver(null, { sft: null, sftSolver: null, resume: null }, 10)).toBeNull(); // a task with no solver (mcp)
    // The rows of browsergym:click-test,enter-text, not the default mix (its first tasks are not in this folder).
    const { task } = await resolveTask({ env: 'browsergym:click-test,enter-text', miniwobNames: (await miniwobFolder(FOLDER)).names });
    const transcripts = await SOLVERS.browsergym!({ baseUrl: `${server.url}/envs/browsergym`, episodes: 1, seed: 0, rows: task.dataset(4) });
    expect(transcripts).toHaveLength(1);
    expect(JSON.stringify(transcripts[0])).toContain(`url='${FOLDER_BASE_URL}click-test.html'`);
  }, 60_000);
});

describe('MiniWoB++ sources', () => {
  it('a folder serves its pages and MiniWoB\'s siblings, nothing else of its parent', async () => {
    const folder = await miniwobFolder(FOLDER);
    expect(folder.names).toEqual(['click-test', 'enter-text']);
    expect((await folder.answer(`${FOLDER_BASE_URL}click-test.html`))?.status).toBe(200);
    const root = new URL(FOLDER_BASE_URL).origin;
    expect((await folder.answer(`${root}/core/core.js`))?.contentType).toBe('text/javascript; charset=utf-8');
    expect(await folder.answer(`${root}/core/..%2f..%2fminiwob.test.ts`)).toBeNull();
    expect(await folder.answer(`${root}/../../envs/browsergym-miniwob.test.ts`)).toBeNull();
    expect(await folder.answer('http://elsewhere.localhost/miniwob/click-test.html')).toBeNull();
    await expect(miniwobFolder('/nonexistent/miniwob')).rejects.toThrow(/is not a folder/);
  });

  it('an http(s) URL lists its tasks from the directory listing and answers only under MiniWoB\'s html/', async () => {
    const http: Server = createServer((req, res) => {
      if (req.url === '/miniwob/') return res.end('<a href="click-test.html">click-test.html</a> <a href="enter-text.html">x</a> <a href="../core/">up</a>');
      if (req.url === '/miniwob/click-test.html') return res.end('<title>t</title>');
      res.statusCode = 404;
      res.end();
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
      const source = await miniwobUrl(`${base}/miniwob/`);
      expect(source.names).toEqual(['click-test', 'enter-text']);
      expect(source.taskUrl('click-test')).toBe(`${base}/miniwob/click-test.html`);
      expect(String((await source.answer(`${base}/miniwob/click-test.html`))?.body)).toBe('<title>t</title>');
      expect(await source.answer('http://127.0.0.1:1/miniwob/click-test.html')).toBeNull();
      await expect(miniwobUrl(`${base}/empty/`)).rejects.toThrow(/lists no <task>\.html pages/);
    } finally {
      http.close();
    }
  });
});
