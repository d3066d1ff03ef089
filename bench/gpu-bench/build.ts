// `npm run build:gpu-bench`: packs bench/gpu-bench/main.ts into ONE self-contained archive for a
// machine with a real GPU, minutes of time, no network and a 64 MiB file limit:
//   node                 this Node binary
//   bench.mjs            the engine + benches, bundled by esbuild into one file
//   node_modules/webgpu  Dawn's Node binding (index.js + dist/linux-x64/dawn.node), loaded at run time
//   lib/libvulkan.so.1   the Vulkan loader from Debian's libvulkan1 (the GPU driver's ICD is the host's)
//   run.sh               LD_LIBRARY_PATH=lib ./node bench.mjs "$@"
// Unpacked in an empty folder: `./run.sh [--small] [--out FILE]`. Fails above 60 MiB.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const OUT_DIR = join(ROOT, 'dist');
const STAGE = join(OUT_DIR, 'gpu-bench');
const ARCHIVE = join(OUT_DIR, 'gpu-bench.tar.xz');
const LIMIT = 60 * 1024 * 1024;
const VULKAN_LOADER = '/usr/lib/x86_64-linux-gnu/libvulkan.so.1';

rmSync(STAGE, { recursive: true, force: true });
mkdirSync(join(STAGE, 'lib'), { recursive: true });
await build({
  entryPoints: [join(ROOT, 'bench/gpu-bench/main.ts')],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outfile: join(STAGE, 'bench.mjs'),
  external: ['webgpu'],
  // CommonJS dependencies bundled into an ES module still call require().
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  logLevel: 'warning',
});
const webgpu = join(ROOT, 'node_modules/webgpu');
mkdirSync(join(STAGE, 'node_modules/webgpu/dist/linux-x64'), { recursive: true });
for (const f of ['index.js', 'package.json', 'dist/linux-x64/dawn.node']) copyFileSync(join(webgpu, f), join(STAGE, 'node_modules/webgpu', f));
copyFileSync(process.execPath, join(STAGE, 'node'));
chmodSync(join(STAGE, 'node'), 0o755);
copyFileSync(realpathSync(VULKAN_LOADER), join(STAGE, 'lib/libvulkan.so.1'));
writeFileSync(join(STAGE, 'run.sh'), `#!/bin/sh
# webgrpo GPU benchmark: parity vs float64, engine, memory, decode, train and kernel benches at Qwen3-0.6B, Qwen3.5-0.8B and Qwen3.5-2B shapes → JSON.
here="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$here/lib\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$here/node" "$here/bench.mjs" "$@"
`);
chmodSync(join(STAGE, 'run.sh'), 0o755);
execFileSync('tar', ['-cf', ARCHIVE, '--use-compress-program', 'xz -6 -T0', '-C', STAGE, '.'], { stdio: 'inherit' });
const size = statSync(ARCHIVE).size;
console.log(JSON.stringify({ archive: ARCHIVE, bytes: size, mib: +(size / 1024 / 1024).toFixed(1) }));
if (size > LIMIT) {
  console.error(`gpu-bench: the archive is ${(size / 1024 / 1024).toFixed(1)} MiB, above the 60 MiB limit`);
  process.exit(1);
}
