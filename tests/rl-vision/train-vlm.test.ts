// GRPO on a tiny Qwen3.5 vision-language model over /envs/browsergym (browsergym-vlm): the screenshots
// the env returns are expanded to the processor's token count in the rollouts, the engine samples the
// turn after a screenshot with the screenshot embedded, and the trainer scores and trains every rollout
// with its images (pixel_values, where each sits, M-RoPE positions). The first turn's tool call is
// scripted (a random tiny model never writes one, so it would never see a screenshot); every later turn
// is the engine's. The scripted turn also "samples" an <|image_pad|> of its own, as a random or early
// model can: that token is text, trained like any sampled token, and must not be taken for an image.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createBrowserGymEnv, type BrowserGymEnvDefinition } from '../../env-server/envs/browsergym/index.ts';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { loadEngine, type WebGpuEngine } from '../../src/engine/engine.ts';
import type { GenerateOutput, GenerateRequest, ScoreRequest } from '../../src/engine/types.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { loadCheckpointTokenizer } from '../../src/model/tokenizer.ts';
import { configFromObject } from '../../src/rl/config.ts';
import { trainGRPO, type GrpoStepEvent } from '../../src/rl/grpo/trainer.ts';
import { envRolloutSource } from '../../src/rl/rollout/rollout-source.ts';
import type { Rollout, RolloutEngine } from '../../src/rl/rollout/rollout.ts';
import { trainableMode } from '../../src/rl/run.ts';
import { bindTask, builtinEnvUrls, resolveTask } from '../../src/rl/tasks/resolve-task.ts';
import { checkpointVision } from '../../src/rl/rollout/checkpoint-vision.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

