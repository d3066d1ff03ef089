// The rollout viewer with screenshots (browsergym-vlm), in headless Chromium against the app as
// `webgrpo start` serves it: a click-test episode played with TRL's VLM tools against the app's own
// /envs/browsergym, its rollout flattened as the trainer stores it (screenshots as PNG within the run's
// budget), imported as a run; the viewer shows the thumbnails beside the tool text and enlarges one on
// a click; the exported page shows them too. Screenshot to docs/screenshots/.
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildByteTokenizer } from '../../src/model/byte-tokenizer.ts';
import { loadTokenizer } from '../../src/model/tokenizer.ts';
import type { Rollout } from '../../src/rl/rollout/rollout.ts';
import { browsergymVlmTask } from '../../src/rl/tasks/browsergym-task.ts';
import { envTools } from '../../src/rl/rollout/env.ts';
import type { ClassEnv } from '../../src/rl/tasks/env-class.ts';
import { seededEpisodes } from '../../src/rl/tasks/solvers.ts';
import { rolloutViews } from '../../workers/rollout-views.ts';
import { ScreenshotBudget } from '../../workers/stored-screenshots.ts';
import { launchChromium } from '../../bench/browser/harness.ts';
import { startAppServer, type AppServer } from './app-server.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const files = buildByteTokenizer();
const tokenizer = loadTokenizer(JSON.stringify(files.tokenizerJson), JSON.stringify(files.tokenizerConfig));

