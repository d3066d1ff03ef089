// A checkpoint in a local folder (Node). Every read is a positional read of just the requested range.

import { open, readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { closestName } from './closest-name.ts';
import type { CheckpointFiles } from './files.ts';

export function nodeFolderFiles(dir: string): CheckpointFiles {
  const sizeOf = async (file: string): Promise<number | null> => {
    try {
      const s = await stat(join(dir, file));
      return s.isFile() ? s.size : null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  };
  return {
    location: dir,
    size: sizeOf,
    read: async (file, start, end) => {
      const path = join(dir, file);
      const handle = await open(path, 'r');
      try {
        const out = new Uint8Array(end - start);
        let done = 0;
        while (done < out.byteLength) {
          const { bytesRead } = await handle.read(out, done, out.byteLength - done, start + done);
          if (bytesRead === 0) throw new Error(`${path}: read [${start}, ${end}) past the end of the file`);
          done += bytesRead;
        }
        return out;
      } finally {
        await handle.close();
      }
    },
    readText: async (file) => {
      try {
        return await readFile(join(dir, file), 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
    },
  };
}

/** True when `path` is an existing directory (decides whether a source string is a local folder). */
export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/** The folders in `dir` (none when it cannot be read). */
async function foldersIn(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() || e.isSymbolicLink()).map((e) => e.name);
  } catch {
    return [];
  }
}

/** `parent/name` with a mistyped `name` → the existing folder of `parent` it was meant to be, or null. */
async function nearFolder(parent: string, name: string): Promise<string | null> {
  const near = closestName(name, await foldersIn(parent === '' ? '.' : parent));
  return near === null ? null : parent === '' ? near : join(parent, near);
}

/**
 * Whether a `--model` string is a local folder (true), may be a Hub repo id (false), or is a path to a
 * folder that is not there (an error naming the folder it was likely meant to be). A string that looks
 * like a path (`/`, `./`, `../`, `~`, more than one `/`) is never sent to the Hub, nor is `owner/name` when
 * `owner` is a local folder or a typo of one that holds a folder like `name`: a mistyped local path would
 * otherwise become a slow download that fails with a network error.
 */
export async function isLocalModelFolder(source: string): Promise<boolean> {
  if (await isDirectory(source)) return true;
  const clean = source.replace(/\/+$/, '');
  const parent = dirname(clean) === '.' && !clean.startsWith('./') ? '' : dirname(clean);
  const name = basename(clean);
  const pathLike = /^(\.{1,2}(\/|$)|\/|~)/.test(source) || source.includes('\\') || clean.split('/').length > 2;
  let meant: string | null = null;
  if (parent !== '' && (await isDirectory(parent))) {
    meant = await nearFolder(parent, name);
  } else if (parent !== '' && !pathLike) {
    // owner/name whose owner is no folder: a typo of one only when the corrected path names a folder too.
    const near = await nearFolder('', parent);
    const inside = near === null ? null : await nearFolder(near, name);
    if (inside === null) return false;
    meant = inside;
  } else if (!pathLike) {
    return false;
  }
  throw new Error(`no model folder ${source}${meant ? ` (did you mean ${meant}?)` : ''}`);
}
