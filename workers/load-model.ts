// Turns the page's ModelChoice into an opened checkpoint and its tokenizer: the built-in demo model
// (shipped with the app, src/model/demo-model.ts), the built-in random tiny model (generated in
// memory, no network), a Hugging Face repo (downloaded with progress into the
// browser's cache, so a second load is instant), or a folder the user picked.

import { openCheckpoint, REPO_ID, type OpenedCheckpoint } from '../src/model/checkpoint.ts';
import { DEMO_MODEL_NAME, demoModelFiles } from '../src/model/demo-model.ts';
import { makeTinyCheckpointFiles, type TinyModelOptions } from '../src/model/tiny-model.ts';
import { loadCheckpointTokenizer, type TextTokenizer } from '../src/model/tokenizer.ts';
import type { LoadProgress } from '../src/model/types.ts';
import type { ModelChoice } from './api.ts';

/** The name the UI and the presets know the built-in model by. */
export const TINY_MODEL_NAME = 'built-in tiny';

/**
 * The built-in model: Qwen3's architecture at toy size with the byte-level tokenizer, a fixed seed so
 * every tab gets the same weights, small enough that a GRPO step takes seconds on SwiftShader.
 */
export const TINY_MODEL_OPTIONS: TinyModelOptions = { seed: 1234, hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, tokenizer: 'byte', dtype: 'f32' };

export interface LoadedModel {
  checkpoint: OpenedCheckpoint;
  tokenizer: TextTokenizer;
  /** Shown in the UI and written as base_model_name_or_path of the exported adapter. */
  name: string;
}

export class ModelLoadError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModelLoadError';
  }
}

async function openChoice(choice: ModelChoice, onProgress: (p: LoadProgress) => void): Promise<{ checkpoint: OpenedCheckpoint; name: string }> {
  switch (choice.kind) {
    case 'tiny':
      return { checkpoint: await openCheckpoint(await makeTinyCheckpointFiles(TINY_MODEL_OPTIONS)), name: TINY_MODEL_NAME };
    case 'demo':
      try {
        return { checkpoint: await openCheckpoint(await demoModelFiles()), name: DEMO_MODEL_NAME };
      } catch (err) {
        throw new ModelLoadError(`The built-in demo model could not be loaded: ${(err as Error).message}`, { cause: err });
      }
    case 'hub': {
      const repo = choice.repo.trim();
      if (!REPO_ID.test(repo)) throw new ModelLoadError(`'${choice.repo}' is not a Hugging Face model id (expected owner/name, e.g. Qwen/Qwen3-0.6B)`);
      try {
        const checkpoint = await openCheckpoint(repo, { revision: choice.revision.trim() || 'main', endpoint: choice.endpoint, onProgress });
        return { checkpoint, name: repo };
      } catch (err) {
        // A checkpoint that downloaded but is not one we run (a MoE, another architecture) says so.
        // hub.ts is loaded by now (openCheckpoint imports it on demand): importing it statically here
        // would pull it into the worker's first chunk and make that on-demand import ineffective.
        const { HubError } = await import('../src/model/hub.ts');
        const what = err instanceof HubError ? `Could not download ${repo}` : `${repo} cannot be loaded`;
        throw new ModelLoadError(`${what}: ${(err as Error).message}`, { cause: err });
      }
    }
    case 'files': {
      if (choice.files.length === 0) throw new ModelLoadError('No files were picked: choose the folder holding config.json, model.safetensors and the tokenizer files');
      const first = choice.files[0] as File & { webkitRelativePath?: string };
      const folder = first.webkitRelativePath?.split('/')[0] || 'local model';
      return { checkpoint: await openCheckpoint(choice.files), name: folder };
    }
  }
}

/** Opens the checkpoint and its tokenizer; every failure names the model and the missing piece. */
export async function loadModelChoice(choice: ModelChoice, onProgress: (p: LoadProgress) => void): Promise<LoadedModel> {
  const { checkpoint, name } = await openChoice(choice, onProgress);
  let tokenizer: TextTokenizer;
  try {
    tokenizer = await loadCheckpointTokenizer(checkpoint, `${name} (${checkpoint.location})`);
  } catch (err) {
    throw new ModelLoadError((err as Error).message, { cause: err });
  }
  if (Object.keys(tokenizer.chatTemplates).length === 0) {
    throw new ModelLoadError(`${name}: no chat template (looked in chat_template.jinja, chat_template.json and tokenizer_config.json); the rollouts render conversations with it`);
  }
  return { checkpoint, tokenizer, name };
}
