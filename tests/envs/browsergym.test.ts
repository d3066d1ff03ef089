// /envs/browsergym over the wire, as OpenEnv's BrowserGymEnv client drives it (specs/browsergym.md
// §2.3, frames of §2.9): reset with task_name and seed, BrowserGym action strings, observations with
// the accessibility tree, rewards from the page, errors the model can read, and one browser context
// per session under the env's own cap — none left open afterwards.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBrowserGymEnv, type BrowserGymEnvDefinition } from '../../env-server/envs/browsergym/index.ts';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { bidOf, Session } from './browsergym-session.ts';

let def: BrowserGymEnvDefinition;
let server: EnvServer;

beforeAll(async () => {
  // 8 pages at once on a 2-core CI machine: BrowserGym's 500 ms per element action is too tight.
  def = createBrowserGymEnv({ actionTimeoutMs: 10_000, axtree: 'classic' }, {});
  server = await createEnvServer({ port: 0, envs: { browsergym: def } });
});

afterAll(async () => {
  await server?.close();
  expect(def.browser.contexts).toBe(0);
});

describe('BrowserGymEnv client flow', () => {
  it('reset(task_name="click-test", seed=42) → click the button → reward 1.0, done', async () => {
    const s = await Session.open(server);
    try {
      const reset = await s.reset({ task_name: 'click-test', seed: 42 });
      expect(reset.type).toBe('observation');
      const obs = reset.data.observation;
      expect(Object.keys(obs)).toEqual(['text', 'url', 'screenshot', 'goal', 'axtree_txt', 'pruned_html', 'error', 'last_action_error']);
      expect(obs.goal).toBe('Click the button.');
      // Appendix C's test vector: our page is built so the button gets MiniWoB's bid 13 too.
      expect(obs.axtree_txt).toBe("RootWebArea 'Click Test Task', focused\n\t[13] button 'Click Me!'");
      expect(obs.text).toBe(obs.axtree_txt);
      expect(obs.url).toMatch(/\/miniwob\/click-test\.html$/);
      expect(obs.screenshot).toBeNull();
      expect(obs.pruned_html).toContain('<button bid="13" id="subbtn"');
      expect(obs.pruned_html).not.toContain('browsergym_id');
      expect([reset.data.reward, reset.data.done, obs.error, obs.last_action_error]).toEqual([0, false, '', false]);

      // A bad bid: BrowserGym's error text, readable in `error`; the episode goes on.
      const bad = await s.step("click('999')");
      expect(bad.data.observation.last_action_error).toBe(true);
      expect(bad.data.observation.error).toBe('ValueError: Could not find element with bid "999"');
      expect([bad.data.reward, bad.data.done]).toEqual([0, false]);

      // TRL's forms, which upstream rejects, are actions here.
      for (const action of ["send_keys('Enter')", "scroll('down')"]) {
        const ok = await s.step(action);
        expect([action, ok.data.observation.error, ok.data.done]).toEqual([action, '', false]);
      }

      const bid = bidOf(obs.axtree_txt, 'button', 'Click Me!');
      const won = await s.step(`click('${bid}')`);
      expect([won.data.reward, won.data.done, won.data.observation.last_action_error]).toEqual([1, true, false]);
      expect(won.data.observation.axtree_txt).toBe("RootWebArea 'Click Test Task', focused\n\t[13] button 'Click Me!', focused");

      const state = await s.request({ type: 'state' });
      expect(state.data).toMatchObject({ step_count: 4, benchmark: 'miniwob', task_name: 'click-test', task_id: null, goal: 'Click the button.', max_steps: null, cum_reward: 1 });
      expect(Object.keys(state.data)).toEqual(['episode_id', 'step_count', 'benchmark', 'task_name', 'task_id', 'goal', 'current_url', 'max_steps', 'cum_reward']);
    } finally {
      await s.close();
    }
  }, 60_000);

  it('enter-text is won by fill, then clicking Submit; same seed → same instance', async () => {
    const s = await Session.open(server);
    try {
      const first = (await s.reset({ task_name: 'enter-text', seed: 42 })).data.observation;
      const again = (await s.reset({ task_name: 'enter-text', seed: 42 })).data.observation;
      expect(again.goal).toBe(first.goal);
      expect(again.axtree_txt).toBe(first.axtree_txt);
      expect(first.axtree_txt).toBe("RootWebArea 'Enter Text Task', focused\n\t[14] textbox ''\n\t[15] button 'Submit'");
      const text = /^Enter "(.+)" into the text field and press Submit\.$/.exec(again.goal)![1]!;
      const filled = await s.step(`fill('${bidOf(again.axtree_txt, 'textbox', '')}', '${text}')`);
      expect([filled.data.reward, filled.data.done]).toEqual([0, false]);
      expect(filled.data.observation.axtree_txt).toContain(`[14] textbox '' value='${text}', focused`);
      const won = await s.step(`click('${bidOf(again.axtree_txt, 'button', 'Submit')}')`);
      expect([won.data.reward, won.data.done]).toEqual([1, true]);

      const goals = new Set<string>();
      for (const seed of [1, 2, 3, 4, 5]) goals.add((await s.reset({ task_name: 'enter-text', seed })).data.observation.goal);
      expect(goals.size).toBeGreaterThan(1);
    } finally {
      await s.close();
    }
  }, 60_000);

  it('a wrong click ends the episode with reward 0; errors are frames, not crashes', async () => {
    const s = await Session.open(server);
    try {
      const tree = (await s.reset({ task_name: 'click-test-2', seed: 3 })).data.observation.axtree_txt;
      const lost = await s.step(`click('${bidOf(tree, 'button', 'TWO')}')`);
      expect([lost.data.reward, lost.data.done]).toEqual([0, true]);

      expect((await s.step("type('x')")).data.observation.error).toBe("NameError: Invalid action type 'type'.");
      expect((await s.step('scroll(0)')).data.observation.error).toBe("TypeError: scroll() missing 1 required positional argument: 'delta_y'");
      expect((await s.step('click(13)')).data.observation.error).toBe('ValueError: expected a string, got 13');
      expect((await s.step('no action here')).data.observation.error).toBe('ValueError: Received an empty action.');

      const unknown = await s.reset({ task_name: 'click-pie' });
      expect(unknown).toMatchObject({ type: 'error', data: { code: 'EXECUTION_ERROR' } });
      expect(unknown.data.message).toMatch(/^Unknown task_name "click-pie": this server has click-test, /);
      const badSeed = await s.reset({ seed: -1 });
      expect(badSeed.data.message).toMatch(/seed must be an integer between 0 and 2\*\*32 - 1/);
      const invalid = await s.request({ type: 'step', data: { action_str: 'noop()', extra: 1 } });
      expect(invalid).toMatchObject({ type: 'error', data: { code: 'VALIDATION_ERROR' } });
    } finally {
      await s.close();
    }
  }, 60_000);

  it('step before reset: the infrastructure-error observation, episode not over', async () => {
    const s = await Session.open(server);
    try {
      const early = await s.step("click('13')");
      expect(early.data.observation.error).toBe('Cannot call env.step() before calling env.reset()');
      expect([early.data.observation.last_action_error, early.data.done]).toEqual([true, false]);
    } finally {
      await s.close();
    }
  }, 30_000);
});

