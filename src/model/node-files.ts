// A checkpoint in a local folder (Node). Every read is a positional read of just the requested range.

import { open, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
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
