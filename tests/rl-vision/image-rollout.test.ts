// Multimodal tool results in the rollout: TRL's content blocks rendered through a chat template that
// writes Qwen3.5's `<|vision_start|><|image_pad|><|vision_end|>` per image, each placeholder expanded
// by the vision side's hook (a fake one here: the engine side is not part of these tests), the image
// positions recorded and masked from the loss, and max_context_images dropping the oldest screenshots.

import { describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/rl/config.ts';
import type { DatasetRow, Tool, ToolEnv } from '../../src/rl/rollout/env.ts';
import { DROPPED_IMAGE_TEXT, expandImagePlaceholders, type ImageTokenizer } from '../../src/rl/rollout/image-tokens.ts';
import type { ContentBlock, RolloutImage } from '../../src/rl/rollout/images.ts';
import { runRollouts, type RolloutConfig } from '../../src/rl/rollout/rollout.ts';
import { QWEN3_TRAINING_TEMPLATE } from '../../src/rl/rollout/templates/qwen3-training.ts';
import { callText, FakeEngine } from '../rl-rollout/fake-engine.ts';
import { SamplingFakeEngine } from '../rl-rollout/sampling-engine.ts';
import { qwen3Tokenizer } from '../rl-rollout/qwen3-tokenizer.ts';

const tok = qwen3Tokenizer();
const EOS = '<|im_end|>';
const PAD = tok.tokenToId('<|image_pad|>')!;
const START = tok.tokenToId('<|vision_start|>')!;
const END = tok.tokenToId('<|vision_end|>')!;

// The training template with list content rendered as Qwen3.5's template renders it (images as
// placeholders, text blocks as their text) — Qwen3's own drops non-string content.
const VISION_TEMPLATE = QWEN3_TRAINING_TEMPLATE.replace(
  "{%- set content = '' %}",
  "{%- set parts = namespace(text='') %}{%- for item in message.content %}{%- if item.type == 'image' %}{%- set parts.text = parts.text + '<|vision_start|><|image_pad|><|vision_end|>' %}{%- elif item.type == 'text' %}{%- set parts.text = parts.text + item.text %}{%- endif %}{%- endfor %}{%- set content = parts.text %}",
);
if (VISION_TEMPLATE === QWEN3_TRAINING_TEMPLATE) throw new Error('the training template changed: update VISION_TEMPLATE');

function image(width: number, height: number, shade: number): RolloutImage {
  return { width, height, rgba: new Uint8Array(width * height * 4).fill(shade) };
}

/** A fake processor: one token per 2×2 block of pixels (rounded up). */
const FAKE_EXPANSION: ImageTokenizer = { padTokenId: PAD, tokensFor: (im) => Math.ceil(im.width / 2) * Math.ceil(im.height / 2) };

/** `look()` returns a screenshot (4×2, then 6×4, 2×2, …) and the step number as text. */
class ScreenEnv implements ToolEnv {
  step = 0;
  readonly shots: RolloutImage[] = [image(4, 2, 10), image(6, 4, 20), image(2, 2, 30), image(4, 4, 40)];
  readonly tools: Tool[] = [
    {
      declaration: { name: 'look', description: 'Look at the page.', parameters: [] },
      call: (): ContentBlock[] => [{ type: 'image', image: this.shots[this.step++ % this.shots.length]! }, { type: 'text', text: `page ${this.step}` }],
    },
  ];
  reset(_row: DatasetRow): string | null {
    this.step = 0;
    return null;
  }
}

function config(overrides: Partial<RolloutConfig> = {}): RolloutConfig {
  return { max_completion_length: 2048, temperature: 1, top_p: 1, top_k: 0, chat_template_kwargs: { enable_thinking: false }, rollout_scheduler: 'lockstep', ...overrides };
}

/** Calls look() `calls` times, then answers; records the context each turn starts from (decode steps ask again mid-turn). */
function looker(calls: number, contexts: string[]) {
  return (context: string): string => {
    const turn = context.split('<|im_start|>assistant\n').length - 2;
    if (contexts.length === turn) contexts.push(context);
    return turn < calls ? callText('look', {}) + EOS : 'Done.' + EOS;
  };
}

const ROWS: DatasetRow[] = [{ prompt: [{ role: 'user', content: 'Look.' }] }];

describe('images in rollouts', () => {
  it('placeholders expanded by the hook, placed where they sit, and never trained (tool_mask 0)', async () => {
    const env = new ScreenEnv();
    const engine = new FakeEngine(tok, looker(2, []));
    const [r] = await runRollouts({ engine, tokenizer: tok, rows: ROWS, envFactory: () => env, config: config(), seed: 1, template: VISION_TEMPLATE, imageTokenizer: FAKE_EXPANSION });
    expect(r!.error).toBeUndefined();
    const seq = [...r!.promptIds, ...r!.completionIds];
    const P = r!.promptIds.length;
    expect(r!.images.map((p) => [p.image, p.length])).toEqual([[env.shots[0], 2], [env.shots[1], 6]]);
    for (const p of r!.images) {
      expect(seq.slice(p.offset, p.offset + p.length).every((id) => id === PAD)).toBe(true);
      expect([seq[p.offset - 1], seq[p.offset + p.length]]).toEqual([START, END]);
      expect(r!.toolMask.slice(p.offset - P, p.offset - P + p.length).every((m) => m === 0)).toBe(true);
    }
    // Only the images' own runs are placeholders; the tool messages keep their images.
    expect(seq.filter((id) => id === PAD)).toHaveLength(8);
    expect(r!.completion.filter((m) => m.role === 'tool').map((m) => (m.content as ContentBlock[])[0])).toEqual([{ type: 'image', image: env.shots[0] }, { type: 'image', image: env.shots[1] }]);
  });

  it('a text-only template renders no placeholders: nothing is placed', async () => {
    const engine = new FakeEngine(tok, looker(1, []));
    const [r] = await runRollouts({ engine, tokenizer: tok, rows: ROWS, envFactory: () => new ScreenEnv(), config: config(), seed: 1, template: QWEN3_TRAINING_TEMPLATE, imageTokenizer: FAKE_EXPANSION });
    expect(r!.images).toEqual([]);
    expect(r!.completionIds).not.toContain(PAD);
  });

  for (const scheduler of ['lockstep', 'continuous'] as const) {
    it(`max_context_images 2 (${scheduler}): the oldest screenshot becomes a marker, the context restarts on a new sequence`, async () => {
      const contexts: string[] = [];
      const engine = new SamplingFakeEngine(tok, (context) => [looker(3, contexts)(context)]);
      let sequences = 0;
      const newSequence = engine.newSequence.bind(engine);
      engine.newSequence = () => (sequences++, newSequence());
      const [r] = await runRollouts({
        engine, tokenizer: tok, rows: ROWS, envFactory: () => new ScreenEnv(), config: config({ rollout_scheduler: scheduler, max_context_images: 2 }), seed: 1, template: VISION_TEMPLATE, imageTokenizer: FAKE_EXPANSION,
      });
      expect(r!.error).toBeUndefined();
      // Turns 0–2 saw 0, 1, 2 screenshots; the last turn 2 (the first one dropped) and the marker.
      expect(contexts.map((c) => c.split('<|vision_start|>').length - 1)).toEqual([0, 1, 2, 2]);
      expect(contexts[3]).toContain(`<tool_response>\n${DROPPED_IMAGE_TEXT}page 1\n</tool_response>`);
      const seq = [...r!.promptIds, ...r!.completionIds];
      expect(r!.images.map((p) => p.length)).toEqual([6, 1]);
      for (const p of r!.images) expect(seq.slice(p.offset - 1, p.offset + p.length + 1)).toEqual([START, ...Array(p.length).fill(PAD), END]);
      // The final sequence is what the model saw last, on a second engine sequence; the arrays stay aligned.
      expect(tok.decode(seq)).toBe(contexts[3] + 'Done.' + EOS);
      expect(sequences).toBe(2);
      expect(engine.liveSequences).toBe(0);
      expect([r!.toolMask.length, r!.logprobs.length, r!.stubbornMask.length]).toEqual([r!.completionIds.length, r!.completionIds.length, r!.completionIds.length]);
      // The marker, like every suffix token, is not trained and has no log-prob.
      expect(r!.logprobs.filter((lp, t) => r!.toolMask[t] === 0 && lp !== 0)).toEqual([]);
      expect(tok.decode(r!.completionIds.filter((_, t) => r!.toolMask[t] === 1))).toBe(`${(callText('look', {}) + EOS).repeat(3)}Done.${EOS}`);
    });
  }

  it('max_context_images 0 drops every screenshot, also the one just returned', async () => {
    const engine = new FakeEngine(tok, looker(1, []));
    const [r] = await runRollouts({ engine, tokenizer: tok, rows: ROWS, envFactory: () => new ScreenEnv(), config: config({ max_context_images: 0 }), seed: 1, template: VISION_TEMPLATE, imageTokenizer: FAKE_EXPANSION });
    expect(r!.images).toEqual([]);
    expect(tok.decode(r!.completionIds)).toContain(`<tool_response>\n${DROPPED_IMAGE_TEXT}page 1\n</tool_response>`);
  });

  it('refuses placeholders that do not match the images, and a bad cap', async () => {
    expect(() => expandImagePlaceholders([PAD, 5, PAD], [image(2, 2, 0)], FAKE_EXPANSION)).toThrow('the chat template rendered 2 image placeholders for 1 images');
    expect(() => expandImagePlaceholders([PAD], [image(2, 2, 0)], { padTokenId: PAD, tokensFor: () => 0 })).toThrow(/given 0 placeholder tokens/);
    // The cap is checked once, by the config (src/rl/config.ts).
    expect(() => configFromObject({ max_context_images: -1 })).toThrow('max_context_images: must be ≥ 0, got -1');
  });
});
