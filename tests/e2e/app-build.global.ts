// The browser project's global setup: the web UI built once with Vite for every file that serves the
// app (tests/e2e/app-server.ts), instead of once per file (about 15 s of CPU each, eleven files). The
// build goes to a temporary folder that the files only read; it is removed when the run ends.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildAppInto } from './app-server.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The built web UI, shared by the project's files; '' where no global setup built it. */
    appDist: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-e2e-dist-'));
  const dist = path.join(work, 'dist');
  await buildAppInto(dist);
  project.provide('appDist', dist);
  return () => fs.rmSync(work, { recursive: true, force: true });
}
