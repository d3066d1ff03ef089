// `webgrpo eval --model DIR [--adapter DIR | --checkpoint DIR] --env NAME|URL [--episodes N] [--split eval|train]
// [--temperature T] [--trajectories FILE.jsonl] [--compare DIR]`: plays a task's held-out split (or its
// training split) with a model and prints, as the last stdout line, a JSON summary — episodes, success
// rate with its Wilson 95% interval, mean reward, tool calls and invalid calls per episode, failure
// reasons, per task, wordle's tutorial columns. --compare plays a second model on the same episodes and
// adds the paired difference. Greedy by default, as OpenEnv's Wordle tutorial evaluates.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GRPOConfig } from '../rl/config.ts';
import type { DatasetRow } from '../rl/rollout/env.ts';
import type { Split } from '../rl/eval/seed-space.ts';
import type { EvalSummary, PairedDifference } from '../rl/eval/summary.ts';
import type { Trajectory } from '../rl/eval/trajectory.ts';
import { choiceOption, intOption, numOption, parseCli, str } from './args.ts';
import { MODEL_HELP, MODEL_OPTIONS, modelArgs, type ModelArgs } from './model-args.ts';
import { ADAPTER_HELP, announceAdapter } from './adapter-line.ts';

const HELP = `usage: webgrpo eval --model DIR --env NAME|URL [options]

${MODEL_HELP}
  --env NAME|URL          task: echo, catch, wordle, multi, browsergym[:TASK,…|:mix], catch-compact, or an env URL
  --env-class FILE.mjs    evaluate your own environment class instead of --env (README "Environment
                          classes"); its rows: --eval_dataset FILE.jsonl's (any columns), else its own
  --env-url URL           the env a task named by --env (or the class) plays, instead of the in-process one
  --miniwob DIR|URL       browsergym over a real MiniWoB++ folder: --split eval plays its held-out tasks
                          (every 5th by name), then the tasks --env names (mix: all the others) at held-out seeds
  --split eval|train      the held-out split (default) or the training split's games
  --episodes N            episodes to play (default 128); episode i plays the split's row i and seed i
  --temperature T         sampling temperature (default 0: greedy)
  --eval_dataset FILE     held-out prompts (JSONL, one {"prompt": text or messages} per line) for tasks
                          with no split of their own (an MCP env, a --dataset run)
  --config FILE           run.json whose GRPOConfig keys (budgets, template kwargs) apply over the task preset
  --trajectories FILE     write one JSON object per episode: task, seed, turns, reward, done, failure_reason
  --compare DIR           also play a second model on the same episodes (a model folder, or a trainer
                          checkpoint / adapter folder put on --model) and report the paired difference

The last stdout line is the JSON summary.

${ADAPTER_HELP}`;

const OPTIONS = {
  ...MODEL_OPTIONS,
  env: { type: 'string' },
  'env-class': { type: 'string' },
  'env-url': { type: 'string' },
  miniwob: { type: 'string' },
  split: { type: 'string' },
  episodes: { type: 'string' },
  temperature: { type: 'string' },
  eval_dataset: { type: 'string' },
  config: { type: 'string' },
  trajectories: { type: 'string' },
  compare: { type: 'string' },
} as const;

/** What one model played and what it adds up to. */
interface Played {
  trajectories: Trajectory[];
  summary: EvalSummary;
}

/** A model as a command names it: the base folder plus what is put on it. */
interface ModelSpec {
  args: ModelArgs;
  /** What the summary calls it. */
  label: string;
}

/** What an evaluation plays: the task, its split's rows and seeds, over the in-process env-server or a URL. */
interface EvalRequest {
  env: string;
  envUrl?: string;
  /** `--env-class FILE.mjs`: the class's task in place of --env's (its rows from --eval_dataset, if given). */
  envClass?: { file: string; dataset?: string };
  miniwob?: string;
  split: Split;
  episodes: number;
  temperature: number;
  evalDataset?: DatasetRow[];
  configFile?: string;
}

