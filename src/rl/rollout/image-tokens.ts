// Images in a rollout's token stream. The chat template renders one placeholder token per image
// (Qwen3.5: `<|vision_start|><|image_pad|><|vision_end|>`); the model's processor decides how many
// placeholder tokens the image really takes (its merged patch count) — an `ImageTokenizer` the vision
// side provides. The rollout expands each placeholder to that count and records where every image
// sits in prompt + completion (`PlacedImage`): the engine embeds the image's vision features at those
// positions. They lie in a tool suffix, so their tool_mask is 0: placed image tokens are never trained.
// Everything downstream goes by these placements, not by the placeholder id: an <|image_pad|> the
// model samples is a sampled token (tool_mask 1), scored and trained as text.
//
// `max_context_images` keeps a long episode's context bounded: when a tool turn brings more images
// than the cap allows, the oldest in the context are replaced by a short text marker (the tool
// message itself keeps its image, for reward functions and the rollout viewer). That rewrites tokens
// already in the engine's sequence, so the next turn prefills the rewritten context on a fresh one.

import type { DecodeImage } from '../../engine/types.ts';
import type { RolloutImage } from './images.ts';

/** The vision side's expansion of one image into placeholder tokens. */
export interface ImageTokenizer {
  /** The placeholder the chat template emits once per image (`<|image_pad|>`). */
  padTokenId: number;
  /** How many placeholder tokens this image becomes (≥ 1). */
  tokensFor(image: RolloutImage): number;
  /**
   * The image as the engine's vision tower takes it (the processor's pixel_values and patch grid). With
   * it, every turn hands the engine the images its appended tokens hold, so sampling sees them.
   */
  engineImage?(image: RolloutImage): { pixelValues: Float32Array; grid: [number, number, number] };
}

/** The engine images of the placed images at or past `from` (offsets made relative to `from`). */
export function appendedImages(images: readonly PlacedImage[], from: number, tokenizer: ImageTokenizer | null | undefined): DecodeImage[] | undefined {
  const toEngine = tokenizer?.engineImage?.bind(tokenizer);
  if (!toEngine) return undefined;
  const out = images.filter((im) => im.offset >= from).map((im) => ({ offset: im.offset - from, ...toEngine(im.image) }));
  return out.length > 0 ? out : undefined;
}

/** An image in a rollout's sequence (prompt ids, then completion ids). */
export interface PlacedImage {
  image: RolloutImage;
  /** Position of its first placeholder token in prompt + completion. */
  offset: number;
  /** Placeholder tokens it fills. */
  length: number;
}

/** Text that stands in for an image dropped from the context by `max_context_images`. */
export const DROPPED_IMAGE_TEXT = '(earlier screenshot dropped)';

/**
 * Expands the placeholders of `ids` — one per image of `images`, in order — to each image's token
 * count. Placements are relative to the start of `ids`. A template that renders no placeholders (a
 * text-only model's) leaves the images out of the context: nothing is placed.
 */
export function expandImagePlaceholders(ids: readonly number[], images: readonly RolloutImage[], tokenizer: ImageTokenizer): { ids: number[]; placed: PlacedImage[] } {
  const pads = ids.reduce((n, id) => n + (id === tokenizer.padTokenId ? 1 : 0), 0);
  if (pads === 0) return { ids: [...ids], placed: [] };
  if (pads !== images.length) throw new Error(`the chat template rendered ${pads} image placeholders for ${images.length} images`);
  const out: number[] = [];
  const placed: PlacedImage[] = [];
  for (const id of ids) {
    if (id !== tokenizer.padTokenId) {
      out.push(id);
      continue;
    }
    const image = images[placed.length]!;
    const length = tokenizer.tokensFor(image);
    if (!(Number.isInteger(length) && length >= 1)) throw new Error(`an image of ${image.width}×${image.height} was given ${length} placeholder tokens (need an integer ≥ 1)`);
    placed.push({ image, offset: out.length, length });
    for (let i = 0; i < length; i++) out.push(id);
  }
  return { ids: out, placed };
}

