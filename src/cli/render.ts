// `webgrpo render --model DIR --env NAME|URL [--prompt TEXT] [--env-url URL] [--text]`: the exact
// first prompt the model sees for a task — the env's reset observation folded in, its tools in the
// system block, rendered with the rollout's chat template — as `{"text", "ids"}`, or with --text the
// prompt text alone, raw, for reading. Every task `train` accepts works; without --env-url a
// built-in env-server runs in-process on 127.0.0.1 for the reset.

import { REPO_ID } from '../model/checkpoint.ts';
import type { CheckpointFiles } from '../model/files.ts';
import { loadCheckpointTokenizer } from '../model/tokenizer.ts';
import { envTools } from '../rl/rollout/env.ts';
import { openEnvEpisodes } from '../rl/tasks/envs/episode-session.ts';
import { promptWithObservation, renderPrompt } from '../rl/rollout/rollout.ts';
import { rolloutChatTemplate } from '../rl/rollout/templates/select.ts';
import { parseCli, str } from './args.ts';
import { modelArgs } from './model-args.ts';
import { builtinEnvUrls, resolveTask, TASK_NAMES } from '../rl/tasks/resolve-task.ts';
import { inProcessEnvs } from './in-process-envs.ts';
import { envClassFromCli } from '../rl/tasks/env-class-cli.ts';

const HELP = `usage: webgrpo render --model DIR --env NAME|URL [options]

  --model DIR|REPO  checkpoint folder (or Hub repo id) with the tokenizer files and chat template
                    (default with --adapter: the adapter's base_model_name_or_path)
  --env NAME|URL    task, as \`train --env\`: ${TASK_NAMES.join(', ')}, or an OpenEnv base URL
  --prompt TEXT     user message instead of the task's first prompt
  --env-class FILE.mjs  an environment class instead of --env (its first row: --dataset FILE.jsonl's,
                    the module's own, or an empty prompt that reset() fills)
  --env-url URL     OpenEnv base URL of the env the task plays (e.g. http://127.0.0.1:8765/envs/catch);
                    default: a built-in env-server started in-process
  --adapter DIR     a PEFT LoRA adapter: its base model's tokenizer renders the prompt
  --checkpoint DIR  a trainer checkpoint: its run's chat_template_kwargs apply
  --text            print the prompt text alone, raw (real newlines), instead of JSON

Prints one JSON object: {"text": <prompt text>, "ids": <token ids>}.`;

/** The tokenizer's files only: a local folder, or a Hub repo read file by file (no weights download). */
async function tokenizerFiles(model: string): Promise<CheckpointFiles> {
  const { isDirectory, nodeFolderFiles } = await import('../model/node-files.ts');
  if (await isDirectory(model)) return nodeFolderFiles(model);
  if (REPO_ID.test(model) || /^https?:\/\//.test(model)) {
    const { remoteCheckpointFiles } = await import('../model/hub.ts');
    return remoteCheckpointFiles(/^https?:/.test(model) ? { baseUrl: model } : { repo: model }, { download: false });
  }
  throw new Error(`cannot read tokenizer.json in ${model}: not a folder, an http(s) URL or a Hub repo id`);
}

export async function run(argv: string[]): Promise<number> {
  const p = parseCli(argv, {
    model: { type: 'string' }, env: { type: 'string' }, prompt: { type: 'string' }, 'env-url': { type: 'string' },
    adapter: { type: 'string' }, checkpoint: { type: 'string' }, text: { type: 'boolean' }, 'env-class': { type: 'string' }, dataset: { type: 'string' },
  });
  if (p.help) {
    console.log(HELP);
    return 0;
  }
  if (!str(p, 'model') && !str(p, 'adapter')) throw new Error(`--model DIR is required\n\n${HELP}`);
  const envArg = str(p, 'env');
  const envClass = str(p, 'env-class');
  if (!envArg && !envClass) throw new Error(`--env NAME|URL is required (${TASK_NAMES.join(', ')}, or a URL), or --env-class FILE.mjs`);
  const args = await modelArgs(p, HELP);
  const { name, task, url: taskUrl, note } = envClass ? await envClassFromCli({ file: envClass, dataset: str(p, 'dataset'), envUrl: str(p, 'env-url') }) : await resolveTask({ env: envArg! });
  if (note) process.stderr.write(`webgrpo render: ${note}\n`);
  const tokenizer = await loadCheckpointTokenizer(await tokenizerFiles(args.model), args.model);
  // An environment that owns its data has no rows: TRL's empty prompt, which reset() fills.
  const row = task.dataset(1)[0] ?? { prompt: [{ role: 'user' as const, content: '' }] };
  const prompt = str(p, 'prompt');
  if (prompt !== undefined) row.prompt = [{ role: 'user', content: prompt }];
  const config = args.checkpoint ? args.checkpoint.ckpt.config : task.config;

  const envUrl = str(p, 'env-url') ?? taskUrl;
  let server: { url: string; close(): Promise<void> } | null = null;
  if (envUrl === null) {
    const { createEnvServer } = await import('../../env-server/server.ts');
    server = await createEnvServer({ port: 0, envs: await inProcessEnvs() });
  }
  // With --env-url the task's own env (catch-compact plays catch) gets that URL.
  const urls = envUrl === null ? builtinEnvUrls(server!.url) : { echo: envUrl, catch: envUrl, wordle: envUrl, [name]: envUrl };
  const env = task.envFactory(urls, openEnvEpisodes())();
  try {
    const observation = await env.reset(row);
    const tools = envTools(env);
    const { text, ids } = renderPrompt({
      tokenizer,
      template: task.template ?? rolloutChatTemplate(tokenizer, { hasTools: tools.length > 0 }),
      prompt: promptWithObservation(row, observation),
      tools,
      chatTemplateKwargs: config.chat_template_kwargs as Record<string, unknown> | undefined,
    });
    if (p.values.text === true) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
    else console.log(JSON.stringify({ text, ids }));
    return 0;
  } finally {
    await env.close?.();
    await server?.close();
  }
}
