// A loopback HTTP server for running transformers.js in headless Chromium with nothing from the
// network: /tjs/ is transformers.js's own dist, /ort/ onnxruntime-web's wasm files, /models/<name>/
// an exported model folder, / a blank page. Cross-origin isolation headers let onnxruntime-web
// use its threaded wasm build.

import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json',
  '.onnx': 'application/octet-stream', '.html': 'text/html',
};

export interface TjsServer {
  url: string;
  /** Page-side setup: imports transformers.js and points it at the local models and wasm files. */
  setupScript: string;
  close(): Promise<void>;
}

/** Serves `models` (name → folder) beside transformers.js and onnxruntime-web on 127.0.0.1. */
export async function startTjsServer(models: Record<string, string>): Promise<TjsServer> {
  // The packages' dist folders (neither exports its package.json, so resolve from the repo root).
  const modules = fileURLToPath(new URL('../../node_modules/', import.meta.url));
  const roots: Record<string, string> = {
    tjs: join(modules, '@huggingface/transformers/dist'),
    // The onnxruntime-web build transformers.js bundles (same version), for its wasm binaries.
    ort: join(modules, 'onnxruntime-web/dist'),
  };
  for (const [name, dir] of Object.entries(models)) roots[`models/${name}`] = dir;
  const server: Server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
    // The peer benchmark's engine worker (another loopback origin) fetches the model from here.
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
    if (path === '/') {
      res.setHeader('Content-Type', 'text/html');
      res.end('<!doctype html><title>transformers.js</title>');
      return;
    }
    const prefix = Object.keys(roots).sort((a, b) => b.length - a.length).find((p) => path.startsWith(`/${p}/`));
    const file = prefix ? normalize(join(roots[prefix]!, path.slice(prefix.length + 2))) : null;
    if (!prefix || !file || !file.startsWith(roots[prefix]! + sep)) {
      res.statusCode = 404;
      res.end();
      return;
    }
    try {
      const s = await stat(file);
      if (!s.isFile()) throw new Error('not a file');
      res.setHeader('Content-Type', TYPES[extname(file)] ?? 'application/octet-stream');
      res.setHeader('Content-Length', s.size);
      createReadStream(file).pipe(res);
    } catch {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('transformers.js server did not bind a TCP port');
  const url = `http://127.0.0.1:${address.port}`;
  const setupScript = `
    const tjs = await import('${url}/tjs/transformers.js');
    tjs.env.allowRemoteModels = false;
    tjs.env.allowLocalModels = true;
    // A path, not a URL: transformers.js treats a full URL here as remote and skips it.
    tjs.env.localModelPath = '/models/';
    tjs.env.useBrowserCache = false;
    tjs.env.backends.onnx.wasm.wasmPaths = { mjs: '${url}/ort/ort-wasm-simd-threaded.asyncify.mjs', wasm: '${url}/ort/ort-wasm-simd-threaded.asyncify.wasm' };
  `;
  return { url, setupScript, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
