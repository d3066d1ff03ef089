// Opens a Hugging Face layout checkpoint (config.json + model.safetensors or shards with
// model.safetensors.index.json) from any CheckpointFiles, reading only headers up front and each
// tensor's byte range on demand.

import { parseWeightIndex, type OpenCheckpointOptions } from './checkpoint-options.ts';
import { parseConfigText } from './config.ts';
import { canonicalTensorName } from './qwen3-tensors.ts';
import { VISION_PREFIX } from './qwen3_5-vision-tensors.ts';
import { browserFiles, memoryFiles, readTextCapped, type CheckpointFiles } from './files.ts';
import { decodeToFloat32, parseHeader, readHeaderLength, type SafetensorsEntry } from './safetensors.ts';
import type { RemoteLocation } from './hub.ts';
import type { Checkpoint, ModelConfig, TensorInfo } from './types.ts';

export { parseWeightIndex, type OpenCheckpointOptions } from './checkpoint-options.ts';

export const SINGLE_WEIGHTS_FILE = 'model.safetensors';
export const WEIGHTS_INDEX_FILE = 'model.safetensors.index.json';

/** A tensor's location: which weights file and where in it. */
export interface StoredTensor extends TensorInfo {
  file: string;
  fileOffset: number;
}

export interface OpenedCheckpoint extends Checkpoint {
  /** Where it was opened from (folder, URL, "memory"…). */
  location: string;
  /** The weights files, in shard order. */
  weightFiles: string[];
  /** Every decoder tensor (and vision tensor, if opened with `vision`) with its file and offset, under canonical names (same keys as `tensors`). */
  stored: Map<string, StoredTensor>;
  /** Sum of the bytes of the tensors in `stored`. */
  totalTensorBytes: number;
  /** The underlying file access (e.g. to read generation_config.json as bytes). */
  files: CheckpointFiles;
}

/**
 * Where a model named by one string lives: a local folder (Node), an `http(s)://` base URL whose files
 * are `{url}/{file}`, or a Hub repo id. locateModel reads such a string, once; everything that opens
 * or inspects that model takes the location.
 */
export type ModelLocation = { folder: string } | RemoteLocation;

/** Anything a checkpoint can be opened from; see openCheckpoint. */
export type CheckpointSource = string | ModelLocation | CheckpointFiles | ReadonlyMap<string, Uint8Array> | Iterable<File>;


function isCheckpointFiles(x: unknown): x is CheckpointFiles {
  return typeof x === 'object' && x !== null && typeof (x as CheckpointFiles).read === 'function' && typeof (x as CheckpointFiles).size === 'function';
}

function isModelLocation(x: unknown): x is ModelLocation {
  return typeof x === 'object' && x !== null && ('folder' in x || 'baseUrl' in x || 'repo' in x);
}

/** A Hub repo id: `owner/name` (letters, digits, '-', '_', '.'). */
export const REPO_ID = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/;

const isNode = typeof process !== 'undefined' && !!process.versions?.node;

/** A model string that is no local folder, no http(s) URL and no Hub repo id. */
export class UnknownModelError extends Error {}

/**
 * The one reading of a model string (`--model`): an http(s) URL; else, in Node, a local folder (a
 * mistyped one fails here, by name, with the folder it was probably meant to be); else a Hub repo id.
 */