describe('a hostile page driving the env through 127.0.0.1', () => {
  it('reaches no local file, browser-internal page or local server: each goto is an error the model reads', async () => {
    const s = await Session.open(server);
    try {
      await s.reset({ task_name: 'click-test', seed: 42 });
      for (const url of ['file:///etc/passwd', 'view-source:file:///etc/passwd', 'chrome://version', 'CHROME://settings', 'javascript:alert(1)']) {
        const r = await s.step(`goto('${url}')`);
        expect(r.data.observation.error, url).toMatch(/^ValueError: goto: only http\(s\) URLs may be opened on this server/);
        expect(r.data.observation.axtree_txt, url).toContain("'Click Test Task'");
      }
      expect((await s.step("upload_file('13', '/etc/passwd')")).data.observation.error).toBe('ValueError: upload_file is disabled on this server');
      // http(s) goes to the context's router: anything but the task's own URL is blocked, so the
      // server's own routes stay out of reach (the task page is gone; a reset brings it back).
      const local = await s.step(`goto('${server.url}/health')`);
      expect(local.data.observation.last_action_error).toBe(true);
      expect(JSON.stringify(local.data.observation)).not.toMatch(/"status"|healthy/);
      const again = await s.reset({ task_name: 'click-test', seed: 42 });
      expect(again.data.observation.axtree_txt).toContain("'Click Test Task'");
    } finally {
      await s.close();
    }
  }, 60_000);
});

