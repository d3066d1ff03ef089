// The built-in demo model: the built-in tiny Qwen3 after a short SFT on the scripted solvers' catch and
// echo transcripts (bench/demo/build-model.ts, `npm run build:demo-model`), shipped in models/demo/ in
// Hugging Face layout. It speaks both tasks' tool-call format but plays them only partly right, so a
// GRPO run visibly improves it. Loaded from the app's own origin (Vite bundles the files as assets)
// or, in Node, from the repository folder: never from the network.

import type { TinyModelOptions } from './tiny-model.ts';

/** The name the UI, presets and run records know the demo model by. */
export const DEMO_MODEL_NAME = 'built-in demo';

/** The untrained starting point: the same architecture and seed as the app's built-in tiny model. */
export const DEMO_MODEL_OPTIONS: TinyModelOptions = { seed: 1234, hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, tokenizer: 'byte', dtype: 'f32' };

/** How build-model.ts trains it (recorded again, with measured numbers, in models/demo/recipe.json). */
export const DEMO_RECIPE = {
  seed: 7,
  /** Compact-catch games and the share of their moves that are random instead of scripted. */
  catchEpisodes: 64,
  catchRandomActions: 0.5,
  /** Echo episodes and the share that echo only a random prefix of the quoted text. */
  echoEpisodes: 40,
  echoPartial: 0.6,
  /** Steps at sftLearningRate, then sftAnnealSteps at the lower rate (a clean format, not a better policy). */
  sftSteps: 160,
  sftBatchSize: 4,
  sftLearningRate: 1e-2,
  sftAnnealSteps: 60,
  sftAnnealLearningRate: 2e-3,
  /** Env reset seeds of the measurement after the build (apart from training's). */
  evalSeed: 2_000_000,
  /** Rollout settings of the measurement: those of the demo presets (src/app/setup-presets.ts). */
  rollout: {
    catch: { max_completion_length: 400, max_tool_calling_iterations: 10, temperature: 1, chat_template_kwargs: null },
    echo: { max_completion_length: 128, max_tool_calling_iterations: 1, temperature: 1, chat_template_kwargs: { enable_thinking: false } },
  },
} as const;

/** The files of models/demo/, in the order they are written. */
export const DEMO_MODEL_FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'recipe.json'] as const;

/** Static URLs (one literal each, so Vite bundles every file as an asset of the page and the worker). */
function demoFileUrls(): Record<(typeof DEMO_MODEL_FILES)[number], URL> {
  return {
    'config.json': new URL('../../models/demo/config.json', import.meta.url),
    'generation_config.json': new URL('../../models/demo/generation_config.json', import.meta.url),
    'model.safetensors': new URL('../../models/demo/model.safetensors', import.meta.url),
    'tokenizer.json': new URL('../../models/demo/tokenizer.json', import.meta.url),
    'tokenizer_config.json': new URL('../../models/demo/tokenizer_config.json', import.meta.url),
    'recipe.json': new URL('../../models/demo/recipe.json', import.meta.url),
  };
}

async function readUrl(url: URL): Promise<Uint8Array> {
  if (url.protocol === 'file:') {
    const { readFile } = await import('node:fs/promises');
    const { fileURLToPath } = await import('node:url');
    try {
      return new Uint8Array(await readFile(fileURLToPath(url)));
    } catch {
      throw new Error(`the demo model file ${fileURLToPath(url)} is missing: run \`npm run build:demo-model\``);
    }
  }
  const res = await fetch(url);
  if (!res.ok) throw new Error(`the demo model file ${url.pathname} could not be loaded from this server (HTTP ${res.status})`);
  return new Uint8Array(await res.arrayBuffer());
}

/** Every file of the demo checkpoint, by name. */
export async function demoModelFiles(): Promise<Map<string, Uint8Array>> {
  const urls = demoFileUrls();
  const entries = await Promise.all(DEMO_MODEL_FILES.map(async (name) => [name, await readUrl(urls[name])] as const));
  return new Map(entries);
}
