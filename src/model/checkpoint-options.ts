// What checkpoint.ts and hub.ts share: the open options and the shard index parser. Kept apart so that
// hub.ts (loaded on demand by checkpoint.ts for URLs and repo ids) does not import checkpoint.ts back.

import type { DownloadCache } from './download-cache.ts';
import type { LoadProgress } from './types.ts';

export interface OpenCheckpointOptions {
  /** Hub endpoint for repo ids (default: HF_ENDPOINT in Node, else https://huggingface.co). */
  endpoint?: string;
  /** Hub revision (branch, tag or commit); default 'main'. */
  revision?: string;
  /** Access token for gated or private Hub repos (default: HF_TOKEN in Node). */
  token?: string;
  /**
   * For Hub repos and URLs: download whole files into the local cache first (default true), so
   * the second open needs no network; false reads each tensor with an HTTP Range request instead.
   */
  download?: boolean;
  /** Node cache directory (default WEBGRPO_CACHE or ~/.cache/webgrpo/hub). */
  cacheDir?: string;
  /** The download cache to use instead of the default (the directory above in Node, OPFS in a browser). */
  cache?: DownloadCache;
  onProgress?: (p: LoadProgress) => void;
  /** Abort a download. */
  signal?: AbortSignal;
  /** Keep Qwen3.5's vision tower (`model.visual.*`, checked against vision_config); default false drops it. */
  vision?: boolean;
  /** Automatic resumes of a download after a dropped connection (default 3). */
  retries?: number;
  /** Wait before the first automatic resume, doubled each time (default 500 ms). */
  retryDelayMs?: number;
}

/** `{"metadata": {...}, "weight_map": {tensor: shard}}` → Map tensor → shard. */
export function parseWeightIndex(text: string, file: string): Map<string, string> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${(err as Error).message})`);
  }
  const weightMap = (json as { weight_map?: unknown } | null)?.weight_map;
  if (weightMap === null || typeof weightMap !== 'object' || Array.isArray(weightMap)) {
    throw new Error(`${file}: missing "weight_map" object`);
  }
  const out = new Map<string, string>();
  for (const [name, shard] of Object.entries(weightMap as Record<string, unknown>)) {
    if (typeof shard !== 'string' || !shard.endsWith('.safetensors') || shard.includes('/') || shard.includes('\\')) {
      throw new Error(`${file}: weight_map['${name}'] must be a .safetensors file name in the same folder, got ${JSON.stringify(shard)}`);
    }
    out.set(name, shard);
  }
  if (out.size === 0) throw new Error(`${file}: weight_map is empty`);
  return out;
}
