// `webgrpo train --model DIR --env NAME|URL [--sft FILE] [--config run.json] [--TRLNAME value …] [--output DIR]`:
// GRPO (after an optional SFT warm-up) on one of TRL's example tasks, one JSON line of metrics per
// step on stdout. With a built-in env name an env-server runs in-process on 127.0.0.1.

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Engine } from '../engine/types.ts';
import { writeSafetensors } from '../model/safetensors.ts';
import { loadTokenizer } from '../model/tokenizer.ts';
import { readCheckpointFolder, folderCheckpointStore, latestCheckpointFolder, type TrainerCheckpoint } from '../rl/checkpoint.ts';
import { applyConfigFlags, configFromObject, configHelp, type GRPOConfig } from '../rl/config.ts';
import { jsonSafe } from '../rl/metrics.ts';
import { COMPACT_CATCH_TASK } from '../rl/compact-catch.ts';
import { EXAMPLES } from '../rl/prompts.ts';
import { runExample, type ChatTemplateTask, type RunEvent } from '../rl/run-example.ts';
import { parseTranscripts, transcriptsToJsonl, type Transcript } from '../rl/sft.ts';
import { SOLVERS } from '../rl/solvers.ts';
import { taskFromMetadata } from '../rl/env-task.ts';
import { isPresetEnv, modelTierOf, presetConfig, type ModelTier } from '../rl/presets.ts';
import { parseConfig } from '../model/config.ts';

const HELP = `usage: webgrpo train --model DIR --env NAME|URL [options] [--TRLNAME value …]

  --model DIR|REPO        Qwen3 checkpoint folder (config.json, model.safetensors, tokenizer files)
                          or a Hugging Face repo id (downloaded with progress, cached)
  --env NAME|URL          task: echo, catch, wordle, multi (TRL's examples), catch-compact (catch with
                          one-word observations for tiny models); built-in env-server in-process,
                          or any OpenEnv base URL (the task is told by its /metadata)
  --sft FILE              SFT warm-up transcripts (JSONL: message lists or {"messages","tools"})
  --sft-solver NAME       make warm-up transcripts with the scripted solver (catch, catch-compact, echo, wordle)
  --sft-episodes N        episodes the solver plays (default 64)
  --config FILE           run.json with GRPOConfig keys (over the task preset, the same as the app's)
  --output DIR            checkpoints (every save_steps) and the final PEFT adapter
  --resume DIR|latest     continue from a checkpoint folder (latest = newest under --output)
  --dataset-size N        rows of the example dataset (default: the example's)
  --weight-dtype auto|f16|f32  storage of the frozen weights (full fine-tuning needs f32)

Each step prints one JSON line: {"phase":"sft"|"grpo","step":…, <TRL metric names>}.

GRPOConfig flags (TRL names):
${configHelp()}`;

interface Args {
  model: string;
  env: string;
  sft: string | null;
  sftSolver: string | null;
  sftEpisodes: number;
  config: string | null;
  output: string | null;
  resume: string | null;
  datasetSize: number | undefined;
  weightDtype: 'auto' | 'f16' | 'f32';
  flags: string[];
}

