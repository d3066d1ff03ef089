// `webgrpo train --model DIR --env NAME|URL [--sft FILE] [--config run.json] [--TRLNAME value …] [--output DIR]`:
// GRPO (after an optional SFT warm-up) on one of TRL's example tasks, one JSON line of metrics per
// step on stdout. With a built-in env name an env-server runs in-process on 127.0.0.1. The arguments
// become the launcher's request (src/rl/launch.ts); this file keeps argv, stdout/stderr and signals.

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import type { Engine } from '../engine/types.ts';
import { latestCheckpointFolder } from '../rl/grpo/trainer-state.ts';
import { BOOL_KEYS, CONFIG_KEYS, ConfigError, configHelp, type ConfigSources, type GRPOConfig } from '../rl/config.ts';
import type { DatasetRow } from '../rl/rollout/env.ts';
import { parsePromptDataset } from '../rl/tasks/mcp-task.ts';
import { jsonSafe, ToolFailureTally } from '../rl/grpo/metrics.ts';
import { adapterFiles, Run, type RunEvent } from '../rl/run.ts';
import { folderRunStates, readRunStateFolder, type RunState, type RunStateStore } from '../rl/run-state.ts';
import { RunControl } from '../rl/run-control.ts';
import { parseTranscripts, transcriptsToJsonl, type Transcript } from '../rl/grpo/sft.ts';
import { builtinEnvUrls, solverTranscripts, type ResolvedTask, type RunTask } from '../rl/tasks/resolve-task.ts';
import { locateRunModel, resolveRun, RESUMED_SFT_SOURCE, bindRun, type ConfigLayer, type EnvClassTask, type ResolvedRun, type RunBinding, type RunModel, type RunRequest } from '../rl/launch.ts';
import type { Evaluation } from '../rl/eval/trainer-eval.ts';
import { envClassFromCli } from '../rl/tasks/env-class-cli.ts';
import { runVerdict } from './run-verdict.ts';
import { choiceOption, intOption, parseCli, str, type OptionTable } from './args.ts';
import { formatBytes, Progress, type ProgressTask } from './progress.ts';
import { inProcessEnvs, miniwobOption } from './in-process-envs.ts';
import { parseAxtreeForm, type AxtreeForm } from '../../env-server/envs/browsergym/axtree.ts';
import { TrainProgress } from './train-progress.ts';
import { ADAPTER_HELP, announceAdapter } from './adapter-line.ts';
import { stepPlan } from '../rl/grpo/trainer.ts';
import { fullModelFolder } from './full-model-folder.ts';
import { modelLocationName, type ModelLocation } from '../model/checkpoint.ts';
import { trainedChat, trainedChatMetadata, type TrainedChat } from '../export/trained-chat.ts';

