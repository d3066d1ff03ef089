// Errors that name their cause (issue 33): a mistyped local model folder is never sent to the Hub, a
// refused env connection says so, an unknown flag gets the nearest known one, and `train`'s first line
// says the SFT steps a preset adds.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseCli } from '../../src/cli/args.ts';
import { run as webgrpo } from '../../src/cli/main.ts';
import { stepsPlanned } from '../../src/cli/train.ts';
import { closestName } from '../../src/model/closest-name.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { isLocalModelFolder } from '../../src/model/node-files.ts';
import { connect } from '../../src/openenv/client.ts';
import { taskFromMetadata } from '../../src/rl/tasks/env-task.ts';

const DEMO = resolve('models/demo');

/** console.error's lines while `fn` runs, and its exit code. */
async function errorsOf(fn: () => Promise<number>): Promise<{ code: number; errors: string[] }> {
  const errors: string[] = [];
  const spy = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void errors.push(a.join(' ')));
  try {
    return { code: await fn(), errors };
  } finally {
    spy.mockRestore();
  }
}

describe('--model: a path is never sent to the Hub', () => {
  const home = process.cwd();
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'webgrpo-model-folder-'));
    mkdirSync(join(dir, 'models', 'demo'), { recursive: true });
    writeFileSync(join(dir, 'models', 'demo', 'config.json'), '{}');
    process.chdir(dir);
  });
  afterAll(() => {
    process.chdir(home);
    rmSync(dir, { recursive: true, force: true });
  });
  afterEach(() => vi.restoreAllMocks());

  it('a typo inside an existing folder, of the folder itself, or a path-like string: "no model folder", with the folder meant', async () => {
    await expect(isLocalModelFolder('models/demoo')).rejects.toThrow(/^no model folder models\/demoo \(did you mean models\/demo\?\)$/);
    await expect(isLocalModelFolder('model/demo')).rejects.toThrow(/^no model folder model\/demo \(did you mean models\/demo\?\)$/);
    await expect(isLocalModelFolder('./models/dem')).rejects.toThrow(/^no model folder \.\/models\/dem \(did you mean models\/demo\?\)$/);
    await expect(isLocalModelFolder(join(dir, 'models', 'Demo'))).rejects.toThrow(`no model folder ${join(dir, 'models', 'Demo')} (did you mean ${join(dir, 'models', 'demo')}?)`);
    // An existing parent with nothing like the name, or a path whose parent is not there: no guess.
    await expect(isLocalModelFolder('models/qwen3-0.6b-trained')).rejects.toThrow(/^no model folder models\/qwen3-0\.6b-trained$/);
    await expect(isLocalModelFolder('../nowhere/model')).rejects.toThrow(/^no model folder \.\.\/nowhere\/model$/);
    await expect(isLocalModelFolder('/nowhere/model')).rejects.toThrow(/^no model folder \/nowhere\/model$/);
    await expect(isLocalModelFolder('./demo')).rejects.toThrow(/^no model folder \.\/demo$/);
  });

  it('a folder is a folder; a bare owner/name with no such local parent may be a Hub repo id', async () => {
    expect(await isLocalModelFolder('models/demo')).toBe(true);
    expect(await isLocalModelFolder('models/demo/')).toBe(true);
    expect(await isLocalModelFolder('Qwen/Qwen3-0.6B')).toBe(false);
    // `modelz` is a typo of `models`, but nothing in models/ is like the name: a Hub id it may be.
    expect(await isLocalModelFolder('modelz/Qwen3-0.6B')).toBe(false);
  });

  it('openCheckpoint and the CLI fail by name, without one request', async () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    await expect(openCheckpoint('models/demoo')).rejects.toThrow('no model folder models/demoo (did you mean models/demo?)');
    const generate = await errorsOf(() => webgrpo(['generate', '--model', 'models/demoo', '--ids', '1,2']));
    const train = await errorsOf(() => webgrpo(['train', '--model', 'models/demoo', '--env', 'echo', '--max_steps', '1']));
    expect(generate).toEqual({ code: 1, errors: ['webgrpo generate: no model folder models/demoo (did you mean models/demo?)'] });
    expect(train).toEqual({ code: 1, errors: ['webgrpo train: no model folder models/demoo (did you mean models/demo?)'] });
    expect(fetchSpy).not.toHaveBeenCalled();
  });
});

