// The download cache for Hub/HTTP checkpoints: whole files keyed by `<repo>/<revision>/<file>`,
// plus in-progress downloads that can be resumed (after a dropped connection or a page reload)
// from the bytes already stored. Node keeps it in a directory (node-cache.ts); the browser in the
// Origin Private File System, which, unlike Cache Storage, can append to a partly written file.

import type { DownloadCache } from './download-cache.ts';

export type { DownloadCache, PartialDownload, PartialWriter } from './download-cache.ts';

/** Cache folder of one repo revision: `models/<owner>/<name>/<revision>`, prefixed by the host for non-default endpoints. */
export function cachePrefix(parts: { host: string | null; repo: string; revision: string }): string {
  const rev = encodeURIComponent(parts.revision); // 'refs/pr/1' must stay one folder
  const base = `models/${parts.repo}/${rev}`;
  return parts.host ? `${encodeURIComponent(parts.host)}/${base}` : base;
}

/** The browser's cache: OPFS directory `webgrpo-hub`. */
export function opfsCache(rootName = 'webgrpo-hub', flushBytes = 32 * 1024 * 1024): DownloadCache {
  // While a download is unfinished, `<file>.incomplete.json` sits next to the data (OPFS has no portable rename).
  const META = '.incomplete.json';
  // createWritable() only commits on close(): closing and reopening every `flushBytes` means a reload loses little.

  const dirOf = async (path: string[], create: boolean): Promise<FileSystemDirectoryHandle | null> => {
    let dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(rootName, { create: true });
    for (const part of path) {
      try {
        dir = await dir.getDirectoryHandle(part, { create });
      } catch (err) {
        if ((err as DOMException).name === 'NotFoundError') return null;
        throw err;
      }
    }
    return dir;
  };
  const split = (key: string): { dir: string[]; name: string } => {
    const parts = key.split('/');
    return { dir: parts.slice(0, -1), name: parts[parts.length - 1]! };
  };
  const fileIn = async (dir: FileSystemDirectoryHandle | null, name: string): Promise<File | null> => {
    if (!dir) return null;
    try {
      return await (await dir.getFileHandle(name)).getFile();
    } catch (err) {
      if ((err as DOMException).name === 'NotFoundError') return null;
      throw err;
    }
  };
  const completeFile = async (key: string): Promise<File | null> => {
    const { dir, name } = split(key);
    const d = await dirOf(dir, false);
    if (!d || (await fileIn(d, name + META))) return null;
    return fileIn(d, name);
  };

  return {
    location: 'browser storage (OPFS)',
    completeSize: async (key) => (await completeFile(key))?.size ?? null,
    partial: async (key) => {
      const { dir, name } = split(key);
      const d = await dirOf(dir, false);
      const meta = await fileIn(d, name + META);
      if (!meta) return null;
      const data = await fileIn(d, name);
      const { validator } = JSON.parse(await meta.text()) as { validator: string | null };
      return { bytes: data?.size ?? 0, validator };
    },
    beginPartial: async (key, from, validator) => {
      const { dir, name } = split(key);
      const d = (await dirOf(dir, true))!;
      const meta = await (await d.getFileHandle(name + META, { create: true })).createWritable();
      await meta.write(JSON.stringify({ validator }));
      await meta.close();
      const handle = await d.getFileHandle(name, { create: true });
      let position = from;
      let unflushed = 0;
      let writable = await handle.createWritable({ keepExistingData: true });
      await writable.truncate(from);
      await writable.seek(from);
      const close = async () => writable.close();
      return {
        append: async (chunk) => {
          await writable.write(chunk as Uint8Array<ArrayBuffer>);
          position += chunk.byteLength;
          unflushed += chunk.byteLength;
          if (unflushed >= flushBytes) {
            await writable.close();
            writable = await handle.createWritable({ keepExistingData: true });
            await writable.seek(position);
            unflushed = 0;
          }
        },
        close,
        complete: async () => {
          await close();
          await d.removeEntry(name + META);
        },
      };
    },
    writeComplete: async (key, bytes) => {
      const { dir, name } = split(key);
      const d = (await dirOf(dir, true))!;
      const w = await (await d.getFileHandle(name, { create: true })).createWritable();
      await w.write(bytes as Uint8Array<ArrayBuffer>);
      await w.close();
    },
    files: (prefix) => {
      const key = (file: string) => `${prefix}/${file}`;
      return {
        location: `browser storage (OPFS) ${rootName}/${prefix}`,
        size: async (file) => (await completeFile(key(file)))?.size ?? null,
        read: async (file, start, end) => {
          const f = await completeFile(key(file));
          if (!f) throw new Error(`browser storage: no cached file '${key(file)}'`);
          if (end > f.size) throw new Error(`browser storage ${key(file)}: read [${start}, ${end}) past the end (${f.size} bytes)`);
          return new Uint8Array(await f.slice(start, end).arrayBuffer());
        },
        readText: async (file) => (await completeFile(key(file)))?.text() ?? null,
      };
    },
  };
}

/** Node: a directory cache (WEBGRPO_CACHE or ~/.cache/webgrpo/hub, or `dir`); browser: OPFS. */
export async function defaultCache(dir?: string): Promise<DownloadCache> {
  if (typeof process !== 'undefined' && process.versions?.node) {
    const { nodeDirectoryCache, defaultCacheDir } = await import('./node-cache.ts');
    return nodeDirectoryCache(dir ?? defaultCacheDir());
  }
  if (typeof navigator !== 'undefined' && typeof navigator.storage?.getDirectory === 'function') return opfsCache();
  throw new Error('no download cache: this browser has no Origin Private File System (navigator.storage.getDirectory)');
}
