// The one launcher (src/rl/launch.ts): the config resolved once with the layer that set each key, one
// sft_steps (a resume keeps its checkpoint's, so a warm-up step done is not done again), `--model` read
// once into a location that opening and sizing both take, the weight precision and memory plan decided
// once, and bad input failing with the errors it always had.

import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEngine } from '../../src/engine/engine.ts';
import type { Gpu } from '../../src/engine/gpu.ts';
import type { Engine } from '../../src/engine/types.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { TINY_MODEL_OPTIONS } from '../../workers/load-model.ts';
import { locateModel, openCheckpoint, readModelConfig } from '../../src/model/checkpoint.ts';
import { parseConfigText } from '../../src/model/config.ts';
import type { ModelConfig } from '../../src/model/types.ts';
import { DEFAULT_CONFIG } from '../../src/rl/config.ts';
import { DEFAULT_SFT_STEPS, locateRunModel, resolveRun, type RunRequest } from '../../src/rl/launch.ts';
import { layerConfig } from '../../src/rl/launch-config.ts';
import { planModelLoad, prepareRun } from '../../src/rl/launch-model.ts';
import { RunControl } from '../../src/rl/run-control.ts';
import type { RunState } from '../../src/rl/run-state.ts';
import { Run } from '../../src/rl/run.ts';
import { PRESET_CONFIGS } from '../../src/rl/tasks/presets.ts';
import { resolveTask, type RunTask } from '../../src/rl/tasks/resolve-task.ts';

const DEMO = resolve('models/demo');
const demoConfig: ModelConfig = parseConfigText(readFileSync(join(DEMO, 'config.json'), 'utf8'), 'demo/config.json');
/** A Qwen3-0.6B-sized config (the full-size tier) from the demo's, by its parameter count's inputs. */
const fullSize: ModelConfig = { ...demoConfig, hiddenSize: 1024, numLayers: 28, intermediateSize: 3072, vocabSize: 151936 };

const request = (over: Partial<RunRequest> = {}): RunRequest => ({ env: 'catch', preset: true, config: [], ...over });

describe('the config, resolved once with its provenance', () => {
  it('TRL defaults ← the preset for the model tier ← --config ← flags: each key names the layer that set it last', async () => {
    const run = await resolveRun(request({
      config: [
        { source: '--config', values: { learning_rate: 0.5, beta: 0.1 } },
        { source: 'flag', text: { learning_rate: '0.25', max_steps: '3', log_completions: 'true' } },
        { source: '--output', values: { output_dir: '/tmp/out' } },
      ],
    }), fullSize);
    const preset = PRESET_CONFIGS.catch['full-size'];
    expect(run.task.name).toBe('catch');
    expect(run.config).toMatchObject({ learning_rate: 0.25, beta: 0.1, max_steps: 3, log_completions: true, output_dir: '/tmp/out', num_generations: preset.num_generations, sft_steps: preset.sft_steps });
    expect(run.from).toMatchObject({ learning_rate: 'flag', beta: '--config', max_steps: 'flag', log_completions: 'flag', output_dir: '--output', num_generations: 'preset', sft_steps: 'preset' });
    // Neither the preset nor a layer set it: TRL's default, with no provenance.
    expect(run.from.epsilon).toBeUndefined();
    expect(run.config.epsilon).toBe(DEFAULT_CONFIG.epsilon);
  });

  it("the preset follows the model's tier (tiny: catch is compact catch), and its app-only log_completions stays off", async () => {
    const tiny = await resolveRun(request(), demoConfig);
    expect(tiny.tier).toBe('tiny');
    expect(tiny.task.name).toBe('catch-compact');
    expect(tiny.config.learning_rate).toBe(PRESET_CONFIGS.catch.tiny.learning_rate);
    expect(tiny.config.log_completions).toBe(false);
    expect(tiny.from.log_completions).toBeUndefined();
    // An unreadable config.json (null) counts as full-size.
    expect((await resolveRun(request(), null)).tier).toBe('full-size');
  });

  it("without the preset layer (the app's page merged it already), the run's config alone, its unknown keys dropped when asked", async () => {
    const run = await resolveRun(request({ preset: false, config: [{ source: 'run config', values: { learning_rate: 3e-4, from_a_newer_webgrpo: 1 }, dropUnknown: true }] }), fullSize);
    expect(run.config.learning_rate).toBe(3e-4);
    expect(run.config.num_generations).toBe(DEFAULT_CONFIG.num_generations);
    expect(run.from).toEqual({ learning_rate: 'run config' });
  });

  it('an env class resolves the task instead of the built-in resolver, with the same choice', async () => {
    const seen: unknown[] = [];
    const run = await resolveRun(request({ env: 'my-env', envUrl: 'http://127.0.0.1:1/envs/echo', envClass: async (choice) => {
      seen.push(choice);
      return resolveTask({ env: 'echo' });
    } }), fullSize);
    expect(seen).toEqual([{ env: 'my-env', url: 'http://127.0.0.1:1/envs/echo', tier: 'full-size' }]);
    expect(run.task.name).toBe('echo');
    expect(run.from.max_steps).toBe('preset');
  });
});