describe('an env URL nothing listens at', () => {
  let url = '';
  beforeAll(async () => {
    // A port that was just free: nothing listens there now.
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    await new Promise((r) => server.close(r));
    url = `http://127.0.0.1:${port}`;
  });

  it('says "connection refused" and how to start a server, not "fetch failed"', async () => {
    const said = `connection refused — is an env-server running at ${url}? (start one with \`npx webgrpo env-server\`)`;
    await expect(taskFromMetadata(`${url}/`)).rejects.toThrow(said);
    await expect(connect(url)).rejects.toThrow(`Cannot connect to ${url.replace('http', 'ws')}/ws: ${said} (code: CONNECT_FAILED)`);
    expect(await errorsOf(() => webgrpo(['render', '--model', DEMO, '--env', url]))).toEqual({ code: 1, errors: [`webgrpo render: ${said}`] });
  });
});

describe('unknown flags', () => {
  const OPTIONS = { max_steps: { type: 'string' }, learning_rate: { type: 'string' }, 'max-new-tokens': { type: 'string' }, seed: { type: 'string' } } as const;

  it('get the nearest known flag by edit distance (separators and case aside), or none when nothing is near', () => {
    expect(() => parseCli(['--max_step', '2'], OPTIONS)).toThrow("unknown option '--max_step' (see --help) (did you mean --max_steps?)");
    expect(() => parseCli(['--learning-rate', '1'], OPTIONS)).toThrow('(did you mean --learning_rate?)');
    expect(() => parseCli(['--max_new_tokens', '1'], OPTIONS)).toThrow('(did you mean --max-new-tokens?)');
    expect(() => parseCli(['--sed', '1'], OPTIONS)).toThrow('(did you mean --seed?)');
    expect(() => parseCli(['--temperature', '1'], OPTIONS)).toThrow(/^unknown option '--temperature' \(see --help\)$/);
  });

  it('train says it for its GRPOConfig flags', async () => {
    expect(await errorsOf(() => webgrpo(['train', '--model', DEMO, '--env', 'echo', '--max_step', '2']))).toEqual({
      code: 1, errors: ["webgrpo train: unknown option '--max_step' (see --help) (did you mean --max_steps?)"],
    });
  });

  it('the nearest name within a typo budget that grows with the name, the first on a tie', () => {
    expect(closestName('maxstep', ['lr', 'maxsteps', 'max_steps'])).toBe('maxsteps');
    expect(closestName('lerning_rate', ['learning_rate', 'beta'])).toBe('learning_rate');
    expect(closestName('abcdef', ['uvwxyz'])).toBeNull(); // 6 edits, budget 2
    expect(closestName('demoo', ['demo', 'demos'])).toBe('demo');
    expect(closestName('ab', ['xy'])).toBeNull(); // a 2-letter name allows 1 edit
  });
});

describe("train's first line", () => {
  it('says the SFT warm-up steps a preset adds, before the GRPO steps asked for', () => {
    const browsergym = { name: 'browsergym', preset: 'browsergym' as const };
    expect(stepsPlanned({ sft_steps: 10 }, { sft_steps: 'preset' }, browsergym, 1)).toBe('10 SFT warm-up steps (preset browsergym) + 1 GRPO step');
    expect(stepsPlanned({ sft_steps: 0 }, {}, { name: 'echo', preset: 'echo' }, 2)).toBe('2 GRPO steps');
    expect(stepsPlanned({ sft_steps: 30 }, { sft_steps: 'flag' }, { name: 'catch-compact', preset: null }, 2)).toBe('30 SFT warm-up steps (--sft_steps) + 2 GRPO steps');
    // A resume's warm-up length is its checkpoint's (the launcher sets sft_steps from it).
    expect(stepsPlanned({ sft_steps: 10 }, { sft_steps: 'checkpoint' }, browsergym, 5, { runStep: 12 })).toBe("10 SFT warm-up steps (the checkpoint's) + 5 GRPO steps, resuming after step 12");
  });
});