describe('sessions and the cap', () => {
  it('8 concurrent sessions each win their own click-test; a 9th is refused; no context outlives its session', async () => {
    const sessions = await Promise.all(Array.from({ length: 8 }, () => Session.open(server)));
    try {
      const refused = await Session.open(server);
      const frame = await refused.next();
      expect(frame).toMatchObject({ type: 'error', data: { code: 'CAPACITY_REACHED', max_sessions: 8 } });
      await refused.close();

      const results = await Promise.all(
        sessions.map(async (s, i) => {
          const obs = (await s.reset({ task_name: 'click-test', seed: 100 + i })).data.observation;
          const won = await s.step(`click('${bidOf(obs.axtree_txt, 'button', 'Click Me!')}')`);
          return [won.data.reward, won.data.done, won.data.observation.error];
        }),
      );
      expect(results).toEqual(Array.from({ length: 8 }, () => [1, true, '']));
      expect(def.browser.contexts).toBe(8);
    } finally {
      await Promise.all(sessions.map((s) => s.close()));
    }
    const deadline = Date.now() + 10_000;
    while ((def.browser.contexts > 0 || server.stats().activeSessions > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect([def.browser.contexts, server.stats().activeSessions]).toEqual([0, 0]);
  }, 90_000);

  it('HTTP: /metadata names the class; /reset is stateless (fresh context, closed again)', async () => {
    const meta = await (await fetch(`${server.url}/envs/browsergym/metadata`)).json();
    expect(meta.name).toBe('BrowserGymEnvironment');
    const schema = await (await fetch(`${server.url}/envs/browsergym/schema`)).json();
    expect(Object.keys(schema.action.properties)).toEqual(['metadata', 'action_str']);
    expect(Object.keys(schema.observation.properties)).toEqual(['done', 'reward', 'metadata', 'text', 'url', 'screenshot', 'goal', 'axtree_txt', 'pruned_html', 'error', 'last_action_error']);
    const res = await fetch(`${server.url}/envs/browsergym/reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ seed: 42, task_name: 'focus-text' }) });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.observation.goal).toBe('Focus into the textbox.');
    expect(def.browser.contexts).toBe(0);
  }, 30_000);
});

describe('screenshots on request', () => {
  it("'png' gives a data URL, true the wire format's height × width × 3 pixels", async () => {
    const small = createBrowserGymEnv({ viewport: { width: 64, height: 48 }, axtree: 'classic' }, {});
    const env = small.create();
    try {
      const png = await env.reset({ task_name: 'click-test', seed: 1, screenshot: 'png' });
      expect(String(png.observation.screenshot)).toMatch(/^data:image\/png;base64,/);
      const pixels = (await env.reset({ task_name: 'click-test', seed: 1, screenshot: true })).observation.screenshot as number[][][];
      expect([pixels.length, pixels[0]!.length, pixels[0]![0]!.length]).toEqual([48, 64, 3]);
      expect(pixels.flat(2).every((v) => Number.isInteger(v) && v >= 0 && v <= 255)).toBe(true);
    } finally {
      await env.close();
      await small.dispose!();
    }
    expect(small.browser.contexts).toBe(0);
  }, 60_000);
});

describe('a dying session takes only its context', () => {
  it('one context killed: its step answers with the error, the other session plays on, a reset recovers', async () => {
    const own = createBrowserGymEnv({ actionTimeoutMs: 10_000, axtree: 'classic' }, {});
    const a = own.create();
    const b = own.create();
    try {
      await a.reset({ task_name: 'click-test', seed: 1 });
      await b.reset({ task_name: 'click-test', seed: 2 });
      expect(own.browser.contexts).toBe(2);
      // Kill a's browser context from outside, as a crash would.
      await (a as unknown as { context: { close(): Promise<void> } }).context.close();
      const broken = await a.step({ action_str: "click('13')" });
      expect([broken.done, broken.observation.last_action_error]).toEqual([false, true]);
      expect(broken.observation.error).toMatch(/browser context was closed/);
      expect((await b.step({ action_str: "click('13')" })).reward).toBe(1);
      const again = await a.reset({ task_name: 'click-test', seed: 1 });
      expect(again.observation.goal).toBe('Click the button.');
      expect((await a.step({ action_str: "click('13')" })).reward).toBe(1);
    } finally {
      await a.close();
      await b.close();
      expect(own.browser.contexts).toBe(0);
      await own.dispose!();
    }
  }, 60_000);
});
