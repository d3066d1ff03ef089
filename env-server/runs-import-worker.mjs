// Worker thread for `POST /api/runs/import`: parses, checks and writes an exported run through its own
// connection to the same database file, so a large import never stalls the server's event loop.
// Plain JavaScript so it starts without a loader; the TypeScript it needs is loaded through tsx.
import { parentPort, workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { importRunText } = await import('./runs-import.ts');
const { file, text, maxJsonDepth, limits, stop } = workerData;
parentPort.postMessage(importRunText(file, text, maxJsonDepth, limits, stop));
