// `webgrpo render --model DIR --env echo|catch|wordle [--prompt TEXT] [--env-url URL]`: prints
// `{"text", "ids"}`, the exact first prompt the model sees for an example task — the env's reset
// observation folded in, its tools in the system block, rendered with the rollout's chat template.
// Without --env-url a built-in env-server runs in-process on 127.0.0.1 for the reset.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadTokenizer } from '../model/tokenizer.ts';
import { envTools } from '../rl/env.ts';
import { EXAMPLES } from '../rl/prompts.ts';
import { promptWithObservation, renderPrompt } from '../rl/rollout.ts';
import { rolloutChatTemplate } from '../rl/templates/select.ts';

const HELP = `usage: webgrpo render --model DIR --env echo|catch|wordle|browsergym [--prompt TEXT] [--env-url URL]

  --model DIR      checkpoint folder with tokenizer.json and tokenizer_config.json
  --env NAME       example task: echo, catch, wordle or browsergym
  --prompt TEXT    user message instead of the example's first prompt
  --env-url URL    OpenEnv base URL of the env (e.g. http://127.0.0.1:8765/envs/catch);
                   default: a built-in env-server started in-process

Prints one JSON object: {"text": <prompt text>, "ids": <token ids>}.`;

const ENVS = ['echo', 'catch', 'wordle', 'browsergym'] as const;
type EnvName = (typeof ENVS)[number];

interface Args {
  model: string;
  env: EnvName;
  prompt: string | null;
  envUrl: string | null;
}

function parseArgs(argv: string[]): Args | 'help' {
  const values: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--help' || flag === '-h') return 'help';
    if (!['--model', '--env', '--prompt', '--env-url'].includes(flag)) throw new Error(`unknown option '${flag}'\n\n${HELP}`);
    const value = argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    values[flag] = value;
  }
  if (!values['--model']) throw new Error(`--model DIR is required\n\n${HELP}`);
  const env = values['--env'];
  if (!ENVS.includes(env as EnvName)) throw new Error(`--env must be one of ${ENVS.join(', ')}, got '${env ?? ''}'`);
  return { model: values['--model'], env: env as EnvName, prompt: values['--prompt'] ?? null, envUrl: values['--env-url'] ?? null };
}

async function readModelFile(dir: string, file: string): Promise<string> {
  try {
    return await readFile(join(dir, file), 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${file} in ${dir}: ${(err as Error).message}`);
  }
}

export async function run(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (args === 'help') {
    console.log(HELP);
    return 0;
  }
  const tokenizer = loadTokenizer(await readModelFile(args.model, 'tokenizer.json'), await readModelFile(args.model, 'tokenizer_config.json'));
  const task = EXAMPLES[args.env];
  const row = task.dataset(1)[0];
  if (args.prompt !== null) row.prompt = [{ role: 'user', content: args.prompt }];

  let server: { url: string; close(): Promise<void> } | null = null;
  if (args.envUrl === null) {
    const { createEnvServer } = await import('../../env-server/server.ts');
    server = await createEnvServer({ port: 0 });
  }
  const url = args.envUrl ?? `${server!.url}/envs/${args.env}`;
  const env = task.envFactory({ [args.env]: url })();
  try {
    const observation = await env.reset(row);
    const tools = envTools(env);
    const { text, ids } = renderPrompt({
      tokenizer,
      template: rolloutChatTemplate(tokenizer, { hasTools: tools.length > 0 }),
      prompt: promptWithObservation(row, observation),
      tools,
      chatTemplateKwargs: task.config.chat_template_kwargs as Record<string, unknown> | undefined,
    });
    console.log(JSON.stringify({ text, ids }));
    return 0;
  } finally {
    await env.close?.();
    await server?.close();
  }
}