describe('one sft_steps', () => {
  it('warm-up transcripts given with sft_steps 0 make DEFAULT_SFT_STEPS, credited to their flag; a set sft_steps holds', async () => {
    const given = await resolveRun(request({ env: 'echo', warmUpGiven: '--sft given' }), fullSize);
    expect(PRESET_CONFIGS.echo['full-size'].sft_steps).toBe(0);
    expect([given.config.sft_steps, given.from.sft_steps]).toEqual([DEFAULT_SFT_STEPS, '--sft given']);
    const set = await resolveRun(request({ env: 'echo', warmUpGiven: '--sft given', config: [{ source: 'flag', text: { sft_steps: '7' } }] }), fullSize);
    expect([set.config.sft_steps, set.from.sft_steps]).toEqual([7, 'flag']);
  });

  it("a resumed run keeps its checkpoint's warm-up length, whatever the layers say now", async () => {
    const resume: RunState = { runStep: 1, sftSteps: 2, sftStepsDone: 1, files: new Map() };
    // The app resumes with the run's stored config (sft_steps 1 here); the CLI with the flags of the new command.
    for (const config of [[{ source: 'run config', values: { sft_steps: 1 } }], [{ source: 'flag', text: { sft_steps: '0' } }]]) {
      const run = await resolveRun(request({ preset: false, config, resume }), fullSize);
      expect([run.config.sft_steps, run.from.sft_steps]).toEqual([2, 'checkpoint']);
      expect(run.resume).toBe(resume);
    }
  });

  it('a Run refuses a resume whose warm-up length differs from config.sft_steps (it would redo or skip warm-up steps)', () => {
    const task = { name: 'catch', dataset: [{ prompt: [] }] } as unknown as RunTask;
    const spec = { engine: {} as Engine, tokenizer: {} as never, task, sftTranscripts: async () => [], control: new RunControl() };
    const resume: RunState = { runStep: 1, sftSteps: 2, sftStepsDone: 1, files: new Map() };
    expect(() => new Run({ ...spec, config: { ...DEFAULT_CONFIG, sft_steps: 0, max_steps: 1 }, resume })).toThrow(/checkpoint is of a run with 2 SFT steps, the config says sft_steps 0/);
    expect(new Run({ ...spec, config: { ...DEFAULT_CONFIG, sft_steps: 2, max_steps: 1 }, resume }).totalSteps).toBe(3);
  });
});

