// The files kept with a run in the run store (adapter, full model, checkpoint), for any viewer: each
// a download link, and a model folder also as one zip.
import { api, type ArtifactInfo } from '../api.ts';
import { downloadZip, slug } from '../downloads.ts';
import { formatBytes } from '../format.ts';
import type { RunAct } from '../use-run-data.ts';

const BUNDLE_NAMES = { adapter: 'LoRA adapter (PEFT)', model: 'fully fine-tuned model (Hugging Face layout)', checkpoint: 'trainer checkpoint (to resume)' } as const;

export function RunFiles(p: { id: string; runName: string | undefined; files: ArtifactInfo[]; training: boolean; busy: string | null; act: RunAct }) {
  const { id, files, busy, act } = p;
  const byBundle = (b: string) => files.filter((f) => f.bundle === b);
  return (
    <section className="panel files" data-testid="saved-files">
      <h3>Files kept with this run</h3>
      {files.length === 0 ? (
        <p className="muted">{p.training ? 'The trained weights and the checkpoint are kept here when the run pauses or ends.' : 'None: this run kept no weights (it ended before saving, or they were over the size limit).'}</p>
      ) : (
        <ul>
          {(['adapter', 'model', 'checkpoint'] as const).filter((b) => byBundle(b).length).map((b) => (
            <li key={b}>
              <b>{BUNDLE_NAMES[b]}</b>:{' '}
              {byBundle(b).map((f) => (
                <a key={f.name} className="file" href={api.artifactUrl(id, f.bundle, f.name)} download={f.name} data-testid={`file-${f.bundle}-${f.name}`}>{f.name} <span className="muted">({formatBytes(f.bytes)})</span></a>
              ))}
              {/* A model folder is only useful whole: one zip of it, as the training tab and the exported page offer it. */}
              {b === 'model' && (
                <button className="small" disabled={!!busy} data-testid="download-kept-model" onClick={() => act('kept-model', async () => {
                  downloadZip(`${slug(p.runName ?? 'run')}-model.zip`, await Promise.all(byBundle('model').map(async (f) => ({ name: f.name, bytes: await api.artifactBytes(id, 'model', f.name) }))));
                })}>{busy === 'kept-model' ? 'fetching…' : 'download the model (one zip)'}</button>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
