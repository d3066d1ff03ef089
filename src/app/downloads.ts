// Files the run page hands the user: one blob download, a zip of several (stored, not deflated), and a
// file-name-safe form of a run's name.
import { zipSync } from 'fflate';

export function download(name: string, bytes: Uint8Array | string, type = 'application/octet-stream') {
  const url = URL.createObjectURL(new Blob([bytes as BlobPart], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Exported files as one zip (stored, not deflated: safetensors barely compress), downloaded at once. */
export function downloadZip(name: string, files: { name: string; bytes: Uint8Array }[]) {
  download(name, zipSync(Object.fromEntries(files.map((f) => [f.name, f.bytes])), { level: 0 }), 'application/zip');
}

/** A file-name-safe form of a run's name. */
export const slug = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '') || 'run';