describe('the weight precision and memory plan, decided once', () => {
  const limits = { maxStorageBufferBindingSize: 2 ** 31, maxBufferSize: 2 ** 31 } as GPUSupportedLimits;

  it("planLoad decides them under the engine's binding limit, and loadEngine takes a decided plan as it is", async () => {
    const ckpt = await openCheckpoint(await makeTinyCheckpointFiles(TINY_MODEL_OPTIONS));
    const plan = await planModelLoad(ckpt, { limits, f16: false, software: true }, { wanted: 'auto', config: { ...DEFAULT_CONFIG }, vision: false });
    expect(plan.precision).toMatchObject({ checkpoint: 'F32', stored: 'f32' });
    expect(plan.memory.fits).toBe(true);
    // Not decided again: a plan said not to fit is refused before the (fake) device is touched.
    const gpu = { limits, f16: false, software: true, device: {} } as unknown as Gpu;
    const refused = { ...plan, memory: { ...plan.memory, fits: false, message: 'as decided by the caller' } };
    await expect(loadEngine(ckpt, { gpu, decided: refused })).rejects.toThrow('model does not fit this GPU: as decided by the caller');
  });
});

describe('--model, read once', () => {
  let server: Server;
  let base = '';
  let cache = '';
  const requests: string[] = [];
  const savedCache = process.env.WEBGRPO_CACHE;
  beforeAll(async () => {
    cache = await mkdtemp(join(tmpdir(), 'webgrpo-launch-cache-'));
    process.env.WEBGRPO_CACHE = cache;
    server = createServer((req, res) => {
      requests.push(req.url ?? '');
      readFile(join(DEMO, (req.url ?? '').replace(/^\/m\//, ''))).then((b) => res.end(b), () => res.writeHead(404).end());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}/m`;
  });
  afterAll(async () => {
    if (savedCache === undefined) delete process.env.WEBGRPO_CACHE;
    else process.env.WEBGRPO_CACHE = savedCache;
    await new Promise((r) => server.close(r));
    await rm(cache, { recursive: true, force: true });
  });

  it('a folder, a URL and a repo id are told apart in one place, and what it found is what is opened and sized', async () => {
    expect(await locateModel(DEMO)).toEqual({ folder: DEMO });
    expect(await locateModel(base)).toEqual({ baseUrl: base });
    expect(await locateModel('Qwen/Qwen3-0.6B')).toEqual({ repo: 'Qwen/Qwen3-0.6B' });
    expect(await readModelConfig({ folder: DEMO })).toEqual(demoConfig);
    const local = await locateRunModel(DEMO);
    expect(local).toMatchObject({ location: { folder: DEMO }, tier: 'tiny', config: demoConfig });
  });

  it("a URL's config.json is fetched once to size the run, and nothing else before opening", async () => {
    requests.length = 0;
    const remote = await locateRunModel(base);
    expect(remote).toMatchObject({ location: { baseUrl: base }, tier: 'tiny', config: demoConfig });
    expect(requests).toEqual(['/m/config.json']);
  });

  it('bad input fails as it did: a mistyped folder by name, a string that names nothing, a bad key or env', async () => {
    await expect(locateRunModel('models/demoo')).rejects.toThrow(/^no model folder models\/demoo \(did you mean models\/demo\?\)$/);
    // A string that names no model fails when opened, after the env and the config were checked (as before).
    const nothing = await locateRunModel('not a model');
    expect(nothing).toMatchObject({ location: null, tier: 'full-size' });
    await expect(prepareRun(nothing, await resolveRun(request(), nothing.config), { weightDtype: 'auto' })).rejects.toThrow("cannot open checkpoint 'not a model': not a local folder, an http(s) URL or a Hub repo id (owner/name)");
    await expect(resolveRun(request({ config: [{ source: 'flag', text: { learning_rat: '1' } }] }), fullSize)).rejects.toThrow("unknown config key 'learning_rat'");
    await expect(resolveRun(request({ config: [{ source: '--config', values: [] as unknown as Record<string, unknown> }] }), fullSize)).rejects.toThrow('config: expected a JSON object');
    await expect(resolveRun(request({ env: 'chess' }), fullSize)).rejects.toThrow(/^unknown env 'chess': no tool environment of that name/);
    expect(() => layerConfig([{ source: 'flag', text: { num_generations: 'many' } }])).toThrow(/num_generations/);
  });
});