const HELP = `usage: webgrpo train --model DIR --env NAME|URL [options] [--TRLNAME value …]

  --model DIR|REPO        Qwen3 checkpoint folder (config.json, model.safetensors, tokenizer files)
                          or a Hugging Face repo id (downloaded with progress, cached)
  --env NAME|URL          task: echo, catch, wordle, multi, browsergym (TRL's examples), catch-compact
                          (catch with one-word observations; tiny models play catch so), browsergym:TASK[,TASK…]
                          or browsergym:mix (web tasks, easy-biased mix); built-in env-server
                          in-process, or any OpenEnv base URL (the task is told by its /metadata);
                          browsergym-vlm[:TASK…|:mix]: TRL's screenshot example (needs a vision model)
  --env-url URL           the env a task named by --env plays, instead of the in-process one
                          (e.g. --env browsergym-vlm --env-url https://openenv-browsergym-env.hf.space)
  --miniwob DIR|URL       browsergym over a real MiniWoB++ html/miniwob/ folder (or an http(s) URL
                          of one; default $MINIWOB_URL): its tasks by name, BrowserGym's episodes
  --axtree browsergym|classic  the page tree's form (default: classic over the built-in tasks,
                          browsergym — the real server's — over a MiniWoB++ folder)
  --sft FILE              SFT warm-up transcripts (JSONL: message lists or {"messages","tools"})
  --sft-solver NAME       make warm-up transcripts with the task's scripted solver (catch, catch-compact, echo, wordle,
                          browsergym; default: the task's own when sft_steps > 0 and no --sft is given)
  --sft-episodes N        episodes the solver plays (default 64)
  --config FILE           run.json with GRPOConfig keys (over the task preset, the same as the app's)
  --output DIR            checkpoints (when GRPO starts, every save_steps, on a stop) and the final PEFT adapter
                          (LoRA) or model/ (full fine-tuning: a Hugging Face model folder, also at every save)
  --resume DIR|latest     continue from a checkpoint folder (latest = newest under --output), in the
                          warm-up or in GRPO, wherever it was taken
  --dataset-size N        rows of the example dataset (default: the example's)
  --weight-dtype auto|f16|f32  storage of the frozen weights (full fine-tuning needs f32)
  --prompt TEXT           prompt for an MCP env that none of the tasks knows (repeatable); the
                          model gets the env's tools (tools/list) and the env's own rewards
  --dataset FILE          JSONL prompts for such an env: one {"prompt": text or messages} per line
  --eval_dataset FILE     held-out prompts (same JSONL) for --eval_strategy steps / --eval_on_start, for tasks
                          with no held-out split of their own; a row that is also a training row is refused
  --env-class FILE.mjs    train your own environment class (TRL's environment_factory; README
                          "Environment classes"); --dataset FILE: its rows (every column reaches reset)

Each step prints one JSON line: {"phase":"sft"|"grpo","step":…, <TRL metric names>}, steps numbered
once for the whole run (1-based: the warm-up's, then GRPO's); progress
with an ETA goes to stderr. Ctrl-C (SIGINT) or SIGTERM stops within seconds: the checkpoint and
the adapter (or model/) are saved under --output, their paths printed on stderr, and the exit code is 130/143.
Completions are printed only with --log_completions (TRL's key; also accepted in --config).
The first stderr line says the steps the run will take (with any SFT warm-up a preset adds) and the adapter.

${ADAPTER_HELP}`;

interface Args {
  model: string;
  env: string;
  envUrl: string | undefined;
  envClass: string | undefined;
  sft: string | null;
  sftSolver: string | null;
  sftEpisodes: number;
  config: string | null;
  output: string | null;
  resume: string | null;
  datasetSize: number | undefined;
  weightDtype: 'auto' | 'f16' | 'f32';
  prompts: string[];
  dataset: string | null;
  /** Held-out prompts (JSONL) for TRL's eval loop, for tasks with no held-out split of their own. */
  evalDataset: string | null;
  miniwob: string | undefined;
  axtree: AxtreeForm | undefined;
  /** GRPOConfig flags as given (key → text), coerced by config.ts. */
  configFlags: Record<string, string>;
}

const OWN_OPTIONS: OptionTable = {
  'env-url': { type: 'string' },
  'env-class': { type: 'string' },
  model: { type: 'string' },
  env: { type: 'string' },
  sft: { type: 'string' },
  'sft-solver': { type: 'string' },
  'sft-episodes': { type: 'string' },
  config: { type: 'string' },
  output: { type: 'string' },
  resume: { type: 'string' },
  'dataset-size': { type: 'string' },
  'weight-dtype': { type: 'string' },
  prompt: { type: 'string', multiple: true },
  dataset: { type: 'string' },
  eval_dataset: { type: 'string' },
  miniwob: { type: 'string' },
  axtree: { type: 'string' },
};

/** Every GRPOConfig key is a `--KEY value` flag (TRL's names); bool keys may stand alone. */
const CONFIG_OPTIONS: OptionTable = Object.fromEntries(Object.keys(CONFIG_KEYS).map((k) => [k, { type: 'string' }]));