/** The one loader: model + task + config (through the run launcher, src/rl/launch.ts), then the split played. */
async function playModel(spec: ModelSpec, req: EvalRequest): Promise<Played & { task: string }> {
  const { openCheckpoint } = await import('../model/checkpoint.ts');
  const { loadCheckpointTokenizer } = await import('../model/tokenizer.ts');
  const { loadTrainedEngine } = await import('./model-args.ts');
  const { builtinEnvUrls } = await import('../rl/tasks/resolve-task.ts');
  const { resolveRun, bindRun } = await import('../rl/launch.ts');
  const { envClassFromCli } = await import('../rl/tasks/env-class-cli.ts');
  const { plannedWorkload } = await import('../rl/run-limits.ts');
  const { splitRows } = await import('../rl/eval/eval-rows.ts');
  const { seedSpace } = await import('../rl/eval/seed-space.ts');
  const { playSplit } = await import('../rl/eval/play.ts');
  const { summarize } = await import('../rl/eval/summary.ts');
  const { inProcessEnvs, miniwobOption } = await import('./in-process-envs.ts');

  const ckpt = await openCheckpoint(spec.args.model);
  const miniwob = await miniwobOption(req.miniwob);
  const envUrl = req.envUrl?.replace(/\/+$/, '');
  const envClass = req.envClass;
  // The launcher resolves the task (an env class's through its envClass seam) and the config layers.
  const run = await resolveRun({
    env: req.env,
    ...(envUrl !== undefined ? { envUrl } : {}),
    ...(envClass ? { envClass: () => envClassFromCli({ file: envClass.file, dataset: envClass.dataset, envUrl }) } : {}),
    prompts: async () => req.evalDataset ?? [],
    ...(envUrl === undefined && miniwob ? { miniwobNames: miniwob.names } : {}),
    preset: true,
    config: req.configFile ? [{ source: '--config', values: JSON.parse(await readFile(req.configFile, 'utf8')) as Record<string, unknown> }] : [],
  }, ckpt.config);
  const resolved = run.task;
  const config: GRPOConfig = run.config;
  const rows = splitRows(resolved, req.split, { miniwobNames: miniwob?.names, evalDataset: req.evalDataset });
  const server = resolved.url ? null : await (await import('../../env-server/server.ts')).createEnvServer({ port: 0, envs: await inProcessEnvs({ miniwob }) });
  // Decoded at once: the sequence count training plans for (also what the env-server admits), never more.
  const plan = plannedWorkload(config);
  const { engine } = await loadTrainedEngine(ckpt, spec.args, { plan });
  try {
    const tokenizer = await loadCheckpointTokenizer(ckpt, spec.args.model);
    const task = bindRun(run, { ...(server ? { builtinUrls: builtinEnvUrls(server.url) } : {}), tokenizer, model: ckpt.config, split: req.split });
    const played = await playSplit({ engine, tokenizer, task, rows, episodes: req.episodes, seedOf: seedSpace(resolved.env, req.split), config, temperature: req.temperature, seed: config.seed, maxBatchSize: plan.numSequences });
    return { task: resolved.name, trajectories: played.trajectories, summary: summarize(played.trajectories, resolved.name) };
  } finally {
    engine.destroy();
    await server?.close();
  }
}

/** --compare DIR: a trainer checkpoint or an adapter goes on --model; anything else is a model folder of its own. */
async function compareSpec(dir: string, base: ModelArgs): Promise<ModelSpec> {
  const has = async (name: string) => readFile(join(dir, name)).then(() => true, () => false);
  const { readTrainerCheckpoint } = await import('./model-args.ts');
  if (await has('adapter_config.json')) return { args: { ...base, adapter: dir, checkpoint: null }, label: dir };
  if (await has('trainer_state.json')) return { args: { ...base, adapter: null, checkpoint: await readTrainerCheckpoint(dir), weights: 'f32' }, label: dir };
  return { args: { model: dir, adapter: null, checkpoint: null, weights: base.weights }, label: dir };
}

function labelOf(args: ModelArgs): string {
  return args.adapter ? `${args.model} + adapter ${args.adapter}` : args.checkpoint ? `${args.model} + checkpoint ${args.checkpoint.dir}` : args.model;
}

export async function run(argv: string[]): Promise<number> {
  const p = parseCli(argv, OPTIONS);
  if (p.help) {
    console.log(HELP);
    return 0;
  }
  const envClassFile = str(p, 'env-class');
  const env = str(p, 'env') ?? envClassFile;
  if (!env) throw new Error(`--env NAME|URL (or --env-class FILE.mjs) is required\n\n${HELP}`);
  const args = await modelArgs(p, HELP);
  const split = choiceOption(p, 'split', ['eval', 'train'] as const, 'eval');
  const episodes = intOption(p, 'episodes', 128, 1);
  const temperature = numOption(p, 'temperature', 0);
  if (!(temperature >= 0)) throw new Error(`--temperature must be ≥ 0, got ${temperature}`);
  const evalFile = str(p, 'eval_dataset');
  let evalDataset: DatasetRow[] | undefined;
  if (evalFile && !envClassFile) {
    const { parsePromptDataset } = await import('../rl/tasks/mcp-task.ts');
    evalDataset = parsePromptDataset(await readFile(evalFile, 'utf8'), evalFile);
  }
  const req: EvalRequest = {
    env, split, episodes, temperature,
    ...(envClassFile ? { envClass: { file: envClassFile, ...(evalFile ? { dataset: evalFile } : {}) } } : {}),
    ...(str(p, 'env-url') ? { envUrl: str(p, 'env-url') } : {}),
    ...(str(p, 'miniwob') ? { miniwob: str(p, 'miniwob') } : {}),
    ...(evalDataset ? { evalDataset } : {}),
    ...(str(p, 'config') ? { configFile: str(p, 'config') } : {}),
  };
  const compareDir = str(p, 'compare');
  const other = compareDir ? await compareSpec(compareDir, args) : null;
  await announceAdapter('eval', `${episodes} ${split === 'eval' ? 'held-out' : 'training-split'} episodes of ${env}${other ? `, two models` : ''}`);
  const main = await playModel({ args, label: labelOf(args) }, req);
  const versus = other ? await playModel(other, req) : null;
  const trajOut = str(p, 'trajectories');
  if (trajOut) {
    const lines = [
      ...main.trajectories.map((t) => JSON.stringify({ model: labelOf(args), ...t })),
      ...(versus ? versus.trajectories.map((t) => JSON.stringify({ model: other!.label, ...t })) : []),
    ];
    await writeFile(trajOut, lines.join('\n') + '\n');
  }
  const summary: Record<string, unknown> = { task: main.task, split, temperature, model: labelOf(args), ...main.summary };
  if (versus && other) {
    const { comparison } = await import('../rl/eval/summary.ts');
    const paired: { success: PairedDifference; reward: PairedDifference } = comparison(main.trajectories, versus.trajectories);
    summary.compare = { model: other.label, ...versus.summary, paired_difference: paired };
  }
  console.log(JSON.stringify(summary));
  return 0;
}
