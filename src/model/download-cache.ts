// The download cache's interface (cache.ts implements it for the browser, node-cache.ts for Node). It
// lives apart from both so that neither implementation imports the other.

import type { CheckpointFiles } from './files.ts';

export interface PartialDownload {
  /** Bytes already stored. */
  bytes: number;
  /** ETag or Last-Modified of the response the bytes came from (sent as If-Range on resume). */
  validator: string | null;
}

export interface PartialWriter {
  append(chunk: Uint8Array): Promise<void>;
  /** Keeps what was written (resumable). */
  close(): Promise<void>;
  /** Closes and marks the file complete. */
  complete(): Promise<void>;
}

export interface DownloadCache {
  /** For messages: the directory or "browser storage". */
  location: string;
  /** Size of a complete cached file, or null. */
  completeSize(key: string): Promise<number | null>;
  /** State of an unfinished download, or null when there is none. */
  partial(key: string): Promise<PartialDownload | null>;
  /** Starts (from = 0) or continues (from = partial bytes) a download; discards anything after `from`. */
  beginPartial(key: string, from: number, validator: string | null): Promise<PartialWriter>;
  /** Writes a small complete file at once (the manifest). */
  writeComplete(key: string, bytes: Uint8Array): Promise<void>;
  /** Random access to the complete files under `prefix` (a folder of the cache). */
  files(prefix: string): CheckpointFiles;
}
