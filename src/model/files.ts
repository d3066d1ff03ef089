// Random access to the files of one checkpoint, whatever holds them: memory, a browser folder pick,
// a local folder (node-files.ts), an HTTP server (http-files.ts). The checkpoint reader only ever asks
// for byte ranges, so a multi-GB weights file is never read whole.

export interface CheckpointFiles {
  /** Where the files are, for error messages ("/path/to/dir", "https://…", "memory"). */
  location: string;
  /** Size in bytes, or null when the file does not exist. */
  size(file: string): Promise<number | null>;
  /** Bytes [start, end) of an existing file. */
  read(file: string, start: number, end: number): Promise<Uint8Array>;
  /** A whole (small) file as UTF-8 text, or null when it does not exist. */
  readText(file: string): Promise<string | null>;
}

/** Files held in memory (tests, the built-in tiny model). */
export function memoryFiles(files: ReadonlyMap<string, Uint8Array>, location = 'memory'): CheckpointFiles {
  const get = (file: string): Uint8Array => {
    const bytes = files.get(file);
    if (!bytes) throw new Error(`${location}: no file '${file}'`);
    return bytes;
  };
  return {
    location,
    size: async (file) => files.get(file)?.byteLength ?? null,
    read: async (file, start, end) => {
      const bytes = get(file);
      if (end > bytes.byteLength) throw new Error(`${location}/${file}: read [${start}, ${end}) past the end (${bytes.byteLength} bytes)`);
      return bytes.subarray(start, end);
    },
    readText: async (file) => {
      const bytes = files.get(file);
      return bytes ? new TextDecoder().decode(bytes) : null;
    },
  };
}

/**
 * Files picked in the browser (`<input type=file webkitdirectory>` or drag and drop). A picked folder
 * gives paths like `Qwen3-0.6B/config.json`; files are matched by their base name. Reads slice the
 * File, so only the requested range is loaded.
 */
export function browserFiles(picked: Iterable<File>, location = 'picked files'): CheckpointFiles {
  const byName = new Map<string, File>();
  for (const f of picked) {
    const name = f.name.split('/').pop()!;
    // A nested copy (e.g. a sub-folder) must not shadow the top-level file: keep the shortest path.
    const path = (f as File & { webkitRelativePath?: string }).webkitRelativePath || f.name;
    const previous = byName.get(name);
    const previousPath = previous ? (previous as File & { webkitRelativePath?: string }).webkitRelativePath || previous.name : null;
    if (!previous || path.split('/').length < previousPath!.split('/').length) byName.set(name, f);
  }
  return {
    location,
    size: async (file) => byName.get(file)?.size ?? null,
    read: async (file, start, end) => {
      const f = byName.get(file);
      if (!f) throw new Error(`${location}: no file '${file}'`);
      if (end > f.size) throw new Error(`${location}/${file}: read [${start}, ${end}) past the end (${f.size} bytes)`);
      return new Uint8Array(await f.slice(start, end).arrayBuffer());
    },
    readText: async (file) => {
      const f = byName.get(file);
      return f ? await f.text() : null;
    },
  };
}

/**
 * Most bytes webgrpo reads of each small file of a checkpoint (each far above a real one: Qwen3's
 * tokenizer.json is 11 MB, its config.json 1 KB). A file is read whole as text, so a hostile size
 * would otherwise cost its size in memory before any check of its content could fail.
 */
export const TEXT_FILE_LIMITS: Readonly<Record<string, number>> = {
  'config.json': 1024 * 1024,
  'model.safetensors.index.json': 16 * 1024 * 1024,
  'tokenizer.json': 64 * 1024 * 1024,
  'tokenizer_config.json': 16 * 1024 * 1024,
  'chat_template.jinja': 1024 * 1024,
  'chat_template.json': 1024 * 1024,
};

/** An error naming `file` and its limit when `bytes` is over it, else null. */
export function textFileTooBig(where: string, file: string, bytes: number): string | null {
  const limit = TEXT_FILE_LIMITS[file];
  if (limit === undefined || bytes <= limit) return null;
  return `${where}/${file}: ${bytes} bytes is over webgrpo's ${limit}-byte limit for ${file} (a real one is far smaller)`;
}

/**
 * `readText` of one of the files in TEXT_FILE_LIMITS, refusing an oversized file before reading it
 * when its size is known (`size`), and after reading it otherwise.
 */
export async function readTextCapped(files: { location?: string; readText(file: string): Promise<string | null>; size?(file: string): Promise<number | null> }, file: string, where = files.location ?? ''): Promise<string | null> {
  const size = files.size ? await files.size(file) : null;
  const before = size === null ? null : textFileTooBig(where, file, size);
  if (before) throw new Error(before);
  const text = await files.readText(file);
  // UTF-16 code units ≥ bytes / 3, so a text past the limit here was past it on disk.
  const after = text === null ? null : textFileTooBig(where, file, text.length);
  if (after) throw new Error(after);
  return text;
}