function parseArgs(argv: string[]): Args & { help: boolean } {
  const p = parseCli(argv, { ...OWN_OPTIONS, ...CONFIG_OPTIONS }, { bareTrue: BOOL_KEYS });
  // With --help, --model and --env are optional: given, the help shows the values they would get.
  const model = str(p, 'model') ?? '';
  const env = str(p, 'env') ?? '';
  if (!p.help && !model) throw new Error('--model DIR is required (see --help)');
  if (!p.help && !env && !str(p, 'env-class')) throw new Error('--env NAME|URL (or --env-class FILE.mjs) is required (see --help)');
  return {
    help: p.help,
    model,
    env,
    envUrl: str(p, 'env-url'),
    envClass: str(p, 'env-class'),
    sft: str(p, 'sft') ?? null,
    sftSolver: str(p, 'sft-solver') ?? null,
    sftEpisodes: intOption(p, 'sft-episodes', 64, 1),
    config: str(p, 'config') ?? null,
    output: str(p, 'output') ?? null,
    resume: str(p, 'resume') ?? null,
    datasetSize: str(p, 'dataset-size') === undefined ? undefined : intOption(p, 'dataset-size', 1, 1),
    weightDtype: choiceOption(p, 'weight-dtype', ['auto', 'f16', 'f32'] as const, 'auto'),
    prompts: (p.values.prompt as string[] | undefined) ?? [],
    dataset: str(p, 'dataset') ?? null,
    evalDataset: str(p, 'eval_dataset') ?? null,
    miniwob: str(p, 'miniwob'),
    axtree: str(p, 'axtree') === undefined ? undefined : parseAxtreeForm(str(p, 'axtree'), '--axtree'),
    configFlags: Object.fromEntries(Object.keys(CONFIG_KEYS).flatMap((k) => (str(p, k) === undefined ? [] : [[k, str(p, k)!]]))),
  };
}

/** A --config file's keys; an unreadable file or bad JSON is named. */
async function readConfigFile(file: string): Promise<Record<string, unknown>> {
  const text = await readFile(file, 'utf8').catch(() => {
    throw new Error(`--config: cannot read ${file}`);
  });
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`--config ${file}: not valid JSON (${(err as Error).message})`);
  }
}

/**
 * The launcher's request from the arguments: the task's preset ← run.json ← flags ← --output, and
 * transcripts given (--sft, --sft-solver) make a warm-up of DEFAULT_SFT_STEPS when sft_steps is 0.
 */
/** `--env-class FILE.mjs`: the launcher resolves the module's task in place of a built-in one. */
function envClassOf(file: string, args: Args): EnvClassTask {
  return () => envClassFromCli({ file, dataset: args.dataset, envUrl: args.envUrl?.replace(/\/+$/, '') });
}

async function runRequest(args: Args, more: Pick<RunRequest, 'prompts' | 'miniwobNames' | 'resume'> = {}): Promise<RunRequest> {
  const config: ConfigLayer[] = [];
  if (args.config) config.push({ source: '--config', values: await readConfigFile(args.config) });
  config.push({ source: 'flag', text: args.configFlags });
  if (args.output) config.push({ source: '--output', values: { output_dir: args.output } });
  const warmUpGiven = args.sft ? '--sft given' : args.sftSolver ? '--sft-solver given' : undefined;
  return {
    env: args.env,
    ...(args.envUrl !== undefined ? { envUrl: args.envUrl.replace(/\/+$/, '') } : {}),
    ...(args.envClass ? { envClass: envClassOf(args.envClass, args) } : {}),
    preset: true,
    config,
    ...(warmUpGiven ? { warmUpGiven } : {}),
    ...more,
  };
}

