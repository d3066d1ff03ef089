// runRollouts on the real WebGPU engine (tiny random model, byte tokenizer, SwiftShader in CI): one
// batch of sequences through the KV cache, budget respected, and the sampling log-probs the rollout
// records agree with what engine.score computes for the same ids (the trainer relies on both).

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { loadTokenizer, type TextTokenizer } from '../../src/model/tokenizer.ts';
import type { ToolEnv } from '../../src/rl/rollout/env.ts';
import { runRollouts } from '../../src/rl/rollout/rollout.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

// Qwen3.5 too: its Gated DeltaNet layers keep a per-sequence state that sequences joining and
// leaving the continuous scheduler's batches must not disturb.
describe.each(['qwen3', 'qwen3_5'] as const)('runRollouts on the WebGPU engine (%s)', (arch) => {
  let engine: WebGpuEngine;
  let tok: TextTokenizer;

  beforeAll(async () => {
    const tiny = await makeTinyModel({ seed: 1, arch });
    engine = await loadEngine(await openCheckpoint(tiny.files), { weightDtype: 'f32' });
    const text = (name: string) => new TextDecoder().decode(tiny.files.get(name)!);
    tok = loadTokenizer(text('tokenizer.json'), text('tokenizer_config.json'));
  });

  afterAll(() => engine?.destroy());

  it('samples a batch within the budget; recorded log-probs match engine.score', async () => {
    const env: ToolEnv = {
      reset: () => '\nobs',
      tools: [{ declaration: { name: 'echo', description: 'Echo.', parameters: [{ name: 'message', type: 'string', description: 'm' }] }, call: (a) => a.message }],
    };
    const rows = [0, 1, 2].map(() => ({ prompt: [{ role: 'user' as const, content: 'say hi' }] }));
    const config = { max_completion_length: 16, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep' as const };
    const rollouts = await runRollouts({ engine, tokenizer: tok, rows, envFactory: () => env, config, seed: 3 });
    expect(rollouts).toHaveLength(3);
    for (const r of rollouts) {
      expect(r.completionIds.length).toBeGreaterThan(0);
      expect(r.completionIds.length).toBeLessThanOrEqual(16);
      expect(r.toolMask).toHaveLength(r.completionIds.length);
      expect(r.truncated).toBe(r.completionIds[r.completionIds.length - 1] !== tok.eosTokenId);
      expect(tok.decode(r.promptIds)).toContain('<|im_start|>user\nsay hi\nobs<|im_end|>');
    }
    // Different samples for the same prompt (one seed per batch, not per row).
    expect(new Set(rollouts.map((r) => r.completionIds.join(','))).size).toBeGreaterThan(1);
    const scored = await engine.score({
      sequences: rollouts.map((r) => ({ ids: [...r.promptIds, ...r.completionIds], scoreFrom: r.promptIds.length })),
      temperature: 1,
    });
    rollouts.forEach((r, i) => {
      r.logprobs.forEach((lp, t) => {
        if (r.toolMask[t] === 1) expect(Math.abs(lp - scored.logprobs[i]![t]!)).toBeLessThan(1e-4);
      });
    });
  });

  it('lockstep and continuous scheduling sample token-identical rollouts on the real engine', async () => {
    // A deterministic env that answers after a latency that differs per episode, so the continuous
    // scheduler decodes the episodes in different batch compositions than lockstep does.
    let calls = 0;
    const envFactory = () => {
      let slot = 0;
      const env: ToolEnv = {
        reset: (row) => {
          slot = row.slot as number;
          return null;
        },
        tools: [{ declaration: { name: 'echo', description: 'Echo.', parameters: [{ name: 'message', type: 'string', description: 'm' }] }, call: async (a) => {
          calls++;
          await new Promise((r) => setTimeout(r, 3 * slot));
          return a.message;
        } }],
      };
      return env;
    };
    const rows = [0, 1, 2, 3].map((slot) => ({ prompt: [{ role: 'user' as const, content: 'say hi' }], slot }));
    const config = { max_completion_length: 24, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false } };
    const lock = await runRollouts({ engine, tokenizer: tok, rows, envFactory, config: { ...config, rollout_scheduler: 'lockstep' }, seed: 5 });
    const cont = await runRollouts({ engine, tokenizer: tok, rows, envFactory, config: { ...config, rollout_scheduler: 'continuous' }, seed: 5, maxBatchSize: 3 });
    expect(cont.map((r) => r.completionIds)).toEqual(lock.map((r) => r.completionIds));
    cont.forEach((r, i) => r.logprobs.forEach((lp, t) => expect(Math.abs(lp - lock[i]!.logprobs[t]!)).toBeLessThan(1e-5)));
    expect(calls).toBe(0); // a random tiny model does not produce tool calls: single-turn identity only
  }, 120_000);
});