function parseArgs(argv: string[]): Args | 'help' {
  const args: Args = {
    model: '', env: '', sft: null, sftSolver: null, sftEpisodes: 64, config: null, output: null, resume: null,
    datasetSize: undefined, weightDtype: 'auto', flags: [],
  };
  const own = new Set(['--model', '--env', '--sft', '--sft-solver', '--sft-episodes', '--config', '--output', '--resume', '--dataset-size', '--weight-dtype']);
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag === '--help' || flag === '-h') return 'help';
    if (!own.has(flag)) {
      args.flags.push(flag);
      continue;
    }
    const value = argv[++i];
    if (value === undefined || value.startsWith('--')) throw new Error(`${flag} needs a value`);
    const int = () => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a positive integer, got '${value}'`);
      return n;
    };
    switch (flag) {
      case '--model': args.model = value; break;
      case '--env': args.env = value; break;
      case '--sft': args.sft = value; break;
      case '--sft-solver': args.sftSolver = value; break;
      case '--sft-episodes': args.sftEpisodes = int(); break;
      case '--config': args.config = value; break;
      case '--output': args.output = value; break;
      case '--resume': args.resume = value; break;
      case '--dataset-size': args.datasetSize = int(); break;
      case '--weight-dtype':
        if (value !== 'auto' && value !== 'f16' && value !== 'f32') throw new Error(`--weight-dtype must be auto, f16 or f32, got '${value}'`);
        args.weightDtype = value;
        break;
    }
  }
  if (!args.model) throw new Error('--model DIR is required (see --help)');
  if (!args.env) throw new Error('--env NAME|URL is required (see --help)');
  return args;
}

/** Warm-up steps when transcripts are given but sft_steps is not. */
const DEFAULT_SFT_STEPS = 50;

const BUILTIN: Record<string, true> = { echo: true, catch: true, wordle: true };

/** Tasks by `--env` name: TRL's four examples plus the compact catch variant for tiny models. */
const TASKS: Record<string, ChatTemplateTask> = { ...EXAMPLES, 'catch-compact': COMPACT_CATCH_TASK };

/**
 * `--env`: a task name (in-process env-server) or an OpenEnv base URL; a URL whose last segment is
 * echo/catch/wordle is that task, any other (a Hugging Face Space) is told by its /metadata.
 */
async function resolveEnv(env: string): Promise<{ name: string; task: ChatTemplateTask; url: string | null }> {
  if (/^(https?|wss?):\/\//.test(env)) {
    const url = env.replace(/\/+$/, '');
    const last = new URL(url).pathname.split('/').pop() ?? '';
    const name = BUILTIN[last] ? last : await taskFromMetadata(url.replace(/^ws/, 'http'));
    return { name, task: TASKS[name]!, url };
  }
  const task = TASKS[env];
  if (!task) throw new Error(`--env: unknown env '${env}' (choose ${Object.keys(TASKS).join(', ')}, or give a URL)`);
  return { name: env, task, url: null };
}

/**
 * The tier of --model for the presets: from a local folder's config.json (parameter count); a Hub id
 * or an unreadable folder counts as full-size (the open step reports real problems).
 */
async function modelTierOfArg(model: string): Promise<ModelTier> {
  try {
    return modelTierOf(parseConfig(JSON.parse(await readFile(join(model, 'config.json'), 'utf8')), model));
  } catch {
    return 'full-size';
  }
}

/** The built-in task's preset (the app's, src/rl/presets.ts) or, for others, the example script's settings. */
async function taskDefaults(name: string, task: ChatTemplateTask, args: Args): Promise<Record<string, unknown>> {
  const env = name === 'catch-compact' ? 'catch' : name;
  return isPresetEnv(env) ? presetConfig(env, await modelTierOfArg(args.model)) : task.config;
}

/** DEFAULT ← the task's preset (same as the app's) ← run.json ← flags. */
async function buildConfig(name: string, task: ChatTemplateTask, args: Args): Promise<GRPOConfig> {
  let config = configFromObject(await taskDefaults(name, task, args));
  if (args.config) {
    const text = await readFile(args.config, 'utf8').catch(() => {
      throw new Error(`--config: cannot read ${args.config}`);
    });
    let obj: Record<string, unknown>;
    try {
      obj = JSON.parse(text);
    } catch (err) {
      throw new Error(`--config ${args.config}: not valid JSON (${(err as Error).message})`);
    }
    config = configFromObject(obj, config);
  }
  const { config: withFlags, rest } = applyConfigFlags(args.flags, config);
  if (rest.length > 0) throw new Error(`unknown option ${rest[0]} (see --help for GRPOConfig keys)`);
  if (args.output) withFlags.output_dir = args.output;
  return withFlags;
}

function printEvent(e: RunEvent, logCompletions: boolean): void {
  if (e.phase === 'sft') {
    // Same key style as the GRPO lines (snake_case, like TRL's logs).
    const { totalSteps, ...rest } = e;
    console.log(JSON.stringify({ ...rest, total_steps: totalSteps }));
    return;
  }
  const line: Record<string, unknown> = { phase: 'grpo', step: e.step, total_steps: e.totalSteps, ...jsonSafe(e.metrics) };
  // logging_steps (TRL): every N steps the line also carries the metrics averaged over those N steps.
  if (e.logs) line.logs = jsonSafe(e.logs);
  if (logCompletions) line.completions = e.completions;
  if (e.unscorable.length > 0) line.unscorable = e.unscorable;
  if (e.checkpoint) line.checkpoint = e.checkpoint;
  console.log(JSON.stringify(line));
}

async function exportAdapter(engine: Engine, baseModel: string, dir: string): Promise<string> {
  const { adapterConfig, tensors } = await engine.exportAdapter(baseModel);
  const target = join(dir, 'adapter');
  await mkdir(target, { recursive: true });
  await writeFile(join(target, 'adapter_config.json'), JSON.stringify(adapterConfig, null, 2) + '\n');
  const bytes = writeSafetensors(
    tensors.map((t) => ({ name: t.name, dtype: 'F32' as const, shape: t.shape, data: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength) })),
  );
  await writeFile(join(target, 'adapter_model.safetensors'), bytes);
  return target;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (args === 'help') {
    console.log(HELP);
    return 0;
  }
  const { name, task, url } = await resolveEnv(args.env);
  const config = await buildConfig(name, task, args);

  let resume: TrainerCheckpoint | undefined;
  if (args.resume) {
    const dir = args.resume === 'latest' ? (args.output ? await latestCheckpointFolder(args.output) : null) : args.resume;
    if (!dir) throw new Error(`--resume latest: no checkpoint-<step> folder under ${args.output ?? '(no --output given)'}`);
    resume = await readCheckpointFolder(dir);
  }

  let transcripts: Transcript[] | undefined;
  if (args.sft) transcripts = parseTranscripts(await readFile(args.sft, 'utf8'), args.sft);
  if ((args.sft || args.sftSolver) && config.sft_steps === 0) config.sft_steps = DEFAULT_SFT_STEPS;

  // Heavy modules load only now, so `train --help` and argument errors stay instant.
  const { openCheckpoint } = await import('../model/checkpoint.ts');
  const { loadEngine } = await import('../engine/engine.ts');
  const server = url ? null : await (await import('../../env-server/server.ts')).createEnvServer({ port: 0 });
  const envUrls = url ? { [name]: url } : { echo: `${server!.url}/envs/echo`, catch: `${server!.url}/envs/catch`, wordle: `${server!.url}/envs/wordle` };
  const ctrl = new AbortController();
  const onSignal = () => ctrl.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let engine: Engine | null = null;
  try {
    if (args.sftSolver) {
      const solve = SOLVERS[args.sftSolver];
      const solverUrl = envUrls[(args.sftSolver === 'catch-compact' ? 'catch' : args.sftSolver) as keyof typeof envUrls];
      if (!solve || !solverUrl) throw new Error(`--sft-solver: no scripted solver '${args.sftSolver}' for this env (have ${Object.keys(SOLVERS).join(', ')})`);
      transcripts = [...(transcripts ?? []), ...(await solve({ baseUrl: solverUrl, episodes: args.sftEpisodes, seed: config.seed }))];
      if (args.output) {
        await mkdir(args.output, { recursive: true });
        await writeFile(join(args.output, 'transcripts.jsonl'), transcriptsToJsonl(transcripts));
      }
    }
    const ckpt = await openCheckpoint(args.model);
    const tokenizerJson = await ckpt.readText('tokenizer.json');
    const tokenizerConfig = await ckpt.readText('tokenizer_config.json');
    if (tokenizerJson === null || tokenizerConfig === null) throw new Error(`${args.model}: tokenizer.json and tokenizer_config.json are required`);
    const tokenizer = loadTokenizer(tokenizerJson, tokenizerConfig);
    const weightDtype = config.train_mode === 'full' ? 'f32' : args.weightDtype;
    engine = await loadEngine(ckpt, { weightDtype });
    const events = runExample({
      engine,
      tokenizer,
      task,
      envUrls,
      config,
      transcripts,
      datasetSize: args.datasetSize,
      checkpointStore: args.output ? folderCheckpointStore(args.output) : undefined,
      resume,
      signal: ctrl.signal,
    });
    for await (const e of events) printEvent(e, config.log_completions);
    if (args.output && config.train_mode === 'lora' && !ctrl.signal.aborted) {
      const adapter = await exportAdapter(engine, args.model, args.output);
      console.log(JSON.stringify({ phase: 'done', adapter }));
    }
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    engine?.destroy();
    await server?.close();
  }
}
