// Worker thread for `POST /api/runs/import`: parses, checks and writes an exported run through its own
// connection to the same database file, so a large import never stalls the server's event loop. It
// takes one import a message and answers each with its outcome; the server keeps it for the next
// import (runs-import.ts). Plain JavaScript so it starts without a loader; the TypeScript it needs is
// loaded through tsx.
import { parentPort } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { importRunText } = await import('./runs-import.ts');
parentPort.on('message', ({ file, text, maxJsonDepth, limits, stop }) => {
  parentPort.postMessage(importRunText(file, text, maxJsonDepth, limits, stop));
});
