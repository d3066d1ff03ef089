// Loading a model into the trainer worker, from the setup page or for a resumed run: one place that
// keeps the UI store's model, progress and error in step, and remembers where the model came from so
// a run can name it and a resume (after a reload, from the home page) can load the same one again.
import { useUi, type ModelSource } from './store.ts';
import { proxy, trainer } from './trainer-client.ts';
import type { ModelChoice, ModelInfo } from '../../workers/api.ts';

/** A model choice as a run stores it: a picked folder cannot be reopened without the user picking it again. */
export function sourceOf(choice: ModelChoice, name: string): ModelSource {
  if (choice.kind === 'hub') return { kind: 'hub', repo: choice.repo.trim(), revision: choice.revision.trim() || 'main' };
  if (choice.kind === 'files') return { kind: 'files', folder: name };
  return { kind: choice.kind };
}

export async function loadModel(choice: ModelChoice): Promise<ModelInfo> {
  const { set } = useUi.getState();
  set({ modelError: null, model: null, progress: null, modelLoading: true });
  try {
    const info = await trainer().loadModel(choice, proxy({ onProgress: (p) => useUi.getState().set({ progress: p }) }));
    set({ model: info, progress: null, modelSource: sourceOf(choice, info.name) });
    return info;
  } catch (err) {
    set({ modelError: (err as Error).message, progress: null });
    throw err;
  } finally {
    set({ modelLoading: false });
  }
}

/** Makes the run's model the loaded one: already loaded, or loaded again from where the run says it came from. */
export async function ensureRunModel(model: Record<string, unknown>): Promise<void> {
  const name = String(model.name ?? '');
  const current = useUi.getState().model;
  if (current && current.name === name) return;
  const source = model.source as ModelSource | undefined;
  if (!source || source.kind === 'files') {
    throw new Error(`This run trained ${name || 'a model'} from a local folder: load that folder on the setup page, then resume here`);
  }
  await loadModel(source.kind === 'hub' ? { kind: 'hub', repo: source.repo, revision: source.revision } : { kind: source.kind });
}
