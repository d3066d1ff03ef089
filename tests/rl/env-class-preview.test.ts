// The setup page's preview of a user's environment class (workers/env-class-preview.ts), in Node: the
// tools it shows are the schemas the trainer's own task hands the chat template, and every problem a
// user makes (a syntax error, no default class, a tool without docs, too much text) is one clear error.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { previewEnvClass } from '../../workers/env-class-preview.ts';
import { envClassRunTask } from '../../workers/env-class-run.ts';
import { envToolSchemas } from '../../src/rl/rollout/env.ts';
import { pyJsonDumps } from '../../src/rl/rollout/schema.ts';
import { envClassTask, loadEnvClassModule, MAX_CLASS_TEXT } from '../../src/rl/tasks/env-class.ts';

const ECHO = fs.readFileSync(new URL('../../examples/echo.mjs', import.meta.url), 'utf8');
/** TRL's dict form: two environments, each with its own tool. */
const MULTI = `class Up { reset() { return null; }
  /** Go up.
   * @param {integer} n How far
   */
  up(n) { return n; }
  getReward() { return 1; } }
class Down { reset() { return null; }
  /** Go down. */
  down() { return 0; }
  getReward() { return 0; } }
export default { up: Up, down: Down };
export const dataset = [{ environment: 'up' }, { environment: 'down' }];`;
const SOURCE = 'your environment';

describe('previewEnvClass', () => {
  it('shows the tools the trainer renders, its reward sources, data and config', async () => {
    const preview = await previewEnvClass({ source: SOURCE, text: ECHO }, 5_000);
    if (!preview.ok) throw new Error(preview.error);
    // The trainer's own path: the task's env as bindTask probes it.
    const task = envClassTask(await loadEnvClassModule(ECHO, { source: SOURCE, timeoutMs: 5_000 }));
    const trained = envToolSchemas(task.envFactory({ echo: 'http://127.0.0.1:1/envs/echo' })());
    expect(preview.environments).toHaveLength(1);
    expect(preview.environments[0]!.tools).toEqual(trained);
    expect(preview.environments[0]!.toolJson).toEqual(trained.map(pyJsonDumps));
    expect(preview.environments[0]!.toolJson[0]).toBe('{"type": "function", "function": {"name": "echo", "description": "Echo the message back from the environment.", "parameters": {"type": "object", "properties": {"message": {"type": "string", "description": "The message to echo"}}, "required": ["message"]}, "return": {"type": "string", "description": "The echoed message."}}}');
    expect(preview).toMatchObject({ name: 'EchoToolEnv', rewards: ['reward_func'], dataset: { rows: 5, firstPrompt: [{ role: 'user', content: "Try to echo 'Hello World!' in the environment." }] } });
    expect(preview.config).toMatchObject({ chat_template_kwargs: { enable_thinking: false }, logging_steps: 2 });
  });

  it("lists each environment's tools in TRL's dict form", async () => {
    const preview = await previewEnvClass({ source: SOURCE, text: MULTI }, 5_000);
    if (!preview.ok) throw new Error(preview.error);
    expect(preview.environments.map((e) => [e.name, e.className, e.tools.map((t) => t.function.name)])).toEqual([['up', 'Up', ['up']], ['down', 'Down', ['down']]]);
    expect(preview.rewards).toEqual(['Up', 'Down']);
    expect(preview.dataset?.rows).toBe(2);
  });

  it.each([
    ['a syntax error', 'export default class A { reset( { }', /your environment is not a JavaScript module/],
    ['no default class', 'export const x = 1;', /your environment: the default export must be an environment class .* got nothing/],
    ['a tool without docs', 'export default class A { reset() { return null; } act(x) {} getReward() { return 0; } }', /your environment: class A, tool 'act' has no JSDoc/],
    ['no reward source', 'export default class A { reset() { return null; } }', /no reward source/],
    ['a throwing top level', 'throw new Error("boom"); export default class A {}', /your environment failed to load: boom/],
    ['a config that is not JSON', 'export default class A { reset() { return null; } getReward() { return 0; } }\nexport const config = { n: 1n };', /'config' must be JSON data/],
    ['too much text', `// ${'x'.repeat(MAX_CLASS_TEXT)}`, /characters long; an environment module in the app must be at most 65536/],
  ])('names the problem: %s', async (_what, text, error) => {
    const preview = await previewEnvClass({ source: SOURCE, text }, 5_000);
    expect(preview.ok).toBe(false);
    expect(!preview.ok && preview.error).toMatch(error);
  });

  it('cuts off a module whose top level never settles', async () => {
    const preview = await previewEnvClass({ source: SOURCE, text: 'await new Promise(() => {}); export default class A {}' }, 300);
    expect(!preview.ok && preview.error).toMatch(/your environment did not finish loading within 0.3 s/);
  });
});

describe('envClassRunTask (the trainer worker, from the text stored with the run)', () => {
  it('resolves the class as the CLI resolves its file, and refuses what a run cannot keep', async () => {
    const resolved = await envClassRunTask({ source: SOURCE, text: ECHO });
    expect(resolved).toMatchObject({ name: 'EchoToolEnv', url: null, env: null, solver: null });
    expect(resolved.task.dataset()).toHaveLength(5);
    await expect(envClassRunTask({ source: SOURCE, text: `// ${'x'.repeat(MAX_CLASS_TEXT)}` })).rejects.toThrow(/at most 65536/);
    await expect(envClassRunTask({ source: SOURCE } as never)).rejects.toThrow(/must be \{source, text\} strings/);
  });
});
