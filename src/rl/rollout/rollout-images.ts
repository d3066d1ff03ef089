// Images of a rollout for a Qwen3.5 vision-language model: how many <|image_pad|> tokens each image
// becomes (the processor's resized grid t·h·w / merge², for the rollout's ImageTokenizer), its
// pixel_values for the engine's sampling turns, and the
// engine's ScoreImages of a whole rollout (pixel_values of its images, in order, where each one's
// placeholders start, and the M-RoPE position ids of get_rope_index over prompt + completion) for
// scoring and training. Only the placed spans are image tokens: an <|image_pad|> the model sampled is text.

import type { ScoreImages } from '../../engine/types.ts';
import type { ImageTokenizer, PlacedImage } from './image-tokens.ts';
import type { RolloutImage } from './images.ts';
import { processImage, type ImageProcessorConfig, type ProcessedImage } from '../../vision/image-processor.ts';
import { mropePositionIds } from '../../vision/image-prompt.ts';
import { smartResize } from '../../vision/smart-resize.ts';

export interface RolloutVision {
  imageTokenizer: ImageTokenizer;
  /** The rollout's images as the engine takes them; undefined when its context holds none. */
  scoreImages(ids: readonly number[], images: readonly PlacedImage[]): ScoreImages | undefined;
}

export function rolloutVision(processor: ImageProcessorConfig, imageTokenId: number): RolloutVision {
  const merge = processor.mergeSize;
  const factor = processor.patchSize * merge;
  // An image is scored once per trainer pass (old logprobs, reference, each backward): process it once.
  const processed = new WeakMap<RolloutImage, ProcessedImage>();
  const process = (image: RolloutImage): ProcessedImage => {
    let p = processed.get(image);
    if (!p) {
      p = processImage(rgbOf(image), image.width, image.height, processor);
      processed.set(image, p);
    }
    return p;
  };
  return {
    imageTokenizer: {
      padTokenId: imageTokenId,
      tokensFor(image) {
        const [h, w] = processor.doResize ? smartResize(image.height, image.width, factor, processor.minPixels, processor.maxPixels) : [image.height, image.width];
        return (h / processor.patchSize / merge) * (w / processor.patchSize / merge);
      },
      engineImage(image) {
        const p = process(image);
        return { pixelValues: p.pixelValues, grid: p.gridThw };
      },
    },
    scoreImages(ids, images) {
      if (images.length === 0) return undefined;
      const done = images.map((im) => process(im.image));
      const types = new Array<number>(ids.length).fill(0);
      images.forEach((im, k) => {
        const [t, h, w] = done[k]!.gridThw;
        const n = (t * h * w) / (merge * merge);
        if (n !== im.length) throw new Error(`image ${k} (${im.image.width}×${im.image.height}) holds ${im.length} placeholder tokens but its processed grid gives ${n}`);
        for (let j = im.offset; j < im.offset + n; j++) {
          if (ids[j] !== imageTokenId) throw new Error(`image ${k}'s token ${j} is id ${ids[j]}, not the image placeholder ${imageTokenId}`);
          types[j] = 1;
        }
      });
      const grids = done.map((p) => p.gridThw);
      const { positions } = mropePositionIds(types, grids.map((gridThw) => ({ gridThw })), merge);
      const pixelValues = new Float32Array(done.reduce((a, p) => a + p.pixelValues.length, 0));
      let off = 0;
      for (const p of done) {
        pixelValues.set(p.pixelValues, off);
        off += p.pixelValues.length;
      }
      return { pixelValues, grids, offsets: images.map((im) => im.offset), positions };
    },
  };
}

function rgbOf(image: RolloutImage): Uint8Array {
  const n = image.width * image.height;
  const rgb = new Uint8Array(n * 3);
  for (let i = 0; i < n; i++) {
    rgb[i * 3] = image.rgba[i * 4]!;
    rgb[i * 3 + 1] = image.rgba[i * 4 + 1]!;
    rgb[i * 3 + 2] = image.rgba[i * 4 + 2]!;
  }
  return rgb;
}
