// The exported run page carries the trained weights of every kind of run (issue 33): a fully fine-tuned
// run's model (the demo presets' kind) as one zip of its Hugging Face folder, under the page's size cap;
// over the cap, the model is named with its run store route, as an adapter is. Through the HTTP route,
// as the app's "export as a page" fetches it.
import http from 'node:http';
import { unzipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { EMBED_LIMIT_BYTES, renderRunPage } from '../../env-server/run-page.ts';
import { RunStore } from '../../env-server/runs.ts';
import { runsHandler, SHARE_TOKEN_HEADER } from '../../env-server/runs-http.ts';

async function pageOf(store: RunStore, id: string, shareToken: string): Promise<string> {
  const handle = runsHandler(store);
  const server = http.createServer(async (req, res) => {
    if (!(await handle(req, res))) { res.writeHead(404); res.end(); }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const port = (server.address() as { port: number }).port;
    const res = await fetch(`http://127.0.0.1:${port}/api/runs/${id}/page`, { headers: { 'sec-fetch-site': 'same-origin', [SHARE_TOKEN_HEADER]: shareToken } });
    expect(res.status).toBe(200);
    return await res.text();
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
}

/** A finished full fine-tuning run keeping `weights` as its model.safetensors. */
function fullRun(store: RunStore, weights: Buffer) {
  const run = store.create({ name: 'echo demo', config: { train_mode: 'full', max_steps: 1 }, model: { name: 'built-in demo' }, env: { name: 'echo', task: 'echo' } });
  store.appendStep(run.id, run.writeToken, { step: 0, metrics: { reward: 0.5 } });
  store.putArtifacts(run.id, run.writeToken, 'model', [
    { name: 'config.json', data: Buffer.from('{"model_type":"qwen3"}') },
    { name: 'model.safetensors', data: weights },
  ]);
  store.putArtifacts(run.id, run.writeToken, 'checkpoint', [{ name: 'trainer_state.json', data: Buffer.from('{}') }]);
  store.setStatus(run.id, run.writeToken, 'finished');
  return run;
}

const linkData = (html: string, testid: string) => {
  const m = new RegExp(`<a data-testid="${testid}" download="([^"]+)" href="data:application/zip;base64,([A-Za-z0-9+/=]+)"`).exec(html);
  return m ? { name: m[1]!, bytes: Buffer.from(m[2]!, 'base64') } : null;
};

describe('exported page: the weights of a full fine-tuning run', () => {
  it('embeds the kept model as one zip of config.json + model.safetensors', async () => {
    const store = new RunStore(':memory:');
    // About the demo model's size (420 KiB), bytes that are not all alike.
    const weights = Buffer.from(Array.from({ length: 420 * 1024 }, (_, i) => (i * 31) & 0xff));
    const run = fullRun(store, weights);
    const html = await pageOf(store, run.id, run.shareToken);
    expect(html).not.toContain('No adapter was kept');
    const link = linkData(html, 'page-model');
    expect(link?.name).toBe('echo-demo-model.zip');
    const files = unzipSync(new Uint8Array(link!.bytes));
    // The trainer checkpoint is for resuming in the app, not part of the model.
    expect(Object.keys(files).sort()).toEqual(['config.json', 'model.safetensors']);
    expect(Buffer.from(files['model.safetensors']!).equals(weights)).toBe(true);
    expect(Buffer.from(files['config.json']!).toString()).toBe('{"model_type":"qwen3"}');
  });

  it('names a model over the size cap with its run store route instead', async () => {
    const store = new RunStore(':memory:', { maxArtifactBytes: EMBED_LIMIT_BYTES * 2 });
    const run = fullRun(store, Buffer.alloc(EMBED_LIMIT_BYTES + 1));
    const html = await pageOf(store, run.id, run.shareToken);
    expect(linkData(html, 'page-model')).toBeNull();
    expect(html).toContain(`The model (${EMBED_LIMIT_BYTES + 1 + '{"model_type":"qwen3"}'.length} bytes) is over the ${EMBED_LIMIT_BYTES} bytes this page embeds`);
    expect(html).toContain(`/api/runs/${run.id}/artifacts/model/&lt;file&gt;?share=&lt;token&gt;</code> (config.json, model.safetensors)`);
  });
});

describe('exported page: step numbers', () => {
  it('numbers steps and rollouts from 1, as the app does (the API keys step 0)', async () => {
    const store = new RunStore(':memory:');
    const run = store.create({ name: 'n', config: {}, model: { name: 'm' }, env: { name: 'echo' } });
    store.appendStep(run.id, run.writeToken, { step: 0, metrics: { reward: 0.5 }, rollouts: [{ reward: 0.5, turns: [] }, { reward: 0, turns: [] }] });
    const html = renderRunPage({ run: store.get(run.id), steps: store.steps(run.id), rollouts: store.rollouts(run.id, { lastSteps: 1 }), adapter: { files: [], bytes: null } });
    expect([...html.matchAll(/<summary>([^<]*)<\/summary>/g)].map((m) => m[1])).toEqual(['step 1 · rollout 1 · reward 0.500', 'step 1 · rollout 2 · reward 0']);
    expect(html).toContain('>step 1</text>');
  });
});
