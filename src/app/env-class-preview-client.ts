// The page side of a preview of the user's environment class (workers/env-class-preview.ts): a fresh
// worker per preview, ended when the preview answers, is superseded (the text changed) or overruns its
// time — a module whose top level loops forever takes its worker with it, never the page.
import * as Comlink from 'comlink';
import type { EnvClassPreview, EnvClassText } from '../../workers/api.ts';

type PreviewApi = { previewEnvClass(module: EnvClassText, timeoutMs?: number): Promise<EnvClassPreview> };

/** Longest a preview may take in all (loading the worker's own code included), ms. */
const PREVIEW_DEADLINE_MS = 15_000;
/** Longest the module itself may take to load: inside the deadline, so its own error names the module. */
const MODULE_LOAD_MS = 10_000;

/** The preview of `module`; `signal` aborts it (and ends its worker) when the text changed meanwhile. */
export async function previewInWorker(module: EnvClassText, signal: AbortSignal): Promise<EnvClassPreview | null> {
  const worker = new Worker(new URL('../../workers/env-class-preview.worker.ts', import.meta.url), { type: 'module', name: 'webgrpo-env-class-preview' });
  const remote = Comlink.wrap<PreviewApi>(worker);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ended = new Promise<EnvClassPreview | null>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, error: `${module.source} did not finish loading within ${PREVIEW_DEADLINE_MS / 1000} s (a top-level loop that never ends?); its worker was stopped` }), PREVIEW_DEADLINE_MS);
    signal.addEventListener('abort', () => resolve(null), { once: true });
    worker.addEventListener('error', (e) => resolve({ ok: false, error: `the preview worker failed: ${e.message || 'it could not start'}` }));
  });
  try {
    return await Promise.race([remote.previewEnvClass(module, MODULE_LOAD_MS), ended]);
  } finally {
    clearTimeout(timer);
    remote[Comlink.releaseProxy]();
    worker.terminate();
  }
}
