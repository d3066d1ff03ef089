// The transformers.js side of the peer benchmark: a page script (run through page.evaluate on the
// loopback server of tjs-server.ts) that loads the exported folder and times greedy generation the
// way engine.entry.ts times ours, plus the log-probs of one sequence from a plain forward.
import type { Page } from 'playwright-core';
import type { PeerArgs, PeerSide } from './protocol.ts';
import type { TjsServer } from './tjs-server.ts';

export type TjsDevice = 'webgpu' | 'wasm';

export async function runTjsSide(page: Page, server: TjsServer, model: string, device: TjsDevice, args: PeerArgs): Promise<PeerSide> {
  const a = JSON.stringify({ model, device, promptIds: args.promptIds, newTokens: args.newTokens, batches: args.batches, reps: args.reps, scoreIds: args.scoreIds });
  return page.evaluate(`(async () => {
    ${server.setupScript}
    const a = ${a};
    const lm = await tjs.AutoModelForCausalLM.from_pretrained(a.model, { device: a.device });
    const ids = (rows, row) => new tjs.Tensor('int64', BigInt64Array.from(Array.from({ length: rows }, () => row).flat().map(BigInt)), [rows, row.length]);
    const ones = (rows, len) => new tjs.Tensor('int64', new BigInt64Array(rows * len).fill(1n), [rows, len]);
    // min_new_tokens keeps eos from ending a run early, so every run decodes the same count.
    const generate = async (batch, n) => {
      const t0 = performance.now();
      const out = await lm.generate({ input_ids: ids(batch, a.promptIds), attention_mask: ones(batch, a.promptIds.length), max_new_tokens: n, min_new_tokens: n, do_sample: false });
      const ms = performance.now() - t0;
      return { ms, tokens: out.tolist()[0].map(Number).slice(a.promptIds.length) };
    };
    const fastest = async (run) => {
      let best = await run();
      for (let i = 1; i < a.reps; i++) {
        const next = await run();
        if (next.ms < best.ms) best = next;
      }
      return best;
    };
    const runs = [];
    let greedy = [];
    for (const batch of a.batches) {
      await generate(batch, 2);
      const first = await fastest(() => generate(batch, 1));
      const full = await fastest(() => generate(batch, a.newTokens));
      if (batch === 1) greedy = full.tokens;
      runs.push({ batch, prefillMs: first.ms, generateMs: full.ms });
    }
    const { logits } = await lm({ input_ids: ids(1, a.scoreIds), attention_mask: ones(1, a.scoreIds.length) });
    const data = logits.data;
    const V = logits.dims[2];
    const logprobs = [];
    for (let t = 1; t < a.scoreIds.length; t++) {
      const row = data.subarray((t - 1) * V, t * V);
      let max = -Infinity;
      for (const x of row) max = Math.max(max, x);
      let sum = 0;
      for (const x of row) sum += Math.exp(x - max);
      logprobs.push(row[a.scoreIds[t]] - max - Math.log(sum));
    }
    await lm.dispose();
    return { device: a.device === 'webgpu' ? 'onnxruntime-web WebGPU EP' : 'onnxruntime-web wasm', runs, greedy, logprobs };
  })()`);
}