let dir = '';
let server: EnvServer | undefined;
let def: BrowserGymEnvDefinition | undefined;
let engine: WebGpuEngine | undefined;
afterAll(async () => {
  engine?.destroy();
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// Qwen3.5's XML tool-call form (its chat template's own), after a sampled image token that is no image.
const CLICK = '<|image_pad|><tool_call>\n<function=click>\n<parameter=bid>\n13\n</parameter>\n</function>\n</tool_call>';

/**
 * The engine for rollouts, except that a turn appending no image (the first: its prompt is text) answers
 * `script` without sampling; those tokens join the sequence with its next append. Lockstep scheduler only.
 */
function scriptedFirstTurn(engine: WebGpuEngine, script: number[]): RolloutEngine {
  const carry = new Map<number, number[]>();
  return {
    config: engine.config,
    newSequence: () => engine.newSequence(),
    releaseSequence: (seq) => engine.releaseSequence(seq),
    openDecode: () => { throw new Error('scriptedFirstTurn: lockstep only'); },
    async generate(req: GenerateRequest): Promise<GenerateOutput[]> {
      const real = req.items.filter((it) => it.images);
      const outs = real.length === 0 ? [] : await engine.generate({
        ...req,
        items: real.map((it) => {
          const before = carry.get(it.seq.id) ?? [];
          carry.delete(it.seq.id);
          return { ...it, append: [...before, ...it.append], images: it.images!.map((im) => ({ ...im, offset: im.offset + before.length })) };
        }),
      });
      return req.items.map((it) => {
        if (it.images) return outs.shift()!;
        carry.set(it.seq.id, [...(carry.get(it.seq.id) ?? []), ...it.append, ...script]);
        return { tokens: [...script], logprobs: script.map(() => 0), finishReason: 'stop' as const };
      });
    },
  };
}

describe('GRPO on a tiny Qwen3.5 VL with browsergym-vlm', () => {
  it('rollouts carry the screenshots at their placeholders; the trainer scores and trains them with the images', async () => {
    dir = await mkdtemp(join(tmpdir(), 'webgrpo-train-vlm-'));
    const model = join(dir, 'model');
    await mkdir(model);
    // head_dim 32 × partial_rotary 0.5: 8 rotary pairs, so mrope_section gives every axis (t, h, w) some.
    const files = await makeTinyCheckpointFiles({ arch: 'qwen3_5', vision: true, seed: 7, hidden: 32, layers: 2, layerTypes: ['linear_attention', 'full_attention'], heads: 2, kvHeads: 1, headDim: 32, partialRotary: 0.5, intermediate: 64 });
    for (const [name, bytes] of files) await writeFile(join(model, name), bytes);
    const ckpt = await openCheckpoint(model);
    // The tiny VL renders with Qwen3.5's chat template (make-tiny-model --vision writes it): image blocks, XML tool calls.
    const vision = (await checkpointVision(ckpt, 'test'))!;
    const tokenizer = await loadCheckpointTokenizer(ckpt, model);

    def = createBrowserGymEnv({ actionTimeoutMs: 10_000, axtree: 'classic' }, {});
    server = await createEnvServer({ port: 0, envs: { browsergym: def } });
    const task = bindTask(await resolveTask({ env: 'browsergym-vlm:click-test' }), { builtinUrls: builtinEnvUrls(server.url), tokenizer, readsImages: true, datasetSize: 1 });

    const config = configFromObject({
      num_generations: 2, per_device_train_batch_size: 2, gradient_accumulation_steps: 1, max_completion_length: 200, max_steps: 1,
      learning_rate: 1e-2, train_mode: 'lora', lora_r: 4, lora_alpha: 8, entropy_coef: 0.01, rollout_scheduler: 'lockstep',
      // LoRA on the vision tower too: the step trains through the merger and the blocks.
      vision_lora_target_modules: ['attn.qkv', 'merger.linear_fc2'],
      chat_template_kwargs: { enable_thinking: false },
      seed: 1,
    });
    engine = await loadEngine(ckpt, { weightDtype: 'f32', vision: true, plan: { numSequences: 2, maxTokensPerSequence: 1024 } });
    engine.setTrainable(trainableMode(config));
    const source = envRolloutSource({
      engine: scriptedFirstTurn(engine, tokenizer.encode(CLICK + '<|im_end|>')), tokenizer, envFactory: task.envFactory, episodes: task.episodes, config, template: task.template,
      maxBatchSize: 2, imageTokenizer: vision.imageTokenizer,
    });
    const played: Rollout[] = [];
    const sampledVsScored: number[] = [];
    const scored: ScoreRequest[] = [];
    const real = engine;
    const spied = new Proxy(real, {
      get(target, key) {
        if (key === 'score' || key === 'backward') return (req: ScoreRequest) => { scored.push(req); return (target[key] as (r: ScoreRequest) => unknown).call(target, req); };
        const v = Reflect.get(target, key);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const events: GrpoStepEvent[] = [];
    try {
      for await (const e of trainGRPO({
        engine: spied, config, dataset: task.dataset, rewardFuncs: task.rewardFuncs, imageInputs: vision.scoreImages,
        rollouts: async (req) => {
          const r = await source.rollouts(req);
          played.push(...r);
          // Before any step: the log-probs the engine sampled with (after the screenshot) are the scorer's.
          const out = await real.score({ sequences: r.map((x) => ({ ids: [...x.promptIds, ...x.completionIds], scoreFrom: x.promptIds.length, images: vision.scoreImages([...x.promptIds, ...x.completionIds], x.images)! })), temperature: config.temperature });
          r.forEach((x, i) => {
            const after = x.images[0]!.offset - x.promptIds.length;
            x.logprobs.forEach((lp, t) => { if (t > after && x.toolMask[t] === 1) sampledVsScored.push(Math.abs(lp - out.logprobs[i]![t]!)); });
          });
          return r;
        },
      })) events.push(e);
    } finally {
      await source.close();
    }

    expect(played).toHaveLength(2);
    const pad = ckpt.config.vision!.imageTokenId;
    for (const r of played) {
      expect(r.images.length, 'screenshots in the context').toBeGreaterThanOrEqual(1);
      const ids = [...r.promptIds, ...r.completionIds];
      for (const im of r.images) {
        // The processor's token count for a ≤ 512-pixel screenshot under the tiny max_pixels (128²): more than the one template placeholder.
        expect(im.length).toBe(vision.imageTokenizer.tokensFor(im.image));
        expect(im.length).toBeGreaterThan(1);
        expect(ids.slice(im.offset, im.offset + im.length).every((t) => t === pad)).toBe(true);
        expect(r.toolMask.slice(im.offset - r.promptIds.length, im.offset - r.promptIds.length + im.length).every((m) => m === 0)).toBe(true);
      }
      // The sampled <|image_pad|>: outside every image's span, and trained (tool_mask 1) like the tokens around it.
      const inImage = (p: number) => r.images.some((im) => p >= im.offset && p < im.offset + im.length);
      const stray = ids.flatMap((t, p) => (t === pad && !inImage(p) ? [p] : []));
      expect(stray.length, 'sampled image tokens').toBeGreaterThanOrEqual(1);
      for (const p of stray) expect(r.toolMask[p - r.promptIds.length]).toBe(1);
      // Only the placed images' tokens are masked as images: every other masked token is a tool suffix's text.
      expect(r.completionIds.filter((t, c) => t === pad && r.toolMask[c] === 0).length).toBe(r.images.reduce((n, im) => n + im.length, 0));
    }
    // Every pass of the trainer over the rollouts (logprobs and the backward) carried their images.
    expect(scored.length).toBeGreaterThan(0);
    expect(scored.some((req) => 'dLdLogp' in req), 'a backward pass').toBe(true);
    for (const req of scored) {
      for (const s of req.sequences) {
        expect(s.images, 'images of a scored sequence').toBeDefined();
        expect(s.images!.positions[0]).toHaveLength(s.ids.length);
        // Images are placed where the rollout put them, not at every image token id.
        const r = played.find((x) => x.promptIds.length + x.completionIds.length === s.ids.length && [...x.promptIds, ...x.completionIds].every((t, i) => t === s.ids[i]))!;
        expect(s.images!.offsets).toEqual(r.images.map((im) => im.offset));
        // M-RoPE: the image tokens' height/width positions differ from their temporal ones.
        expect(s.images!.positions[1].some((p, i) => p !== s.images!.positions[2][i])).toBe(true);
      }
    }
    expect(sampledVsScored.length, 'tokens sampled after a screenshot').toBeGreaterThan(0);
    expect(Math.max(...sampledVsScored)).toBeLessThan(1e-4);
    expect(events).toHaveLength(1);
    const m = events[0]!.metrics as Record<string, number>;
    for (const key of ['loss', 'entropy', 'grad_norm']) expect(Number.isFinite(m[key]), key).toBe(true);
    expect(m.grad_norm).toBeGreaterThan(0);
    // The tower's adapters (B starts at zero) moved in the step.
    const state = (await engine.saveState()).tensors.filter((t) => t.name.startsWith('model.visual.') && t.name.endsWith('.lora_B.weight'));
    expect(state.map((t) => t.name)).toEqual(['model.visual.blocks.0.attn.qkv.lora_B.weight', 'model.visual.blocks.1.attn.qkv.lora_B.weight', 'model.visual.merger.linear_fc2.lora_B.weight']);
    for (const t of state) expect(Math.max(...t.data.map(Math.abs)), t.name).toBeGreaterThan(0);
    expect(def.browser.contexts).toBe(0);
  });
});
