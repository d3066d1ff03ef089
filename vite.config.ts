import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';

// Cross-origin isolation (COOP/COEP) gives the trainer worker SharedArrayBuffer and precise timers;
// the env-server sends the same headers when it serves the built app.
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

// TRL metric names come from function names (`rewards/<fn.name>/mean`) and env reward sources from
// class names: the minifier must keep them, in the page and in the trainer worker. Rolldown's plugin
// timings warning is off: on a busy machine Vite's own worker-bundling plugin takes most of any build
// (`npm start` builds on first run), which is the machine's load, not a fault of the build.
const rolldownOptions = { output: { keepNames: true }, checks: { bundlerTimings: false } };

/**
 * The modules shared with the CLI reach Node's built-ins and Dawn's `webgpu` binding only on their
 * Node paths (behind `isNode`: a checkpoint folder, the download cache, Dawn): the page and the worker
 * never load them. Left external, they stay the imports they are, instead of Vite swapping in its
 * browser stub and warning about each ("externalized for browser compatibility").
 */
const NODE_ONLY = /^(node:|webgpu$)/;
function nodeOnlyImports(): Plugin {
  return { name: 'webgrpo:node-only-imports', enforce: 'pre', resolveId: (id) => (NODE_ONLY.test(id) ? { id, external: true } : null) };
}

export default defineConfig({
  plugins: [nodeOnlyImports(), react()],
  server: { host: '127.0.0.1', headers: isolation },
  preview: { host: '127.0.0.1', headers: isolation },
  worker: { format: 'es', plugins: () => [nodeOnlyImports()], rolldownOptions },
  build: { outDir: 'dist', target: 'es2022', chunkSizeWarningLimit: 4096, rolldownOptions },
});
