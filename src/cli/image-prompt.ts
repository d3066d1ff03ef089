// `score --image --text`'s prompt: one user message (the image, then the text) rendered by the model's
// chat template, its <|image_pad|> expanded to the image's t·h·w/merge² tokens as Qwen3VLProcessor
// does (in id space: the pad is an added token, so expanding the text or the ids gives the same ids),
// and the M-RoPE position ids of transformers' get_rope_index.

import { renderChat, type ChatMessage } from '../model/chat-template.ts';
import type { TextTokenizer } from '../model/tokenizer.ts';
import { mropePositionIds, type GridThw } from '../engine/vision/inputs.ts';

export interface ImagePrompt {
  ids: number[];
  positions: [number[], number[], number[]];
}

export function imagePrompt(tokenizer: TextTokenizer, text: string, grid: GridThw, cfg: { imageTokenId: number; spatialMergeSize: number }): ImagePrompt {
  const template = tokenizer.chatTemplate;
  if (!template) throw new Error('--image needs the model\'s chat template (chat_template.jinja or tokenizer_config.json chat_template)');
  // transformers' multimodal message form: a list of content blocks.
  const message = { role: 'user', content: [{ type: 'image' }, { type: 'text', text }] } as unknown as ChatMessage;
  const rendered = tokenizer.encode(renderChat(template, [message], { addGenerationPrompt: true }));
  const pads = rendered.filter((t) => t === cfg.imageTokenId).length;
  if (pads !== 1) throw new Error(`the chat template rendered ${pads} image tokens (id ${cfg.imageTokenId}) for one image; expected exactly 1`);
  const n = (grid[0] * grid[1] * grid[2]) / cfg.spatialMergeSize ** 2;
  const ids = rendered.flatMap((t) => (t === cfg.imageTokenId ? new Array<number>(n).fill(t) : [t]));
  return { ids, positions: mropePositionIds(ids, [grid], cfg).positions };
}