/** `train --help`, with the values that apply to the --model / --env given (if both are). */
async function helpText(args: Args): Promise<string> {
  if (!args.model || !args.env) {
    return `${HELP}\n\nGRPOConfig flags (TRL names), with TRL's defaults. Give --model and --env with --help to see the
values that would apply instead (TRL's defaults, then the task's preset for the model's size, then
--config and the flags):
${configHelp()}`;
  }
  const size = await locateRunModel(args.model).catch((err: Error): Pick<RunModel, 'config' | 'tier' | 'params' | 'unknown'> => ({ config: null, tier: 'full-size', params: null, unknown: err.message }));
  const request = await runRequest(args, { miniwobNames: (await miniwobOption(args.miniwob))?.names });
  let resolved;
  try {
    resolved = await resolveRun(request, size.config);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    return `${HELP}\n\n--env ${args.env}: ${(err as Error).message}; GRPOConfig flags with TRL's defaults:\n${configHelp()}`;
  }
  const preset = resolved.task.preset;
  const model = size.unknown
    ? `${args.model} (its config.json could not be read: ${size.unknown}; taken as full-size)`
    : `${args.model} (${size.params!.toLocaleString('en-US')} parameters: ${size.tier} tier)`;
  const layers = [
    "TRL's defaults",
    preset ? `the ${preset} preset for ${size.tier} models (marked preset)` : `the ${resolved.task.name} task's settings (marked task)`,
    ...(args.config ? [`--config ${args.config}`] : []),
    'the flags given',
  ];
  return `${HELP}\n\nGRPOConfig flags (TRL names), with the values that apply to --model ${model} --env ${args.env}:
${layers.join(', then ')}.
${configHelp(resolved)}`;
}

/** The held-out split TRL's eval loop plays: the task bound to the split's seeds, its rows (--eval_dataset's when given, never a training row). */
async function heldOutSplit(run: ResolvedRun, trained: RunTask, binding: RunBinding, o: { miniwobNames?: readonly string[]; evalDataset: string | null }): Promise<Evaluation> {
  const resolved = run.task;
  const { splitRows, checkDisjoint } = await import('../rl/eval/eval-rows.ts');
  const { seedSpace } = await import('../rl/eval/seed-space.ts');
  const evalDataset = o.evalDataset ? parsePromptDataset(await readFile(o.evalDataset, 'utf8'), o.evalDataset) : undefined;
  if (evalDataset) checkDisjoint(trained.dataset, evalDataset);
  const rows = splitRows(resolved, 'eval', { ...(o.miniwobNames ? { miniwobNames: o.miniwobNames } : {}), ...(evalDataset ? { evalDataset } : {}) });
  const task = bindRun(run, { ...binding, split: 'eval' });
  return { task, rows, seedOf: seedSpace(resolved.env, 'eval') };
}

function printEvent(e: RunEvent, logCompletions: boolean): void {
  if (e.phase === 'status') return;
  if (e.phase === 'sft') {
    // Same key style as the GRPO lines (snake_case, like TRL's logs).
    const { totalSteps, ...rest } = e;
    console.log(JSON.stringify({ ...rest, total_steps: totalSteps }));
    return;
  }
  // TRL's eval loop: each evaluation its own line of eval_* metrics, beside the step's.
  for (const v of e.evals ?? []) console.log(JSON.stringify({ phase: 'eval', step: v.step, ...jsonSafe(v.metrics) }));
  const line: Record<string, unknown> = { phase: 'grpo', step: e.step, total_steps: e.totalSteps, ...jsonSafe(e.metrics) };
  // logging_steps (TRL): every N steps the line also carries the metrics averaged over those N steps.
  if (e.logs) line.logs = jsonSafe(e.logs);
  if (logCompletions) line.completions = e.completions;
  if (e.unscorable.length > 0) line.unscorable = e.unscorable;
  if (e.checkpoint) line.checkpoint = e.checkpoint;
  console.log(JSON.stringify(line));
}

/**
 * base_model_name_or_path of the adapter: a local folder as an absolute path (so the adapter loads from
 * any working directory, as PEFT's from_pretrained resolves it), a Hub id or URL as given.
 */
function baseModelName(model: ModelLocation): string {
  return 'folder' in model ? resolve(model.folder) : modelLocationName(model);
}