/** The token span an image's drop replaces: its placeholders, with the vision start/end markers around them when present. */
function droppedSpan(at: (i: number) => number | undefined, image: PlacedImage, startId: number | undefined, endId: number | undefined): [number, number] {
  const from = startId !== undefined && at(image.offset - 1) === startId ? image.offset - 1 : image.offset;
  const after = image.offset + image.length;
  const to = endId !== undefined && at(after) === endId ? after + 1 : after;
  return [from, to];
}

/** A completion's per-token arrays (rollout.completionIds and its masks and log-probs). */
export interface CompletionTokens {
  ids: number[];
  toolMask: number[];
  stubbornMask: number[];
  logprobs: number[];
}

export interface ImageCapInput {
  promptLength: number;
  completion: CompletionTokens;
  /** The tool suffix about to be appended, placeholders expanded. */
  suffix: number[];
  /** Images in the context after the suffix (absolute offsets, in order): those already placed, then the suffix's. */
  images: PlacedImage[];
  cap: number;
  /** Token ids of DROPPED_IMAGE_TEXT. */
  marker: number[];
  startId?: number;
  endId?: number;
}

export interface ImageCapResult {
  completion: CompletionTokens;
  suffix: number[];
  /** The images still in the context, offsets moved. */
  images: PlacedImage[];
  /** Tokens the completion shrank by before its end (sampled turns after a drop move by this much). */
  completionShift: number;
}

/**
 * Replaces the oldest images beyond `cap` by the marker text (mask 0, log-prob 0), in the completion or
 * in the suffix; null when the context holds no more than `cap` images. Images in the prompt are never
 * dropped (the reset observation is the dataset's), though they count toward the cap.
 */
export function dropOldestImages(input: ImageCapInput): ImageCapResult | null {
  const { promptLength: P, completion, suffix, images, cap, marker } = input;
  const excess = images.length - cap;
  if (excess <= 0) return null;
  const drop = new Set(images.slice(0, excess).filter((im) => im.offset >= P));
  if (drop.size === 0) return null;
  const C = completion.ids.length;
  // The tail after the prompt: completion, then suffix (a suffix token is never trained).
  const ids = [...completion.ids, ...suffix];
  const toolMask = [...completion.toolMask, ...suffix.map(() => 0)];
  const stubbornMask = [...completion.stubbornMask, ...suffix.map(() => 0)];
  const logprobs = [...completion.logprobs, ...suffix.map(() => 0)];
  const at = (i: number): number | undefined => (i < P ? undefined : ids[i - P]);
  const spans = images.filter((im) => drop.has(im)).map((im) => droppedSpan(at, im, input.startId, input.endId));
  let completionShift = 0;
  // Last span first: the earlier spans' positions stay valid while the later ones are replaced.
  for (const [from, to] of [...spans].reverse()) {
    const zeros = marker.map(() => 0);
    ids.splice(from - P, to - from, ...marker);
    toolMask.splice(from - P, to - from, ...zeros);
    stubbornMask.splice(from - P, to - from, ...zeros);
    logprobs.splice(from - P, to - from, ...zeros);
    if (to <= P + C) completionShift += to - from - marker.length;
  }
  const kept = images.filter((im) => !drop.has(im)).map((im) => {
    const before = spans.filter(([, to]) => to <= im.offset).reduce((n, [from, to]) => n + (to - from - marker.length), 0);
    return { ...im, offset: im.offset - before };
  });
  const cut = C - completionShift;
  return {
    completion: { ids: ids.slice(0, cut), toolMask: toolMask.slice(0, cut), stubbornMask: stubbornMask.slice(0, cut), logprobs: logprobs.slice(0, cut) },
    suffix: ids.slice(cut),
    images: kept,
    completionShift,
  };
}
