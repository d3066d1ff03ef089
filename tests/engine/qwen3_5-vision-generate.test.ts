// Generation with images on the tiny Qwen3.5 VL fixture: a decode session whose prompt carries an
// image, then a later append (a tool suffix) carrying a second one, then an <|image_pad|> that is no
// image (as a sampled one would be: a text token), samples tokens whose log-probs equal a full
// score() of the same ids and images placed at the same offsets (get_rope_index over the whole sequence). That
// equality is what makes GRPO on image prompts correct: the rollout's log-probs and the trainer's
// agree, so the prefill's image splice and M-RoPE positions and the decode steps' rope delta are right.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { mropePositionIds } from '../../src/vision/image-prompt.ts';
import { onAdapter } from './helpers.ts';
import { VL_DIR, vlExpected, vlPixels } from './vl-fixture.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const config = JSON.parse(readFileSync(`${VL_DIR}config.json`, 'utf8')) as { image_token_id: number; vision_start_token_id: number; vision_end_token_id: number; vision_config: { spatial_merge_size: number } };

describe(onAdapter('Qwen3.5 VL generation with images'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  it('sampled log-probs after an image prompt, an image in a later append and a stray <|image_pad|> equal score() of the whole sequence (1e-4)', async () => {
    const engine = await loadEngine(await openCheckpoint(VL_DIR), { gpu, weightDtype: 'f32', vision: true });
    try {
      const main = vlPixels('main');
      const small = vlPixels('small');
      const [mainGrid] = vlExpected.image_grid_thw;
      const [smallGrid] = vlExpected.small_image_grid_thw;
      const pad = config.image_token_id;
      const prompt = vlExpected.input_ids;
      const seq = engine.newSequence();
      const session = engine.openDecode({ sampling: { temperature: 1, topK: 0, topP: 1, seed: 11 }, stopIds: [], maxRows: 1 });
      const sampled: { at: number; token: number; logprob: number }[] = [];
      const ids = [...prompt];
      const take = (out: { token: number; logprob: number }[]) => {
        for (const t of out) {
          sampled.push({ at: ids.length, ...t });
          ids.push(t.token);
        }
      };
      try {
        take((await session.step([{ seq, append: prompt, maxNewTokens: 4, stream: 0, images: [{ offset: prompt.indexOf(pad), pixelValues: main, grid: mainGrid! }] }], 4))[0]!);
        // A tool suffix with the small image (1 merged token) between text tokens.
        const suffix = [prompt[1]!, config.vision_start_token_id, pad, config.vision_end_token_id, prompt[2]!, prompt[3]!];
        ids.push(...suffix);
        take((await session.step([{ seq, append: suffix, maxNewTokens: 3, stream: 0, images: [{ offset: 2, pixelValues: small, grid: smallGrid! }] }], 3))[0]!);
        // The image token with no image placed on it: a text token at the next text position.
        const stray = [prompt[1]!, pad, prompt[2]!];
        ids.push(...stray);
        take((await session.step([{ seq, append: stray, maxNewTokens: 3, stream: 0 }], 3))[0]!);
      } finally {
        await session.close();
        engine.releaseSequence(seq);
      }
      expect(sampled).toHaveLength(10);
      const merge = config.vision_config.spatial_merge_size;
      const grids = [mainGrid!, smallGrid!];
      const offsets = [prompt.indexOf(pad), prompt.length + 4 + 2];
      const spans = grids.map(([t, h, w], k) => ({ from: offsets[k]!, to: offsets[k]! + (t * h * w) / (merge * merge) }));
      const types = ids.map((_, p) => (spans.some((s) => p >= s.from && p < s.to) ? 1 : 0));
      // One image token id more than the spans hold: the stray one, scored as text.
      expect(ids.filter((t) => t === pad).length).toBe(types.filter((t) => t === 1).length + 1);
      const { positions } = mropePositionIds(types, grids.map((gridThw) => ({ gridThw })), merge);
      const pixelValues = new Float32Array(main.length + small.length);
      pixelValues.set(main);
      pixelValues.set(small, main.length);
      const scored = (await engine.score({ sequences: [{ ids, scoreFrom: 1, images: { pixelValues, grids, offsets, positions } }], temperature: 1 })).logprobs[0]!;
      const diffs = sampled.map((s) => Math.abs(s.logprob - scored[s.at - 1]!));
      expect(Math.max(...diffs)).toBeLessThan(1e-4);
    } finally {
      engine.destroy();
    }
  });
});
