import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// Cross-origin isolation (COOP/COEP) gives the trainer worker SharedArrayBuffer and precise timers;
// the env-server sends the same headers when it serves the built app.
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

// TRL metric names come from function names (`rewards/<fn.name>/mean`) and env reward sources from
// class names: the minifier must keep them, in the page and in the trainer worker.
const keepNames = { output: { keepNames: true } };

export default defineConfig({
  plugins: [react()],
  server: { host: '127.0.0.1', headers: isolation },
  preview: { host: '127.0.0.1', headers: isolation },
  worker: { format: 'es', rolldownOptions: keepNames },
  build: { outDir: 'dist', target: 'es2022', chunkSizeWarningLimit: 4096, rolldownOptions: keepNames },
});
