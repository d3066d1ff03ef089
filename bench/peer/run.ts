// `webgrpo bench peer`: our engine vs transformers.js on the same model in one run, both in one
// headless Chromium. The model is exported with our ONNX exporter (a LoRA adapter merged in when
// --lora is given; our engine loads the same adapter unmerged). For each batch size: prefill tok/s
// (B·prompt tokens over one prefill + first token) and decode tok/s (B·(N−1) tokens over the rest of a
// greedy N-token generation), the ratio ours / transformers.js, and the largest |Δ log-prob| of the
// two engines on the prompt plus our greedy continuation.
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { readPeftAdapter } from '../../src/engine/peft-adapter.ts';
import { exportOnnx } from '../../src/export/onnx/export.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { loadCheckpointTokenizer } from '../../src/model/tokenizer.ts';
import { startBrowserHarness } from '../browser/harness.ts';
import { num } from '../engine/common.ts';
import type { PeerArgs, PeerSide } from './protocol.ts';
import { runTjsSide, type TjsDevice } from './tjs.ts';
import { startTjsServer } from './tjs-server.ts';

const TEXT = 'The agent reads the page, calls a tool, and reports what it found. ';

const files = (dir: string) => readdirSync(dir).filter((f) => statSync(join(dir, f)).isFile());

function rates(side: PeerSide, promptTokens: number, newTokens: number) {
  return Object.fromEntries(side.runs.map((r) => [`B${r.batch}`, {
    prefill_tok_s: (r.batch * promptTokens) / (r.prefillMs / 1000),
    decode_tok_s: (r.batch * (newTokens - 1)) / ((r.generateMs - r.prefillMs) / 1000),
    prefill_ms: r.prefillMs,
    generate_ms: r.generateMs,
  }]));
}

export async function benchPeer(opts: Record<string, string>): Promise<unknown> {
  const model = resolve(opts.model ?? 'models/demo');
  const lora = opts.lora ? resolve(opts.lora) : null;
  const promptTokens = num(opts, 'prompt', 64);
  const newTokens = num(opts, 'tokens', 32);
  if (newTokens < 2) throw new Error('bench peer: --tokens must be at least 2 (decode speed is measured after the first)');
  const batches = (opts.batches ?? '1,8').split(',').map((b) => num({ b }, 'b', 1));
  const device = (opts.device ?? 'webgpu') as TjsDevice;
  if (!['webgpu', 'wasm'].includes(device)) throw new Error(`bench peer: --device must be webgpu or wasm, got '${device}'`);

  const ckpt = await openCheckpoint(model);
  if (files(model).some((f) => f.endsWith('.index.json'))) throw new Error('bench peer: sharded checkpoints are not supported (the browser side fetches model.safetensors whole)');
  const tokenizer = await loadCheckpointTokenizer(ckpt, model);
  let text = TEXT;
  while (tokenizer.encode(text).length < promptTokens) text += TEXT;
  const promptIds = tokenizer.encode(text).slice(0, promptTokens);

  const out = mkdtempSync(join(tmpdir(), 'bench-peer-'));
  const server = await startTjsServer({ src: model, exported: out, ...(lora ? { lora } : {}) });
  const harness = await startBrowserHarness();
  try {
    const exported = await exportOnnx(ckpt, lora ? { adapter: await readPeftAdapter(lora, ckpt.config) } : {});
    for (const f of exported) {
      mkdirSync(dirname(join(out, f.name)), { recursive: true });
      writeFileSync(join(out, f.name), f.bytes);
    }
    const args: PeerArgs = {
      modelUrl: `${server.url}/models/src`,
      modelFiles: files(model),
      loraUrl: lora ? `${server.url}/models/lora` : null,
      loraFiles: lora ? files(lora) : [],
      promptIds,
      newTokens,
      batches,
      reps: num(opts, 'reps', 2),
      scoreIds: promptIds,
    };
    const ours = await harness.runInWorker<PeerSide>('bench/peer/engine.entry.ts', args);
    const scoreIds = [...promptIds, ...ours.greedy];
    const oursScored = await harness.runInWorker<PeerSide>('bench/peer/engine.entry.ts', { ...args, batches: [], scoreIds });
    // Then the same tab moves to the loopback server's origin (transformers.js reads local models by path).
    await harness.page.goto(server.url);
    const theirs = await runTjsSide(harness.page, server, 'exported', device, { ...args, scoreIds });

    const a = rates(ours, promptTokens, newTokens);
    const b = rates(theirs, promptTokens, newTokens);
    const ratio = Object.fromEntries(Object.keys(a).map((k) => [k, {
      prefill: a[k]!.prefill_tok_s / b[k]!.prefill_tok_s,
      decode: a[k]!.decode_tok_s / b[k]!.decode_tok_s,
    }]));
    let maxDiff = 0;
    oursScored.logprobs.forEach((lp, i) => (maxDiff = Math.max(maxDiff, Math.abs(lp - theirs.logprobs[i]!))));
    return {
      model: opts.model ?? 'models/demo',
      lora_adapter: opts.lora ?? null,
      prompt_tokens: promptTokens,
      new_tokens: newTokens,
      sampling: 'greedy',
      ours: { device: ours.device, ...a },
      transformers_js: { version: '4.3.2', device: theirs.device, model: 'onnx/model.onnx (fp32, webgrpo export)', ...b },
      ratio_ours_over_transformers_js: ratio,
      // Both ran on the same WebGPU adapter in the same browser only when transformers.js used WebGPU.
      same_adapter: device === 'webgpu',
      software_adapter: ours.software ?? null,
      logprob_max_abs_diff: maxDiff,
      logprob_tokens: oursScored.logprobs.length,
    };
  } finally {
    await harness.close();
    await server.close();
    rmSync(out, { recursive: true, force: true });
  }
}
