// The image placeholders of a tokenized prompt and its M-RoPE positions, as transformers' Qwen3VLProcessor
// and Qwen3_5Model.get_rope_index make them: each <|image_pad|> the chat template wrote becomes
// t·h·w / merge² copies, and positions run 3-D (temporal, height, width) over the image tokens.

export interface PromptImage {
  gridThw: [number, number, number];
}

/**
 * Expands every `imageTokenId` of `ids` (one per image, in order) to its image's token count, and
 * returns the ids with mm_token_type_ids (1 on image tokens, 0 elsewhere) and where each image's
 * tokens start in them (the engine places images by these offsets, not by id).
 */
export function expandImageTokens(ids: readonly number[], images: readonly PromptImage[], imageTokenId: number, mergeSize: number): { ids: number[]; mmTokenTypeIds: number[]; offsets: number[] } {
  const out: number[] = [];
  const types: number[] = [];
  const offsets: number[] = [];
  let k = 0;
  for (const id of ids) {
    if (id !== imageTokenId) {
      out.push(id);
      types.push(0);
      continue;
    }
    const img = images[k++];
    if (!img) throw new Error(`the prompt has more image placeholders than the ${images.length} image(s) given`);
    const [t, h, w] = img.gridThw;
    if (h % mergeSize !== 0 || w % mergeSize !== 0) throw new Error(`image grid ${h}×${w} is not a multiple of merge size ${mergeSize}`);
    const n = (t * h * w) / (mergeSize * mergeSize);
    offsets.push(out.length);
    for (let i = 0; i < n; i++) {
      out.push(imageTokenId);
      types.push(1);
    }
  }
  if (k !== images.length) throw new Error(`the prompt has ${k} image placeholder(s) but ${images.length} image(s) were given`);
  return { ids: out, mmTokenTypeIds: types, offsets };
}

/**
 * get_rope_index for one sequence: text tokens advance all three positions together; an image's run
 * of tokens takes (start + t, start + row, start + column) over its merged grid, and the text after it
 * resumes at start + max(h, w) / merge. Returns [temporal, height, width] rows and the rope delta
 * (max position + 1 − length, which decode steps add to their index).
 */
export function mropePositionIds(mmTokenTypeIds: readonly number[], images: readonly PromptImage[], mergeSize: number): { positions: [number[], number[], number[]]; ropeDelta: number } {
  const pos: [number[], number[], number[]] = [[], [], []];
  let current = 0;
  let k = 0;
  let i = 0;
  const T = mmTokenTypeIds.length;
  while (i < T) {
    if (mmTokenTypeIds[i] === 0) {
      for (const row of pos) row.push(current);
      current++;
      i++;
      continue;
    }
    if (mmTokenTypeIds[i] !== 1) throw new Error(`mm_token_type_ids[${i}] = ${mmTokenTypeIds[i]}: only text (0) and image (1) tokens are supported`);
    const img = images[k++];
    if (!img) throw new Error('more image token runs than images');
    const [t, h, w] = img.gridThw;
    const gh = h / mergeSize;
    const gw = w / mergeSize;
    const n = t * gh * gw;
    for (let j = 0; j < n; j++) {
      if (mmTokenTypeIds[i + j] !== 1) throw new Error(`image ${k - 1} needs ${n} consecutive image tokens from position ${i}`);
      pos[0].push(current + Math.floor(j / (gh * gw)));
      pos[1].push(current + (Math.floor(j / gw) % gh));
      pos[2].push(current + (j % gw));
    }
    i += n;
    current += Math.floor(Math.max(h, w) / mergeSize);
  }
  const max = Math.max(...pos[0], ...pos[1], ...pos[2]);
  return { positions: pos, ropeDelta: max + 1 - T };
}
