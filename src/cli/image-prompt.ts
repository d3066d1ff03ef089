// `score --image --text`'s prompt: one user message (the image, then the text) rendered by the model's
// chat template, its <|image_pad|> expanded to the image's t·h·w/merge² tokens as Qwen3VLProcessor
// does (in id space: the pad is an added token, so expanding the text or the ids gives the same ids),
// and the M-RoPE position ids of transformers' get_rope_index (src/vision/image-prompt.ts).

import { readFile } from 'node:fs/promises';
import { renderChat, type ChatMessage } from '../model/chat-template.ts';
import { loadCheckpointTokenizer, type TextTokenizer } from '../model/tokenizer.ts';
import type { OpenedCheckpoint } from '../model/checkpoint.ts';
import type { GridThw } from '../engine/vision/inputs.ts';
import type { ScoreImages } from '../engine/types.ts';
import { decodePng } from '../vision/png.ts';
import { processImage } from '../vision/image-processor.ts';
import { loadImageProcessor } from '../vision/processor-files.ts';
import { expandImageTokens, mropePositionIds } from '../vision/image-prompt.ts';

export interface ImagePrompt {
  ids: number[];
  /** Where the image's tokens start in ids. */
  offsets: number[];
  positions: [number[], number[], number[]];
}

export function imagePrompt(tokenizer: TextTokenizer, text: string, grid: GridThw, cfg: { imageTokenId: number; spatialMergeSize: number }): ImagePrompt {
  const template = tokenizer.chatTemplate;
  if (!template) throw new Error('--image needs the model\'s chat template (chat_template.jinja or tokenizer_config.json chat_template)');
  // transformers' multimodal message form: a list of content blocks.
  const message = { role: 'user', content: [{ type: 'image' }, { type: 'text', text }] } as unknown as ChatMessage;
  const rendered = tokenizer.encode(renderChat(template, [message], { addGenerationPrompt: true }));
  const images = [{ gridThw: [grid[0], grid[1], grid[2]] as [number, number, number] }];
  const { ids, mmTokenTypeIds, offsets } = expandImageTokens(rendered, images, cfg.imageTokenId, cfg.spatialMergeSize);
  return { ids, offsets, positions: mropePositionIds(mmTokenTypeIds, images, cfg.spatialMergeSize).positions };
}

/** ids and images of `score --image FILE --text TEXT` for a vision-language checkpoint. */
export async function imageScoreInput(ckpt: OpenedCheckpoint, file: string, text: string): Promise<{ ids: number[]; images: ScoreImages }> {
  // loadImageProcessor refuses a checkpoint without a usable vision_config, naming why.
  const processor = await loadImageProcessor(ckpt, '--image');
  const vision = ckpt.config.vision!;
  const png = decodePng(new Uint8Array(await readFile(file)), file);
  const { pixelValues, gridThw: grid } = processImage(png.rgb, png.width, png.height, processor);
  const tokenizer = await loadCheckpointTokenizer(ckpt, ckpt.location);
  const { ids, offsets, positions } = imagePrompt(tokenizer, text, grid, vision);
  return { ids, images: { pixelValues, grids: [grid], offsets, positions } };
}