async function exportAdapter(engine: Engine, model: ModelLocation, dir: string, chat: TrainedChat): Promise<string> {
  const target = join(dir, 'adapter');
  await mkdir(target, { recursive: true });
  // The same files (and safetensors metadata, the run's chat among it) as the app's export: src/rl/run.ts adapterFiles.
  for (const f of await adapterFiles(engine, baseModelName(model), trainedChatMetadata(chat))) await writeFile(join(target, f.name), f.bytes);
  return target;
}

/**
 * The run's steps and where a warm-up comes from, for the first line: a preset's SFT steps are steps the
 * user did not ask for (`--max_steps 1` runs 11 steps under the browsergym preset), so they are said first.
 */
export function stepsPlanned(config: Pick<GRPOConfig, 'sft_steps'>, from: ConfigSources, task: Pick<ResolvedTask, 'name' | 'preset'>, grpoSteps: number, resume?: Pick<RunState, 'runStep'>): string {
  const steps = (n: number, what: string) => `${n.toLocaleString('en-US')} ${what} step${n === 1 ? '' : 's'}`;
  const sft = config.sft_steps;
  const source = from.sft_steps === 'preset' ? `preset ${task.preset}` : from.sft_steps === 'task' ? `task ${task.name}` : from.sft_steps === 'flag' ? '--sft_steps' : from.sft_steps === RESUMED_SFT_SOURCE ? "the checkpoint's" : from.sft_steps;
  const plan = sft > 0 ? `${steps(sft, 'SFT warm-up')}${source ? ` (${source})` : ''} + ${steps(grpoSteps, 'GRPO')}` : steps(grpoSteps, 'GRPO');
  return resume ? `${plan}, resuming after step ${resume.runStep}` : plan;
}

/** Exit codes of a run stopped by a signal (128 + the signal's number), as shells report them. */
const SIGNAL_EXIT: Record<'SIGINT' | 'SIGTERM', number> = { SIGINT: 130, SIGTERM: 143 };

/** Remembers where the last checkpoint went, to say so when the run is stopped. */
function recordingStore(store: RunStateStore): RunStateStore & { last: string | null } {
  const recording = {
    last: null as string | null,
    async save(ckpt: RunState) {
      recording.last = await store.save(ckpt);
      return recording.last;
    },
  };
  return recording;
}

/**
 * The scripted solver that makes the warm-up's transcripts: --sft-solver's, else, as the app does,
 * the task's own (`solver`) when a warm-up (e.g. the browsergym preset's sft_steps) has no --sft transcripts.
 */
export function warmUpSolver(solver: string | null, args: Pick<Args, 'sft' | 'sftSolver' | 'resume'>, sftSteps: number): string | null {
  return args.sftSolver ?? (!args.sft && !args.resume && sftSteps > 0 ? solver : null);
}