describe('screenshots in the rollout viewer', { timeout: 300_000 }, () => {
  let app: AppServer;
  let browser: Browser;

  beforeAll(async () => {
    app = await startAppServer();
    browser = await launchChromium();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  }, 60_000);

  it('thumbnails beside the tool text, a click enlarges one; the exported page shows them', async () => {
    const task = await browsergymVlmTask();
    const env = task.envFactory({ browsergym: `${app.url}/envs/browsergym` }, seededEpisodes(7))() as ClassEnv;
    const reward = () => (env.instance as { reward: number }).reward;
    const row = task.dataset(1)[0]!;
    const observation = await env.reset(row);
    const click = envTools(env).find((t) => t.declaration.name === 'click')!;
    const calls = [{ bid: '99' }, { bid: '13' }];
    const completion: Rollout['completion'] = [];
    for (const args of calls) {
      completion.push({ role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'click', arguments: args } }] });
      completion.push({ role: 'tool', name: 'click', content: (await click.call(args)) as unknown[] });
    }
    await env.close();
    completion.push({ role: 'assistant', content: 'Done.' });
    const rollout: Rollout = {
      row, prompt: [row.prompt[0]!, { role: 'user', content: `${row.prompt[1]!.content}${observation}` }], promptIds: tokenizer.encode(`${row.prompt[1]!.content}${observation}`),
      completionIds: [], toolMask: [], stubbornMask: [], logprobs: [], completion, images: [], truncated: false, env, toolCalls: 2, toolFailures: 0, stubbornCalls: 0,
    };
    const [view] = rolloutViews({ rollouts: [rollout], samples: [{ step: 1, prompt: '', completion: '', rewards: { reward_completion: reward() }, advantage: 0.75 }], unscorable: [], numGenerations: 4, rewardWeights: [1], tokenizer, screenshots: new ScreenshotBudget() });
    const shots = view!.turns.flatMap((t) => t.images ?? []);
    // A screenshot with every step, the missed click too: both kept within the budget.
    expect(shots.length).toBe(2);
    expect(shots.every((s) => s.src.startsWith('data:image/png;base64,') && Math.max(s.width, s.height) <= 512)).toBe(true);
    const exported = {
      format: 'webgrpo-run', version: 1,
      run: { name: 'browsergym-vlm screenshots', status: 'finished', createdAt: '', updatedAt: '', config: { num_generations: 4 }, model: { name: 'tiny VL' }, env: { name: 'browsergym', task: 'browsergym-vlm' }, error: null },
      steps: [{ step: 0, metrics: { reward: reward() } }],
      rollouts: [{ step: 0, index: 0, data: view }],
    };
    const res = await fetch(`${app.url}/api/runs/import`, { method: 'POST', headers: { 'content-type': 'application/json', origin: app.url }, body: JSON.stringify(exported) });
    expect(res.status).toBe(201);
    const { id, shareToken } = (await res.json()) as { id: string; shareToken: string };

    const page = await (await browser.newContext({ viewport: { width: 1280, height: 1100 } })).newPage();
    // A reader's browser: the share link opens the run (a bare id opens nothing).
    await page.goto(`${app.url}/#/runs/${id}?share=${shareToken}`);
    await page.getByTestId('rollout').first().locator('.rollout-head').click();
    const thumbs = page.getByTestId('screenshot-thumbnail');
    await thumbs.first().waitFor({ timeout: 30_000 });
    expect(await thumbs.count()).toBe(2);
    // Loaded, not broken: the image decoded at its stored size.
    expect(await thumbs.first().locator('img').evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(shots[0]!.width);
    await page.getByTestId('rollout').first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SCREENSHOTS}rollout-screenshots.png`, fullPage: true });
    await thumbs.nth(1).click();
    const enlarged = page.getByTestId('screenshot-enlarged');
    await enlarged.waitFor();
    await page.screenshot({ path: `${SCREENSHOTS}rollout-screenshot-enlarged.png` });
    await enlarged.click();
    await enlarged.waitFor({ state: 'detached' });

    const html = await (await fetch(`${app.url}/api/runs/${id}/page`)).text();
    expect(html.match(/<img class="shot" src="data:image\/png;base64,/g)?.length).toBe(2);
  });

  it('a step whose tool results never fitted the budget is said: a banner, and the rollout says where it ended', async () => {
    const row = (await browsergymVlmTask()).dataset(1)[0]!;
    const exported = {
      format: 'webgrpo-run', version: 1,
      run: { name: 'browsergym-vlm over budget', status: 'finished', createdAt: '', updatedAt: '', config: { num_generations: 2, max_completion_length: 200 }, model: { name: 'tiny VL' }, env: { name: 'browsergym', task: 'browsergym-vlm' }, error: null },
      steps: [{ step: 0, metrics: { reward: 0, 'tools/call_frequency': 1, 'tools/failure_frequency': 0, 'tools/over_budget_frequency': 1 } }],
      rollouts: [0, 1].map((index) => ({
        step: 0, index,
        data: {
          group: 0, index, reward: 0, advantage: 0, rewards: { reward_completion: 0 }, overBudget: { tokens: 412, budget: 200 },
          turns: [{ role: 'prompt', text: String(row.prompt[1]!.content) }, { role: 'assistant', text: '<tool_call>\n<function=noop>\n</function>\n</tool_call><|im_end|>' }],
        },
      })),
    };
    const res = await fetch(`${app.url}/api/runs/import`, { method: 'POST', headers: { 'content-type': 'application/json', origin: app.url }, body: JSON.stringify(exported) });
    expect(res.status).toBe(201);
    const { id, shareToken } = (await res.json()) as { id: string; shareToken: string };
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 1100 } })).newPage();
    await page.goto(`${app.url}/#/runs/${id}?share=${shareToken}`);
    const banner = page.getByTestId('step-warnings');
    await banner.waitFor({ timeout: 30_000 });
    expect(await banner.textContent()).toContain('step 1: no tool result of this step reached the model (tools/over_budget_frequency 1)');
    await page.getByTestId('rollout').first().locator('.rollout-head').click();
    expect(await page.getByTestId('over-budget').textContent()).toContain('with them this completion would hold 412 tokens, over its budget of 200');
    await page.getByTestId('rollout').first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SCREENSHOTS}rollout-over-budget.png`, fullPage: true });
    // The exported page says it too.
    const html = await (await fetch(`${app.url}/api/runs/${id}/page?share=${shareToken}`)).text();
    expect(html.match(/<p class="note">the last tool results were rolled back: 412 tokens with them, over the budget of 200<\/p>/g)?.length).toBe(2);
  });
});