export async function locateModel(source: string): Promise<ModelLocation> {
  if (/^https?:\/\//.test(source)) return { baseUrl: source };
  if (isNode) {
    const { isLocalModelFolder } = await import('./node-files.ts');
    if (await isLocalModelFolder(source)) return { folder: source };
  }
  if (REPO_ID.test(source)) return { repo: source };
  throw new UnknownModelError(`cannot open checkpoint '${source}': not a local folder, an http(s) URL or a Hub repo id (owner/name)`);
}

/** How a location is named in messages and in an adapter's base_model_name_or_path: as the user wrote it. */
export function modelLocationName(location: ModelLocation): string {
  return 'folder' in location ? location.folder : 'baseUrl' in location ? location.baseUrl : location.repo;
}

/**
 * Opens a checkpoint from:
 * - a model string (see locateModel) or its location: a local folder (Node), an `http(s)://` base URL,
 *   or a Hub repo id like `Qwen/Qwen3-0.6B` (`{endpoint}/{repo}/resolve/{revision}/{file}`), downloaded
 *   into the cache with progress and resume, then read locally;
 * - browser `File`s (a picked folder), a Map of in-memory files, or any CheckpointFiles.
 */
export async function openCheckpoint(source: CheckpointSource, options: OpenCheckpointOptions = {}): Promise<OpenedCheckpoint> {
  return openCheckpointFiles(await resolveSource(source, options), options);
}

async function resolveSource(source: CheckpointSource, options: OpenCheckpointOptions): Promise<CheckpointFiles> {
  if (isCheckpointFiles(source)) return source;
  if (source instanceof Map) return memoryFiles(source);
  if (typeof source === 'string') return modelFiles(await locateModel(source), options);
  if (isModelLocation(source)) return modelFiles(source, options);
  return browserFiles(source as Iterable<File>);
}

/** The files of the model at `location` (a remote one's downloaded into the cache unless `download` is false). */
async function modelFiles(location: ModelLocation, options: OpenCheckpointOptions): Promise<CheckpointFiles> {
  if ('folder' in location) {
    const { nodeFolderFiles } = await import('./node-files.ts');
    return nodeFolderFiles(location.folder);
  }
  const { remoteCheckpointFiles } = await import('./hub.ts');
  return remoteCheckpointFiles(location, options);
}

/**
 * config.json of the model at `location` alone (a folder's, or downloaded by itself into the cache):
 * no weights are read, so the run can be sized before a download.
 */
export async function readModelConfig(location: ModelLocation, options: OpenCheckpointOptions = {}): Promise<ModelConfig> {
  if ('folder' in location) {
    const files = await modelFiles(location, options);
    const text = await readTextCapped(files, 'config.json');
    if (text === null) throw new Error(`${files.location}/config.json: no such file`);
    return parseConfigText(text, `${files.location}/config.json`);
  }
  const { fetchRemoteConfig } = await import('./hub.ts');
  return fetchRemoteConfig(location, options);
}

/**
 * Reads config.json and the safetensors headers of whatever files hold the checkpoint. The vision
 * tower's tensors are dropped unless `vision` is true (then the config must have a vision_config).
 */
export async function openCheckpointFiles(files: CheckpointFiles, { vision = false }: Pick<OpenCheckpointOptions, 'vision'> = {}): Promise<OpenedCheckpoint> {
  const where = files.location;
  const configText = await readTextCapped(files, 'config.json');
  if (configText === null) throw new Error(`${where}: no config.json (not a Hugging Face model folder?)`);
  const config = parseConfigText(configText, `${where}/config.json`);
  if (vision && !config.vision) {
    throw new Error(config.visionError ? `${config.visionError} (the vision tower cannot be loaded)` : `${where}/config.json: no vision_config, so there is no vision tower to load (a Qwen3_5ForConditionalGeneration checkpoint has one)`);
  }

  const weightFiles = await listWeightFiles(files);
  const stored = new Map<string, StoredTensor>();
  let totalTensorBytes = 0;
  for (const file of weightFiles.files) {
    for (const t of await readSafetensorsHeader(files, file)) {
      if (stored.has(t.name)) throw new Error(`${where}: tensor '${t.name}' is stored twice (in ${stored.get(t.name)!.file} and ${file})`);
      if (weightFiles.weightMap && weightFiles.weightMap.get(t.name) !== file) {
        throw new Error(`${where}/${file}: tensor '${t.name}' is not listed for this shard in ${WEIGHTS_INDEX_FILE}`);
      }
      stored.set(t.name, { name: t.name, dtype: t.dtype, shape: t.shape, byteLength: t.byteLength, file, fileOffset: t.fileOffset });
      totalTensorBytes += t.byteLength;
    }
  }
  if (weightFiles.weightMap) {
    for (const [name, file] of weightFiles.weightMap) {
      if (!stored.has(name)) throw new Error(`${where}: ${WEIGHTS_INDEX_FILE} lists tensor '${name}' in ${file}, but that shard does not contain it`);
    }
  }

  // Qwen3.5's composite checkpoints nest the decoder under model.language_model. and carry a vision tower
  // and an MTP head: keep the decoder's tensors under the canonical model.* names the engine uses, and
  // the tower's (model.visual.*) only when asked.
  for (const [storedName, t] of [...stored]) {
    const name = canonicalTensorName(config, storedName, vision);
    if (name === storedName) continue;
    stored.delete(storedName);
    totalTensorBytes -= name === null ? t.byteLength : 0;
    if (name !== null) stored.set(name, { ...t, name });
  }
  const tensors = new Map<string, TensorInfo>();
  for (const [name, t] of stored) tensors.set(name, { name, dtype: t.dtype, shape: t.shape, byteLength: t.byteLength });

  return {
    config,
    tensors,
    stored,
    location: where,
    weightFiles: weightFiles.files,
    totalTensorBytes,
    files,
    readTensor: async (name) => {
      const t = stored.get(name);
      if (!t) throw new Error(`${where}: no tensor '${name}'`);
      return files.read(t.file, t.fileOffset, t.fileOffset + t.byteLength);
    },
    readText: (file) => files.readText(file),
  };
}

async function listWeightFiles(files: CheckpointFiles): Promise<{ files: string[]; weightMap: Map<string, string> | null }> {
  const where = files.location;
  const indexText = await readTextCapped(files, WEIGHTS_INDEX_FILE);
  if (indexText === null) {
    if ((await files.size(SINGLE_WEIGHTS_FILE)) === null) {
      throw new Error(`${where}: no ${SINGLE_WEIGHTS_FILE} and no ${WEIGHTS_INDEX_FILE}`);
    }
    return { files: [SINGLE_WEIGHTS_FILE], weightMap: null };
  }
  const weightMap = parseWeightIndex(indexText, `${where}/${WEIGHTS_INDEX_FILE}`);
  const shards = [...new Set(weightMap.values())].sort();
  for (const shard of shards) {
    if ((await files.size(shard)) === null) throw new Error(`${where}: shard '${shard}' named in ${WEIGHTS_INDEX_FILE} does not exist`);
  }
  return { files: shards, weightMap };
}

/**
 * The vision tower's stored tensors (model.visual.*) of a checkpoint, however it was opened: a
 * checkpoint opened without `vision` keeps only the decoder's, so the weights files' headers (a few KB
 * each) are read again. Empty for a text model.
 */
export async function readVisionTensors(ckpt: Pick<OpenedCheckpoint, 'files' | 'weightFiles'>): Promise<Map<string, StoredTensor>> {
  const found = new Map<string, StoredTensor>();
  for (const file of ckpt.weightFiles) {
    for (const t of await readSafetensorsHeader(ckpt.files, file)) {
      if (t.name.startsWith(VISION_PREFIX)) found.set(t.name, { name: t.name, dtype: t.dtype, shape: t.shape, byteLength: t.byteLength, file, fileOffset: t.fileOffset });
    }
  }
  return found;
}

/** Reads and validates one safetensors file's header with two small reads. */
export async function readSafetensorsHeader(files: CheckpointFiles, file: string): Promise<SafetensorsEntry[]> {
  const name = `${files.location}/${file}`;
  const size = await files.size(file);
  if (size === null) throw new Error(`${name}: file does not exist`);
  const n = readHeaderLength(size >= 8 ? await files.read(file, 0, 8) : new Uint8Array(0), size, name);
  return parseHeader(await files.read(file, 8, 8 + n), size, name).tensors;
}

/** Reads one tensor and converts it to f32 (for CPU references and f32 GPU upload). */
export async function readTensorFloat32(ckpt: Checkpoint, name: string): Promise<Float32Array> {
  const info = ckpt.tensors.get(name);
  if (!info) throw new Error(`no tensor '${name}' in the checkpoint`);
  return decodeToFloat32(info, await ckpt.readTensor(name));
}