export async function run(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (args.help) {
    console.log(await helpText(args));
    return 0;
  }
  const prompts = async (): Promise<DatasetRow[]> => [
    ...args.prompts.map((content): DatasetRow => ({ prompt: [{ role: 'user', content }] })),
    ...(args.dataset ? parsePromptDataset(await readFile(args.dataset, 'utf8'), args.dataset) : []),
  ];
  if (args.miniwob !== undefined && /^(https?|wss?):\/\//.test(args.env)) throw new Error('--miniwob is for the in-process browsergym env; a remote env serves its own tasks');
  const miniwob = await miniwobOption(args.miniwob);
  // --model read once: a mistyped folder fails here, by name, before any env, download or GPU work.
  const model = await locateRunModel(args.model);
  if (args.envUrl !== undefined && /^(https?|wss?):\/\//.test(args.env)) throw new Error('--env-url is for a task named by --env; --env is already a URL');

  let resume: RunState | undefined;
  if (args.resume) {
    const dir = args.resume === 'latest' ? (args.output ? await latestCheckpointFolder(args.output) : null) : args.resume;
    if (!dir) throw new Error(`--resume latest: no checkpoint-<step> folder under ${args.output ?? '(no --output given)'}`);
    resume = await readRunStateFolder(dir);
  }
  const resolved = await resolveRun(await runRequest(args, { prompts, ...(args.envUrl === undefined && miniwob ? { miniwobNames: miniwob.names } : {}), ...(resume ? { resume } : {}) }), model.config);
  const { config, from, task: resolvedTask } = resolved;
  if (!args.envClass && resolvedTask.name !== 'mcp' && resolvedTask.name !== 'action-schema' && (args.prompts.length > 0 || args.dataset)) {
    throw new Error(`--prompt/--dataset are for envs that none of the tasks knows; ${args.env} is the '${resolvedTask.name}' task, which has its own prompts`);
  }
  if (resolvedTask.note) process.stderr.write(`webgrpo train: ${resolvedTask.note}\n`);
  if (args.sftSolver && args.sftSolver !== resolvedTask.solver) {
    throw new Error(`--sft-solver ${args.sftSolver}: the '${resolvedTask.name}' task's scripted solver is ${resolvedTask.solver ?? 'none'}`);
  }
  const sftSolver = warmUpSolver(resolvedTask.solver, args, config.sft_steps);

  let transcripts: Transcript[] = [];
  if (args.sft) transcripts = parseTranscripts(await readFile(args.sft, 'utf8'), args.sft);
  const grpoSteps = stepPlan(config, resolvedTask.task.dataset(args.datasetSize).length).totalSteps;
  await announceAdapter('train', stepsPlanned(config, from, resolvedTask, grpoSteps, resume));

  // Heavy modules load only now, so `train --help` and argument errors stay instant.
  const { prepareRun } = await import('../rl/launch-model.ts');
  const server = resolvedTask.url ? null : await (await import('../../env-server/server.ts')).createEnvServer({ port: 0, envs: await inProcessEnvs({ miniwob, axtree: args.axtree }) });
  const progress = new Progress();
  const watch = new TrainProgress(progress);
  const control = new RunControl();
  let stoppedBy: 'SIGINT' | 'SIGTERM' | null = null;
  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => {
    if (stoppedBy) {
      // A second Ctrl-C: the user does not want to wait for the save.
      progress.line(`webgrpo train: ${signal} again, exiting without saving`);
      process.exit(SIGNAL_EXIT[signal]);
    }
    stoppedBy = signal;
    progress.line(`webgrpo train: ${signal}: stopping the current step and saving${args.output ? ` under ${args.output}` : ' (nothing to save: no --output)'}…`);
    control.stop();
  };
  const onInt = () => onSignal('SIGINT');
  const onTerm = () => onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  let engine: Engine | null = null;
  try {
    let download: ProgressTask | null = null;
    let upload: ProgressTask | null = null;
    const prepared = await prepareRun(model, resolved, {
      weightDtype: args.weightDtype,
      softwareMemoryBytes: totalmem(),
      ...(server ? { builtinUrls: builtinEnvUrls(server.url) } : {}),
      ...(args.datasetSize !== undefined ? { datasetSize: args.datasetSize } : {}),
      onDownload: (pr) => {
        if (pr.phase !== 'download') return;
        download ??= progress.task(`downloading ${args.model}`, pr.totalBytes, formatBytes);
        download.update(pr.loadedBytes, undefined, pr.totalBytes);
      },
      onUpload: (pr) => {
        if (!upload) {
          (download as ProgressTask | null)?.end();
          upload = progress.task('loading the model onto the GPU', pr.totalBytes, formatBytes);
        }
        upload.update(pr.loadedBytes);
      },
    });
    engine = prepared.engine;
    const { checkpoint: ckpt, tokenizer, vision, task } = prepared;
    (upload as ProgressTask | null)?.end(`${formatBytes(ckpt.totalTensorBytes)}, ${prepared.engine.weightDtype} weights`);
    console.log(JSON.stringify({ phase: 'load', ...prepared.engine.report() }));
    if (control.request === 'stop') {
      progress.line('webgrpo train: stopped before training started; nothing to save');
      return SIGNAL_EXIT[stoppedBy!];
    }
    if (sftSolver) {
      progress.line(`SFT warm-up transcripts: the ${sftSolver} solver plays ${args.sftEpisodes} episodes${args.sftSolver ? '' : ` (sft_steps ${config.sft_steps}, no --sft given)`}…`);
      transcripts = [...transcripts, ...(await solverTranscripts(task, args.sftEpisodes, config.seed))];
      if (args.output) {
        await mkdir(args.output, { recursive: true });
        await writeFile(join(args.output, 'transcripts.jsonl'), transcriptsToJsonl(transcripts));
      }
    }
    const chat = trainedChat(config, task);
    const fullModel = args.output && config.train_mode === 'full' ? fullModelFolder(engine, ckpt, args.output, chat) : null;
    const folder = args.output ? folderRunStates(args.output) : undefined;
    const store = folder ? recordingStore(fullModel ? fullModel.saving(folder) : folder) : undefined;
    const evaluation = config.eval_strategy === 'steps' || config.eval_on_start ? await heldOutSplit(resolved, task, { tokenizer, model: ckpt.config, ...(vision ? { vision } : {}), ...(server ? { builtinUrls: builtinEnvUrls(server.url) } : {}) }, { miniwobNames: miniwob?.names, evalDataset: args.evalDataset }) : undefined;
    const run = new Run({ engine, tokenizer, ...(vision ? { vision } : {}), config, task, sftTranscripts: async () => transcripts, store, resume, control, onProgress: (p) => watch.onProgress(p), ...(evaluation ? { evaluation } : {}) });
    watch.start();
    const sftDone = resume?.sftStepsDone ?? 0;
    if (sftDone < config.sft_steps) watch.sftStarting(config.sft_steps, sftDone);
    else watch.grpoStarting(run.totalSteps, (resume?.runStep ?? 0) + 1);
    // A run where every tool call failed trained on env errors, and one where no tool result fitted never
    // read one: neither may look like success.
    const tally = new ToolFailureTally();
    for await (const e of run.events()) {
      printEvent(e, config.log_completions);
      watch.event(e);
      fullModel?.observe(e);
      if (e.phase !== 'grpo') continue;
      for (const warning of e.warnings ?? []) progress.line(`webgrpo train: warning: step ${e.step}: ${warning}`);
      tally.add(e.metrics, e.invalidTools);
    }
    if (stoppedBy) {
      const saved: string[] = [];
      if (store?.last) saved.push(`checkpoint ${store.last} (continue with --resume ${store.last})`);
      if (args.output && config.train_mode === 'lora') saved.push(`adapter ${await exportAdapter(engine, prepared.location, args.output, chat)}`);
      if (fullModel) saved.push(`model ${await fullModel.finish()}`);
      if (!store?.last && args.output) saved.push('no checkpoint (stopped before the first one)');
      progress.line(`webgrpo train: stopped by ${stoppedBy}; ${saved.length > 0 ? `saved ${saved.join(' and ')}` : 'nothing saved (no --output)'}`);
      return SIGNAL_EXIT[stoppedBy];
    }
    if (args.output && config.train_mode === 'lora') {
      const adapter = await exportAdapter(engine, prepared.location, args.output, chat);
      console.log(JSON.stringify({ phase: 'done', adapter }));
    }
    if (fullModel) console.log(JSON.stringify({ phase: 'done', model: await fullModel.finish() }));
    const verdict = runVerdict(tally, resolvedTask.url ?? resolvedTask.name, config.max_completion_length);
    if (verdict) progress.line(verdict.line);
    return verdict?.exitCode ?? 0;
  } finally {
    watch.stop();
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    engine?.destroy();
    await server?.close();
  }
}
