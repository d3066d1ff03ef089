#!/usr/bin/env node
// Entry point of the `webgrpo` command. The CLI is TypeScript; tsx compiles it on the fly so
// `npx webgrpo …` works right after `npm install`, with no build step to remember.
import { register } from 'tsx/esm/api';
import { fileURLToPath } from 'node:url';

register();
const main = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const { run, exitOnSignals } = await import(main);
exitOnSignals();
const code = await run(process.argv.slice(2));
process.exitCode = code ?? 0;
