// `--model`, `--adapter`, `--checkpoint`, `--weights` for the commands that run a model (score,
// generate): opens the base checkpoint, loads the engine, and puts a trained adapter or a trainer
// checkpoint on it, so what was trained is what gets scored or sampled.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LoadEngineOptions, WebGpuEngine } from '../engine/engine.ts';
import { ADAPTER_CONFIG_FILE } from '../engine/peft-adapter.ts';
import type { Engine } from '../engine/types.ts';
import type { OpenedCheckpoint } from '../model/checkpoint.ts';
import { latestCheckpointFolder, readTrainerStateFolder, TRAINER_STATE_FILE, type TrainerState } from '../rl/grpo/trainer-state.ts';
import { trainableMode } from '../rl/run.ts';
import { choiceOption, str, type OptionTable, type Parsed } from './args.ts';

export const MODEL_OPTIONS: OptionTable = {
  model: { type: 'string' },
  adapter: { type: 'string' },
  checkpoint: { type: 'string' },
  weights: { type: 'string' },
};

export const MODEL_HELP = `  --model DIR|REPO       checkpoint folder (Hugging Face layout), URL or Hub repo id
                         (default with --adapter: the adapter's base_model_name_or_path)
  --adapter DIR          a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors), ours or PEFT's
  --checkpoint DIR       a trainer checkpoint (checkpoint-N written by \`train --output\`, or that
                         --output folder: its newest checkpoint)
  --weights f32|f16|auto weight storage on the GPU (default auto)`;

/** What the JSON output names of the trained weights (`adapter` there is the GPU adapter). */
export type Trained = { lora_adapter: string } | { checkpoint: string; step: number } | null;

async function adapterBaseModel(dir: string): Promise<string | null> {
  try {
    const cfg = JSON.parse(await readFile(join(dir, ADAPTER_CONFIG_FILE), 'utf8')) as { base_model_name_or_path?: unknown };
    return typeof cfg.base_model_name_or_path === 'string' && cfg.base_model_name_or_path !== '' ? cfg.base_model_name_or_path : null;
  } catch {
    return null;
  }
}

/** A checkpoint-N folder, or a train --output folder (its newest checkpoint-N). */
export async function readTrainerCheckpoint(dir: string): Promise<{ dir: string; ckpt: TrainerState }> {
  let folder = dir;
  try {
    await readFile(join(dir, TRAINER_STATE_FILE));
  } catch {
    const latest = await latestCheckpointFolder(dir);
    if (!latest) throw new Error(`--checkpoint ${dir}: no ${TRAINER_STATE_FILE} and no checkpoint-<step> folder in it`);
    folder = latest;
  }
  return { dir: folder, ckpt: await readTrainerStateFolder(folder) };
}

export interface ModelArgs {
  model: string;
  adapter: string | null;
  checkpoint: { dir: string; ckpt: TrainerState } | null;
  weights: 'f32' | 'f16' | 'auto';
}

export async function modelArgs(p: Parsed, help: string): Promise<ModelArgs> {
  const adapter = str(p, 'adapter') ?? null;
  const checkpointDir = str(p, 'checkpoint') ?? null;
  if (adapter && checkpointDir) throw new Error('give --adapter or --checkpoint, not both');
  const model = str(p, 'model') ?? (adapter ? await adapterBaseModel(adapter) : null);
  if (!model) throw new Error(`--model is required${adapter ? ` (${join(adapter, ADAPTER_CONFIG_FILE)} names no base_model_name_or_path)` : ''}\n\n${help}`);
  let weights = choiceOption(p, 'weights', ['f32', 'f16', 'auto'] as const, 'auto');
  const checkpoint = checkpointDir ? await readTrainerCheckpoint(checkpointDir) : null;
  if (checkpoint?.ckpt.config.train_mode === 'full') {
    if (weights === 'f16') throw new Error(`--checkpoint ${checkpoint.dir} is a full fine-tuning checkpoint: it needs --weights f32`);
    weights = 'f32';
  }
  return { model, adapter, checkpoint, weights };
}

/**
 * Puts --adapter or --checkpoint on a loaded engine (one the launcher loaded, src/rl/launch-model.ts, or
 * loadTrainedEngine's), so what was trained is what runs.
 */
export async function applyTrained(engine: Engine, args: Pick<ModelArgs, 'adapter' | 'checkpoint'>): Promise<Trained> {
  if (args.adapter) {
    await engine.loadAdapter(args.adapter);
    return { lora_adapter: args.adapter };
  }
  if (args.checkpoint) {
    const { dir, ckpt: state } = args.checkpoint;
    engine.setTrainable(trainableMode(state.config));
    await engine.loadState(state.engine).catch((err: Error) => {
      throw new Error(`--checkpoint ${dir} does not fit this model: ${err.message}`);
    });
    return { checkpoint: dir, step: state.counters.step };
  }
  return null;
}

/** Loads the engine on `ckpt` and applies --adapter / --checkpoint. */
export async function loadTrainedEngine(ckpt: OpenedCheckpoint, args: ModelArgs, opts: LoadEngineOptions = {}): Promise<{ engine: WebGpuEngine; trained: Trained }> {
  const { loadEngine } = await import('../engine/engine.ts');
  const engine = await loadEngine(ckpt, { weightDtype: args.weights, ...opts });
  try {
    return { engine, trained: await applyTrained(engine, args) };
  } catch (err) {
    engine.destroy();
    throw err;
  }
}
