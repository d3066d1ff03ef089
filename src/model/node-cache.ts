// The Node download cache: a directory holding `<key>` for complete files, and `<key>.partial` with
// `<key>.partial.json` (the response validator) while a download is unfinished. Completing renames
// the partial file into place, so a complete-looking file is always whole.

import { mkdir, open, rename, rm, stat, writeFile, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { DownloadCache } from './download-cache.ts';
import { nodeFolderFiles } from './node-files.ts';

export function defaultCacheDir(): string {
  return process.env.WEBGRPO_CACHE || join(homedir(), '.cache', 'webgrpo', 'hub');
}

async function sizeOf(path: string): Promise<number | null> {
  try {
    const s = await stat(path);
    return s.isFile() ? s.size : null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

export function nodeDirectoryCache(root: string): DownloadCache {
  const pathOf = (key: string) => join(root, ...key.split('/'));
  return {
    location: root,
    completeSize: (key) => sizeOf(pathOf(key)),
    partial: async (key) => {
      const path = pathOf(key);
      let meta: string;
      try {
        meta = await readFile(`${path}.partial.json`, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
      const { validator } = JSON.parse(meta) as { validator: string | null };
      return { bytes: (await sizeOf(`${path}.partial`)) ?? 0, validator };
    },
    beginPartial: async (key, from, validator) => {
      const path = pathOf(key);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(`${path}.partial.json`, JSON.stringify({ validator }));
      const handle = await open(`${path}.partial`, from > 0 ? 'r+' : 'w');
      await handle.truncate(from);
      let position = from;
      let closed = false;
      const close = async () => {
        if (!closed) {
          closed = true;
          await handle.close();
        }
      };
      return {
        append: async (chunk) => {
          let done = 0;
          while (done < chunk.byteLength) {
            const { bytesWritten } = await handle.write(chunk, done, chunk.byteLength - done, position + done);
            done += bytesWritten;
          }
          position += chunk.byteLength;
        },
        close,
        complete: async () => {
          await close();
          await rename(`${path}.partial`, path);
          await rm(`${path}.partial.json`, { force: true });
        },
      };
    },
    writeComplete: async (key, bytes) => {
      const path = pathOf(key);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(`${path}.tmp`, bytes);
      await rename(`${path}.tmp`, path);
    },
    files: (prefix) => nodeFolderFiles(pathOf(prefix)),
  };
}
